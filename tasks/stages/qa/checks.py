"""Checks every rendered question must pass before it may reach a reviewer.

Each rule returns a snake_case reason code used verbatim in the reject row, so reject counts
per rule show which template or which analysis field produces bad questions.
"""

from __future__ import annotations

from dataclasses import dataclass

from tasks.stages.qa.text import normalize_option, option_key


@dataclass(frozen=True)
class LengthRule:
    """The correct option may not be the unique longest by a wide margin (both limits exceeded)."""

    ratio: float = 1.5  # longer than ratio x the longest distractor ...
    min_gap: int = 15  # ... and at least this many characters longer


def check_options(options: list[str], correct: int, rule: LengthRule) -> list[tuple[str, str]]:
    """Problems of an MC option list (before shuffling): empty, duplicated, or give-away length."""
    bad: list[tuple[str, str]] = []
    keys = [normalize_option(o) for o in options]
    for i, k in enumerate(keys):
        if not k:
            bad.append(("mc_empty_option", f"option {i + 1} of {len(options)} is empty"))
    seen: dict[str, int] = {}
    for i, k in enumerate(keys):
        if k and k in seen:
            bad.append(("mc_duplicate_options", f"options {seen[k] + 1} and {i + 1} are the same: {options[i]!r}"))
        seen.setdefault(k, i)
    near: dict[str, int] = {}
    for i, o in enumerate(options):
        k = option_key(o)
        if k and k in near and keys[i] != keys[near[k]]:
            bad.append(
                (
                    "mc_near_duplicate_options",
                    f"options {near[k] + 1} and {i + 1} say the same: {options[near[k]]!r} / {options[i]!r}",
                )
            )
        near.setdefault(k, i)
    if len(options) > 1:
        right = len(options[correct])
        longest_other = max(len(o) for i, o in enumerate(options) if i != correct)
        if right > longest_other and right >= rule.ratio * longest_other and right - longest_other >= rule.min_gap:
            bad.append(
                (
                    "mc_correct_option_longest",
                    f"correct option has {right} characters, the longest distractor {longest_other} "
                    f"(limit {rule.ratio}x and {rule.min_gap} characters)",
                )
            )
    return bad
