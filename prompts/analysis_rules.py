"""What the ``rules`` backend's analysis answers share: seeded draws and word forms.

The answers themselves live with their tasks, each named by its spec's ``analysis_rules`` hook
(the built-ins': ``tasks/builtin_tasks/<id>/prompts.py``), which ``prompts.rules.rules_table``
reads. Offline answers from annotations are deterministic, picked by hashing the edit so runs
repeat; the word lists they draw from are ``prompts/vocabulary.py``.
"""

from __future__ import annotations

from prompts.vocabulary import COLOURS, MATERIALS
from storage.hashing import sha256_hex


def norm_text(text: str) -> str:
    return " ".join(str(text).casefold().split()).strip(" .,;:!?\"'")


def pick_options(
    options: tuple[str, ...] | list[str], key: str, n: int = 1, exclude: set[str] = frozenset()
) -> list[str]:
    pool = [o for o in options if norm_text(o) not in {norm_text(e) for e in exclude}]
    pool.sort(key=lambda o: sha256_hex(f"{key}\x1f{o}"))
    return pool[:n]


def a_or_an(name: str) -> str:
    return ("an " if name[:1].lower() in "aeiou" else "a ") + name


def same_word(a: str, b: str) -> bool:
    def n(s: str) -> str:
        s = norm_text(s)
        return s[:-1] if s.endswith("s") and len(s) > 3 else s

    return n(a) == n(b)


def attribute_slot(value: str | None) -> str | None:
    v = norm_text(value or "")
    if v in COLOURS:
        return "colour"
    if v in MATERIALS:
        return "material"
    return None
