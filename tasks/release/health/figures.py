"""All health figures of a run in one dict (what ``reactbench report health`` renders, the card
summarises and ``export --strict`` checks), and the one JSON line of its headline figures."""

from __future__ import annotations

import time
from typing import Any

from prompts.blind_prior import load_prior_stats
from storage.fs import RunFS
from tasks.engine.build_config import BuildConfig
from tasks.engine.config import HealthConfig
from tasks.engine.suggest import suggest
from tasks.release.health.balance import balance_figures
from tasks.release.health.blind import blind_figures
from tasks.release.health.duplicates import duplicate_figures
from tasks.release.health.gate import HealthRefused, health_problems
from tasks.release.health.questions import read_health_inputs
from tasks.release.health.table2 import table2_figures
from tasks.release.health.trivial import trivial_figures


def compute_health(run: RunFS, config: BuildConfig | None, unverified: bool | None = None) -> dict[str, Any]:
    """Every figure. ``config`` is the resolved run config (``flows.config.resolve_run_config``:
    its ``health`` thresholds); ``unverified`` None picks the review export when the run has one."""
    started = time.perf_counter()
    cfg = getattr(config, "health", None) or HealthConfig()
    qa = getattr(config, "qa", None)
    balanced = getattr(qa, "balance_yes_no", None)  # the balance lane's switch, when present
    inputs = read_health_inputs(run, unverified)
    try:
        blind: dict[str, Any] = blind_figures(inputs.questions, load_prior_stats(run))
    except FileNotFoundError as exc:  # a run without its mine stage (a copied review export)
        blind = {"unavailable": str(exc)}
    figures = {
        "source": inputs.label,
        "unverified": inputs.unverified,
        "questions": inputs.questions.num_rows,
        "balance_yes_no": balanced,
        "trivial": trivial_figures(inputs.questions),
        "blind_prior": blind,
        "balance": balance_figures(inputs.questions),
        "duplicates": duplicate_figures(run, inputs.questions, inputs.originals, cfg.image_hash_distance),
        "table2": table2_figures(inputs.questions, inputs.originals),
    }
    figures["thresholds"] = cfg.model_dump(mode="json")
    figures["problems"] = health_problems(figures, cfg)
    figures["seconds"] = round(time.perf_counter() - started, 3)
    return figures


def headline(figures: dict[str, Any]) -> dict[str, Any]:
    """The figures the JSON line carries: best trivial accuracy per task and type, the blind
    prior's targeted / control accuracy per task, yes-ratio, letter p, duplicate shares, Table 2 ratios."""
    blind = figures["blind_prior"]
    return {
        "source": "unverified" if figures["unverified"] else "verified",
        "questions": figures["questions"],
        "trivial": {
            f"{t}/{q}": {"best": v.get("best"), "accuracy": v.get("best_accuracy")}
            for t, types in figures["trivial"]["per_task_type"].items()
            for q, v in sorted(types.items())
        },
        "trivial_react_score": figures["trivial"]["react_score"].get("best_constant"),
        "blind_prior": {
            t: {"targeted": v.get("targeted"), "control": v.get("control")}
            for t, v in blind.get("per_task", {}).items()
        },
        "blind_prior_react_score": blind.get("react_score"),
        "not_probing_prior": blind.get("not_probing", {}).get("count"),
        "yes_ratio": figures["balance"]["yes_ratio"].get("all"),
        "letter_p": figures["balance"]["letter_p"],
        "duplicate_questions": figures["duplicates"]["duplicate_question_share"],
        "duplicate_images": figures["duplicates"]["duplicate_image_share"],
        "table2": {t: v["questions_ratio"] for t, v in figures["table2"]["tasks"].items()},
        "health_s": figures["seconds"],
    }


def health_biases_text(figures: dict[str, Any]) -> str:
    """A short plain-text summary of the known answer biases (for the Croissant ``rai:dataBiases``)."""
    parts = []
    worst = sorted(
        (
            (v.get("best_accuracy") or 0.0, f"{t}/{q}", v.get("best"))
            for t, types in figures["trivial"]["per_task_type"].items()
            for q, v in types.items()
        ),
        reverse=True,
    )
    if worst:
        parts.append(
            "Trivial answers: "
            + "; ".join(f"{name} scores {acc:.0%} on {key}" for acc, key, name in worst[:3])
            + f" (React-Score of the best constant answers: {figures['trivial']['react_score'].get('best_constant')})."
        )
    yr = figures["balance"]["yes_ratio"].get("all")
    if yr is not None:
        parts.append(f"Gold yes-ratio {yr:.0%} over all yes/no questions.")
    p = figures["balance"]["letter_p"]
    if p is not None:
        parts.append(f"Gold letters against uniform: chi-square p = {p:.3g}.")
    blind = figures["blind_prior"]
    if "per_task" in blind:
        acc = ", ".join(f"{t} {v.get('targeted', 0):.0%}" for t, v in blind["per_task"].items())
        parts.append(
            f"A blind model answering from the mined priors without the image scores on targeted items: {acc}; "
            f"{blind['not_probing']['count']} targeted questions it answers right do not probe the prior."
        )
    d = figures["duplicates"]
    parts.append(
        f"Duplicates: {d['duplicate_question_share']:.1%} of questions repeat another item's question and gold on the same image(s); "
        f"{d['duplicate_image_share']:.1%} of items have a near-duplicate source image (pHash distance <= {d['max_distance']})."
    )
    return " ".join(parts)


def health_card_lines(figures: dict[str, Any]) -> list[str]:
    """The dataset card's "Benchmark health" section (markdown lines)."""
    lines = [
        "## Benchmark health",
        "",
        health_biases_text(figures),
        "",
        "| task / type | best trivial answer | accuracy |",
        "|---|---|---|",
    ]
    for t, types in figures["trivial"]["per_task_type"].items():
        for q, v in sorted(types.items()):
            lines.append(f"| {t} / {q} | {v.get('best')} | {v.get('best_accuracy', 0):.1%} |")
    lines += ["", "`reactbench report health` writes the full report (baselines, balance, duplicates, Table 2).", ""]
    return lines


def release_health(run: RunFS, config: BuildConfig | None, unverified: bool, strict: bool) -> dict[str, Any]:
    """The figures of the questions a release ships; ``strict``: refuse (:class:`HealthRefused`,
    one line per figure over its ``health:`` threshold) instead of returning them with the problems."""
    figures = compute_health(run, config, unverified)
    if strict and figures["problems"]:
        lines = "\n".join(f"  {p}" for p in figures["problems"])
        raise HealthRefused(
            f"export --strict: the build is over {len(figures['problems'])} health: threshold(s); nothing was written "
            f"(`{suggest('report', 'health', '--run-dir', run.url)}` shows every figure):\n{lines}"
        )
    return figures
