"""``reactbench report eval``: React-Score radar, per-type / per-dimension bars, BEAF,
HalluRate, sub-cause distributions and span types for every evaluated model of a run."""

from __future__ import annotations

import json

from storage import addresses
from storage.fs import RunFS
from storage.task_spec import all_tasks, task_order
from tasks.engine.suggest import suggest
from tasks.release.evaluate.labels import metrics_label
from tasks.release.evaluate.run import list_evaluations
from tasks.release.evaluate.summary import Metrics
from tasks.release.report.html import figure, page, table
from tasks.release.report.svg import hbars, radar, stacked

MODE_SHORT = {"standard": "std", "cot": "CoT"}


class NoEvaluations(RuntimeError):
    """The run has no ``eval/<model>/metrics.json`` to report on."""


def load_metrics(run: RunFS, folders: list[str] | None = None) -> list[tuple[str, Metrics]]:
    folders = folders or list_evaluations(run)
    if not folders:
        raise NoEvaluations(
            f"{run.path(addresses.EVAL_DIR)}: no evaluation found; run `{suggest('eval', '--run-dir', run.url, '--model', 'BACKEND:MODEL')}` first"
        )
    out = []
    for f in folders:
        f = f if f.startswith(addresses.evaluation("")) else addresses.evaluation(f)
        if not run.exists(f, "metrics.json"):
            raise NoEvaluations(
                f"{run.path(f, 'metrics.json')}: not found; known evaluations: {list_evaluations(run)}"
            )
        out.append((f.split("/", 1)[1], json.loads(run.read_text(f, "metrics.json"))))
    return out


def short(task: str) -> str:
    """A task's short name (``TaskSpec.short``; the id itself for a task not registered here)."""
    spec = all_tasks().get(task)
    return spec.short if spec else task


def report_tasks(models: list[tuple[str, Metrics]]) -> list[str]:
    """The tasks the evaluations score or miss, in benchmark order."""
    found = set()
    for _, m in models:
        react = m["react"]
        found |= set(react.get("per_task") or {}) | {x for x in react.get("missing") or [] if "/" not in x}
    return sorted(found, key=task_order)


def _model_name(m: Metrics) -> str:
    label = metrics_label(m)
    return (
        f"{m['model']['backend']}:{m['model']['model']}"
        + (" (unverified)" if m.get("unverified") else "")
        + (f" [{label}]" if label else "")
    )


def blind_section(models: list[tuple[str, Metrics]]) -> str | None:
    """Each ``--blind`` run beside the same model's run with images, per task (the MMStar check:
    what a model scores without looking); None when no blind run is shown."""
    sighted = {
        (m["model"]["backend"], m["model"]["model"], bool(m.get("unverified"))): m
        for _, m in models
        if not m.get("blind")
    }
    rows = []
    for _, b in models:
        if not b.get("blind"):
            continue
        s = sighted.get((b["model"]["backend"], b["model"]["model"], bool(b.get("unverified"))))
        for task in [*report_tasks([("", b)]), "React-Score"]:
            bv = b["react"]["react_score"] if task == "React-Score" else b["react"]["per_task"].get(task)
            sv = (
                None
                if s is None
                else (s["react"]["react_score"] if task == "React-Score" else s["react"]["per_task"].get(task))
            )
            gap = None if bv is None or sv is None else round(sv - bv, 4)
            rows.append(
                [
                    f"{b['model']['backend']}:{b['model']['model']}",
                    short(task) if task != "React-Score" else task,
                    sv,
                    bv,
                    gap,
                ]
            )
    if not rows:
        return None
    note = (
        '<p class="muted">Blind: the same questions asked with the images withheld (<code>reactbench eval --blind</code>). '
        "A task the model scores well on blind is answerable from the text alone; the gap is what looking adds.</p>"
    )
    return note + table(["model", "task", "with images", "blind", "with images - blind (points)"], rows)


def summary_section(models: list[tuple[str, Metrics]]) -> str:
    tasks = report_tasks(models)
    axes = [short(t) for t in tasks] + ["React-Score"]
    series, rows = [], []
    for _, m in models:
        per_task = m["react"]["per_task"]
        vals = [per_task.get(t) for t in tasks] + [m["react"]["react_score"]]
        series.append((_model_name(m), vals))
        comp = m.get("completeness") or {}
        complete = (
            "yes"
            if m["react"]["complete"]
            else "no (weights renormalised; missing " + ", ".join(m["react"].get("missing") or []) + ")"
        )
        items = f"{comp.get('complete_items')} of {comp.get('items')}" if comp else "n/a"
        rows.append([_model_name(m), m["questions_source"], *vals, complete, items])
    chart = figure(radar(axes, series, "React-Score and task scores (targeted items)"))
    tab = table(["model", "questions", *axes, "all tasks, modes and types", "items with every question"], rows)
    return f'<div class="charts">{chart}</div>{tab}'


def model_section(m: Metrics) -> str:
    """One model's section of the report: each block below, in order, those its metrics hold."""
    parts: list[str] = []
    for block in MODEL_BLOCKS:
        parts += block(m)
    parts.append(
        f'<p class="muted">answers: {m["n_answers"]}, unparseable: {m["unparseable"]}, transport errors (excluded): {m["errors"]}; SA judges: {escape_json(m.get("judges"))}</p>'
    )
    return "\n".join(parts)


def _score_parts(m: Metrics) -> list[str]:
    """Task scores per mode, and accuracy per question type and per dimension."""
    parts: list[str] = []
    acc = m["accuracy"]
    per_mode = m["react"]["per_mode"]
    parts.append("<h3>Task scores S<sub>t</sub><sup>m</sup> per mode</h3>")
    parts.append(
        table(
            ["task", "standard", "CoT", "S_t"],
            [[t, per_mode[t].get("standard"), per_mode[t].get("cot"), m["react"]["per_task"][t]] for t in per_mode],
        )
    )
    type_items = [
        (f"{short(a['task'])} {a['qtype']} ({MODE_SHORT.get(a['mode'], a['mode'])})", a["accuracy"])
        for a in acc["type"]
    ]
    dim_items = [
        (f"{short(a['task'])} {a['dimension']} ({MODE_SHORT.get(a['mode'], a['mode'])})", a["accuracy"])
        for a in acc["dimension"]
    ]
    parts.append(
        '<div class="charts">'
        + figure(hbars(type_items, "Accuracy per question type"))
        + figure(hbars(dim_items, "Accuracy per dimension"))
        + "</div>"
    )
    return parts


def _qid_parts(m: Metrics) -> list[str]:
    """Accuracy per question (template id), standard and CoT."""
    parts: list[str] = []
    acc = m["accuracy"]
    qid_rows: dict[tuple[str, str], dict[str, float | None]] = {}
    for a in acc["qid"]:
        qid_rows.setdefault((a["task"], a["qid"]), {})[a["mode"]] = a["accuracy"]
    parts.append("<h3>Accuracy per question</h3>")
    parts.append(
        table(
            ["task", "qid", "standard", "CoT"],
            [
                [t, q, v.get("standard"), v.get("cot")]
                for (t, q), v in sorted(qid_rows.items(), key=lambda kv: (kv[0][0], _qnum(kv[0][1])))
            ],
        )
    )
    return parts


def _mc_cyclic_parts(m: Metrics) -> list[str]:
    """FREAK-style averaged and consistency accuracy over MC presentations."""
    parts: list[str] = []
    if m.get("mc_cyclic", {}).get("task"):
        parts.append("<h3>Multiple choice over presentations (FREAK: averaged and consistency accuracy)</h3>")
        parts.append(
            table(
                ["task", "mode", "questions", "presentations", "averaged accuracy %", "consistency accuracy %"],
                [
                    [
                        c["task"],
                        c["mode"],
                        c["n"],
                        c["presentations"],
                        c["averaged_accuracy"],
                        c["consistency_accuracy"],
                    ]
                    for c in m["mc_cyclic"]["task"]
                ],
            )
        )
    return parts


def _hallu_parts(m: Metrics) -> list[str]:
    """HalluRate: answers falling back on the prior."""
    parts: list[str] = []
    if m["hallu_rate"]["task"]:
        parts.append("<h3>HalluRate (answers falling back on the erased object / original attribute)</h3>")
        parts.append(
            table(
                ["task", "mode", "questions with a prior (denominator)", "fallbacks", "HalluRate %"],
                [[h["task"], h["mode"], h["n"], h["fallbacks"], h["hallu_rate"]] for h in m["hallu_rate"]["task"]],
            )
        )
    return parts


def _ablation_parts(m: Metrics) -> list[str]:
    """Cause isolation: targeted minus control items per editor and task."""
    parts: list[str] = []
    if m.get("ablation"):
        parts.append("<h3>Cause isolation: targeted minus control items (95% bootstrap interval over items)</h3>")
        parts.append(
            table(
                [
                    "editor",
                    "task",
                    "targeted items",
                    "control items",
                    "targeted %",
                    "control %",
                    "difference (points)",
                    "95% interval",
                ],
                [
                    [
                        a["editor"],
                        a["task"],
                        a["targeted_items"],
                        a["control_items"],
                        a["targeted_accuracy"],
                        a["control_accuracy"],
                        a["difference"],
                        "n/a" if a["ci95"] is None else f"[{a['ci95'][0]}, {a['ci95'][1]}]",
                    ]
                    for a in m["ablation"]
                ],
            )
        )
    return parts


def _editor_parts(m: Metrics) -> list[str]:
    """Task scores and React-Score per editor and variant."""
    parts: list[str] = []
    if m.get("by_editor"):
        tasks = report_tasks([("", m)])
        parts.append("<h3>Per editor and variant</h3>")
        parts.append(
            table(
                ["editor", "variant", *[short(t) for t in tasks], "React-Score", "complete"],
                [
                    [
                        e["editor"],
                        e["variant"],
                        *[e["react"]["per_task"].get(t) for t in tasks],
                        e["react"]["react_score"],
                        "yes" if e["react"]["complete"] else "no",
                    ]
                    for e in m["by_editor"]
                ],
            )
        )
    return parts


def _incomplete_parts(m: Metrics) -> list[str]:
    """The items missing some of their questions (first 200)."""
    parts: list[str] = []
    incomplete = (m.get("completeness") or {}).get("incomplete") or []
    if incomplete:
        parts.append(f"<h3>Incomplete items ({len({i['edit_id'] for i in incomplete})})</h3>")
        parts.append(
            table(
                ["item", "task", "editor", "mode", "questions", "expected", "missing"],
                [
                    [
                        i["edit_id"],
                        i["task"],
                        i["editor"],
                        i["mode"],
                        i["questions"],
                        i["expected"],
                        ", ".join(i["missing"]),
                    ]
                    for i in incomplete[:200]
                ],
            )
        )
    return parts


def _control_parts(m: Metrics) -> list[str]:
    """Accuracy on the control questions."""
    parts: list[str] = []
    acc = m["accuracy"]
    if acc["control"]:
        parts.append("<h3>Control questions (nothing changed there)</h3>")
        parts.append(
            table(
                ["task", "mode", "n", "accuracy %"],
                [[a["task"], a["mode"], a["n"], a["accuracy"]] for a in acc["control"]],
            )
        )
    return parts


def _beaf_parts(m: Metrics) -> list[str]:
    """BEAF metrics, change-aware and traditional."""
    parts: list[str] = []
    if m.get("beaf"):
        parts.append("<h3>BEAF (change-aware existence questions)</h3>")
        keys = ["TU", "IG", "SB_p", "SB_n", "ID", "F1", "yes_ratio_before", "yes_ratio_after", "n_related", "n_other"]
        parts.append(
            table(["mode", *keys], [[mode, *[b.get(k) for k in keys]] for mode, b in sorted(m["beaf"].items())])
        )
        tkeys = ["accuracy", "precision", "recall", "F1", "yes_ratio", "n"]
        parts.append('<p class="muted">Traditional metrics over every BEAF answer of both images (BEAF Table 3):</p>')
        parts.append(
            table(
                ["mode", *tkeys],
                [
                    [mode, *[(b.get("traditional") or {}).get(k) for k in tkeys]]
                    for mode, b in sorted(m["beaf"].items())
                ],
            )
        )
    return parts


def _subcause_parts(m: Metrics) -> list[str]:
    """Sub-causes of CoT hallucinations, as a chart and a table."""
    parts: list[str] = []
    if m.get("subcauses"):
        rows = [
            (short(t) + f" (n={d['n']})", [(lab, v["percent"]) for lab, v in d["labels"].items()])
            for t, d in m["subcauses"].items()
        ]
        parts.append(
            "<h3>Sub-causes of CoT hallucinations</h3>" + figure(stacked(rows, "Sub-cause distribution per task"))
        )
        parts.append(
            table(
                ["task", "sub-cause", "answers", "%"],
                [[t, lab, v["n"], v["percent"]] for t, d in m["subcauses"].items() for lab, v in d["labels"].items()],
            )
        )
    return parts


def _span_parts(m: Metrics) -> list[str]:
    """Hallucinated spans by MHALO type."""
    parts: list[str] = []
    spans = m.get("spans") or {}
    if spans.get("types"):
        top = max(spans["types"].values())
        parts.append(
            f'<h3>Hallucinated spans by type</h3><p class="muted">detector followed the format on {spans["IF"]}% of {spans["responses"]} responses</p>'
        )
        parts.append(
            figure(hbars(sorted(spans["types"].items()), "Spans per MHALO type", max_value=float(top), unit=""))
        )
    return parts


MODEL_BLOCKS = (
    _score_parts,
    _qid_parts,
    _mc_cyclic_parts,
    _hallu_parts,
    _ablation_parts,
    _editor_parts,
    _incomplete_parts,
    _control_parts,
    _beaf_parts,
    _subcause_parts,
    _span_parts,
)


def escape_json(value: object) -> str:
    from html import escape

    return escape(json.dumps(value, sort_keys=True))


def _qnum(qid: str) -> tuple[str, int]:
    digits = "".join(c for c in qid if c.isdigit())
    return (qid.rstrip("0123456789"), int(digits) if digits else 0)


def render_eval_report(run: RunFS, folders: list[str] | None = None) -> str:
    models = load_metrics(run, folders)
    unverified = any(m.get("unverified") for _, m in models)
    sections = [("Overview", summary_section(models))]
    blind = blind_section(models)
    if blind is not None:
        sections.append(("Blind (language-only) runs", blind))
    sections += [(f"Model {_model_name(m)}", model_section(m)) for _, m in models]
    banner = (
        "UNVERIFIED: these questions have not been checked by people (qa/questions); do not cite these numbers."
        if unverified
        else None
    )
    return page("Evaluation report", sections, banner=banner, subtitle=f"run {run.url}")
