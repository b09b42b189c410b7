"""``metrics.json``: every metric of one evaluated model, composed from the formula modules.

It sits above :mod:`tasks.release.metrics` (the formulas, shipped verbatim inside lmms-eval
releases), :mod:`tasks.release.evaluate.ablation` and :mod:`tasks.release.evaluate.completeness`, so none of
those imports another upward.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from storage.task_spec import all_tasks
from tasks.release.evaluate.ablation import control_ablation
from tasks.release.evaluate.completeness import completeness
from tasks.release.metrics import (
    MODES,
    TARGETED,
    Row,
    accuracy,
    beaf_summary,
    by_editor,
    collapse_cyclic,
    headline,
    is_targeted,
    scored,
)


class Metrics(TypedDict, total=False):
    """What ``metrics.json`` holds for one evaluated model: :func:`summarize`'s figures, then what
    :func:`tasks.release.evaluate.run.compute_metrics` and ``write_metrics`` add (the model, the
    questions' source, judges, sub-causes, spans, labels). Files written by older versions may
    lack keys, so readers use ``.get`` for the later ones."""

    n_answers: int
    n_main_questions_scored: int
    unparseable: int
    errors: int
    extraction: dict[str, int]
    headline_variant: str
    react: dict[str, Any]
    complete: bool
    completeness: dict[str, Any]
    accuracy: dict[str, list[dict[str, Any]]]
    mc_cyclic: dict[str, list[dict[str, Any]]]
    hallu_rate: dict[str, list[dict[str, Any]]]
    by_editor: list[dict[str, Any]]
    ablation: list[dict[str, Any]]
    beaf: dict[str, dict[str, Any]]
    model: dict[str, str]
    questions_source: str
    unverified: bool
    judges: dict[str, int]
    subcauses: dict[str, Any]
    subcauses_by_editor: list[dict[str, Any]]
    spans: dict[str, Any]
    oracle: bool
    blind: bool
    label: str | None


def benchmark_weights(rows: Sequence[Row]) -> dict[str, float]:
    """React-Score weights (``TaskSpec.weight``) of the tasks the evaluated items belong to, in
    benchmark order: every answer row counts (errors, controls, BEAF too), so a task whose main
    questions were all lost stays listed as missing. Tasks that are not registered get none."""
    specs = all_tasks()
    present = {str(r.get("task")) for r in rows}
    return {t: spec.weight for t, spec in specs.items() if t in present}


def summarize(rows: Sequence[Row], weights: Mapping[str, float] | None = None) -> Metrics:
    """Every metric of one evaluated model, as a JSON-ready dict (what ``metrics.json`` holds).

    The headline (React-Score, HalluRate, accuracies) uses the targeted items of every editor;
    ``by_editor`` gives the same per (editor, variant); ``ablation`` compares targeted and
    control items per task (:mod:`tasks.release.evaluate.ablation`); ``completeness`` counts the
    questions each item has (:mod:`tasks.release.evaluate.completeness`). React-Score weighs
    the tasks by ``weights`` (default :func:`benchmark_weights`).
    """
    all_rows = list(rows)
    if weights is None:
        weights = benchmark_weights(all_rows)
    rows = scored(all_rows)
    targeted = [r for r in rows if is_targeted(r)]
    main = collapse_cyclic(r for r in targeted if (r.get("question_set") or "main") == "main")
    control_questions = [r for r in targeted if r.get("question_set") == "control"]
    head = headline(targeted, weights)
    comp = completeness(all_rows)
    out: Metrics = {
        "n_answers": len(all_rows),
        "n_main_questions_scored": head["n_main_questions_scored"],
        "unparseable": sum(1 for r in rows if r.get("status") == "unparseable"),
        "errors": sum(1 for r in all_rows if r.get("status") == "error"),
        # who read each YN / MC answer: the rules, the judge (eval.extract_with_judge), or nobody
        "extraction": {
            "rules": sum(1 for r in all_rows if r.get("qtype") in ("YN", "MC") and r.get("parsed_by") == "rules"),
            "judge": sum(1 for r in all_rows if r.get("qtype") in ("YN", "MC") and r.get("parsed_by") == "judge"),
            "unread": sum(1 for r in all_rows if r.get("qtype") in ("YN", "MC") and r.get("status") == "unparseable"),
        },
        "headline_variant": TARGETED,
        "react": head["react"],
        "complete": bool(head["react"]["complete"] and comp["complete"]),
        "completeness": comp,
        "accuracy": {
            "overall": accuracy(main, ["mode"]),
            "task": accuracy(main, ["task", "mode"]),
            "type": accuracy(main, ["task", "qtype", "mode"]),
            "dimension": accuracy(main, ["task", "dimension", "mode"]),
            "qid": accuracy(main, ["task", "qid", "mode"]),
            "editor": accuracy(main, ["editor", "task", "mode"]),
            "variant": accuracy(
                collapse_cyclic(r for r in rows if (r.get("question_set") or "main") == "main"),
                ["variant", "task", "mode"],
            ),
            "control": accuracy(control_questions, ["task", "mode"]),
        },
        "mc_cyclic": head["mc_cyclic"],
        "hallu_rate": head["hallu_rate"],
        "by_editor": by_editor(rows, weights),
        "ablation": control_ablation(rows),
    }
    beaf_rows = [r for r in targeted if r.get("question_set") == "beaf"]
    out["beaf"] = {
        m: beaf_summary([r for r in beaf_rows if r.get("mode") == m])
        for m in MODES
        if any(r.get("mode") == m for r in beaf_rows)
    }
    return out
