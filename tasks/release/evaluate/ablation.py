"""The cause-isolation ablation the ReactBench reviewers asked for (papers/reactbench-review.txt):
the same kind of edit applied to a *control* object (no prior at stake) beside the targeted one.

Per editor (and over all editors) and task: accuracy on targeted items minus accuracy on
control items, main question set, both modes pooled, cyclic MC at its averaged accuracy, with
a 95% percentile bootstrap interval that resamples *items* (an item's questions are not
independent), targeted and control independently. Deterministic: the generator is seeded from
the editor and task names.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from storage.task_spec import task_order
from tasks.release.metrics import CONTROL, TARGETED, collapse_cyclic, credit

BOOTSTRAP = 2000
ALL_EDITORS = "(all)"


def item_credits(rows: Sequence[Mapping[str, Any]]) -> dict[str, tuple[float, int]]:
    """Per item: (sum of question credits, questions) over the main set, modes pooled."""
    acc: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    for r in collapse_cyclic(r for r in rows if (r.get("question_set") or "main") == "main"):
        a = acc[str(r.get("edit_id"))]
        a[0] += credit(r)
        a[1] += 1
    return {k: (v[0], int(v[1])) for k, v in sorted(acc.items())}


def bootstrap_difference(
    targeted: list[tuple[float, int]], control: list[tuple[float, int]], seed: int, n_boot: int = BOOTSTRAP
) -> tuple[float, float]:
    """95% percentile interval of accuracy(targeted) - accuracy(control), in points, resampling items."""
    lo, hi = np.percentile(bootstrap_samples(targeted, control, seed, n_boot), [2.5, 97.5])
    return float(lo), float(hi)


def bootstrap_samples(
    targeted: list[tuple[float, int]], control: list[tuple[float, int]], seed: int, n_boot: int = BOOTSTRAP
) -> np.ndarray:
    """The ``n_boot`` resampled differences accuracy(targeted) - accuracy(control), in points, items
    (credit sum, questions) resampled with replacement; what a caller comparing two editors needs."""
    rng = np.random.default_rng(seed)

    def resample(items: list[tuple[float, int]]) -> np.ndarray:
        c = np.array([i[0] for i in items], dtype=float)
        n = np.array([i[1] for i in items], dtype=float)
        idx = rng.integers(0, len(items), size=(n_boot, len(items)))
        return 100.0 * c[idx].sum(axis=1) / n[idx].sum(axis=1)

    return resample(targeted) - resample(control)


def seed_of(*parts: str) -> int:
    """A bootstrap seed from names (the same figures on every run)."""
    return int.from_bytes(hashlib.sha256("\x1f".join(parts).encode()).digest()[:8], "big")


def control_ablation(rows: Sequence[Mapping[str, Any]], n_boot: int = BOOTSTRAP) -> list[dict[str, Any]]:
    """One entry per (editor, task) that has targeted or control items: both accuracies, their
    difference and its interval (null when one side has no items)."""
    editors = sorted({str(r.get("editor") or "") for r in rows})
    out = []
    for editor in [ALL_EDITORS, *editors] if len(editors) > 1 else editors:
        mine = [r for r in rows if editor == ALL_EDITORS or str(r.get("editor") or "") == editor]
        for task in sorted({str(r.get("task")) for r in mine}, key=task_order):
            of_task = [r for r in mine if r.get("task") == task]
            t_items = list(item_credits([r for r in of_task if (r.get("variant") or TARGETED) != CONTROL]).values())
            c_items = list(item_credits([r for r in of_task if r.get("variant") == CONTROL]).values())
            if not c_items:
                continue
            t_acc = 100.0 * sum(c for c, _ in t_items) / sum(n for _, n in t_items) if t_items else None
            c_acc = 100.0 * sum(c for c, _ in c_items) / sum(n for _, n in c_items)
            entry: dict[str, Any] = {
                "editor": editor,
                "task": task,
                "targeted_items": len(t_items),
                "control_items": len(c_items),
                "targeted_accuracy": None if t_acc is None else round(t_acc, 4),
                "control_accuracy": round(c_acc, 4),
                "difference": None,
                "ci95": None,
            }
            if t_acc is not None:
                lo, hi = bootstrap_difference(t_items, c_items, seed_of(editor, task), n_boot)
                entry["difference"] = round(t_acc - c_acc, 4)
                entry["ci95"] = [round(lo, 4), round(hi, 4)]
            out.append(entry)
    return out
