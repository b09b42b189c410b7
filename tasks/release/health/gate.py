"""The ``health:`` thresholds: the figures over them, one line each (``export --strict`` refuses
the release on any; a plain export warns)."""

from __future__ import annotations

from typing import Any

from tasks.engine.config import HealthConfig


class HealthRefused(ValueError):
    """``export --strict`` on a build over a ``health:`` threshold: every figure named, nothing written."""


def health_problems(figures: dict[str, Any], cfg: HealthConfig | None) -> list[str]:
    """One line per figure over its threshold, naming the figure, its value and the config key."""
    cfg = cfg or HealthConfig()
    out = []
    for task, types in figures["trivial"]["per_task_type"].items():
        for qtype, v in sorted(types.items()):
            key = f"{task}/{qtype}"
            limit = cfg.max_trivial_accuracy_by.get(key, cfg.max_trivial_accuracy)
            where = (
                f"health.max_trivial_accuracy_by[{key}]"
                if key in cfg.max_trivial_accuracy_by
                else "health.max_trivial_accuracy"
            )
            acc = v.get("best_accuracy")
            if acc is not None and acc > limit:
                out.append(
                    f"trivial {key}: {v['best']} scores {acc:.4f} of {v['n']} questions, over {where} {limit:g}"
                )
    for task, v in figures["blind_prior"].get("per_task", {}).items():
        acc = v.get("targeted")
        if acc is not None and acc > cfg.max_blind_prior_targeted:
            out.append(
                f"blind_prior {task}: {acc:.4f} of {v['n_targeted']} targeted questions answered without the image, "
                f"over health.max_blind_prior_targeted {cfg.max_blind_prior_targeted:g}"
            )
    d = figures["duplicates"]
    for name, label in (
        ("duplicate_question_share", "duplicate questions"),
        ("duplicate_image_share", "items with a near-duplicate source image"),
    ):
        if d[name] > cfg.max_duplicate_share:
            out.append(f"{name}: {d[name]:.4f} ({label}), over health.max_duplicate_share {cfg.max_duplicate_share:g}")
    return out
