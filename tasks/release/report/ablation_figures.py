"""What the editor ablation decides from: per editor, the yield from instruction to accepted item,
the editor time each accepted item cost, how strongly its edits induce hallucination, and the
verdict naming the editor that gives the most accepted, hallucination-inducing items per hour.

The HTML report (tasks/release/report/ablation.py) and ``benchmarks/ablation_report.py`` read the
same :func:`ablation_summary`. Unedited tasks (dense counting: the ``none`` rows) are no editor and
are counted apart. Definitions (docs/eval.md "The editor ablation"):

- yield: instructions that need an edit (each editor is given all of them) -> supported (not
  refused as outside the editor's capabilities) -> edited (an edit row) -> auto-QC pass -> verified
  (auto-QC and verification passed: status ``ok``) -> with questions (the qa stage wrote questions
  about it) -> accepted (in ``review/verified_edits``; only once reviewed). ``share_accepted`` is
  accepted / instructions, or verified-with-questions / instructions before review (labelled).
- cost: editor seconds per edit, measured (the rows' ``edit_seconds`` or the edit manifest's
  timing record) or else the preflight's estimate on an RTX A6000 (``editors/timing.py``), with
  its source; x the GPUs a replica holds under its memory plan = device seconds; per accepted
  item = device seconds over every edit made / accepted items.
- induction: targeted minus control accuracy (points, main set, modes pooled) per evaluated model
  and pooled over the models, on the tasks that hold control items, with the 95% bootstrap
  interval of tasks/release/evaluate/ablation.py (items resampled). Negative = the edits make
  models answer wrongly more often than the same edit on a control object does.
- verdict: accepted items per device hour x (control - targeted accuracy) / 100, i.e. the items
  an hour yields, discounted to the share of answers the edit turned wrong; its interval comes from
  the induction's bootstrap (the hourly yield is taken as measured), and the difference between
  the first two editors gets its own interval (independent resamples) saying whether the lead is real.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from storage import addresses
from storage.fs import RunFS
from storage.parquet_io import ArtifactReader
from storage.stage_store import StageStore
from tasks.release.evaluate.ablation import (
    BOOTSTRAP,
    bootstrap_samples,
    item_credits,
    seed_of,
)
from tasks.release.evaluate.run import list_evaluations
from tasks.release.evaluate.schemas import ANSWERS
from tasks.release.metrics import CONTROL, TARGETED

ESTIMATE_GPU = "RTX A6000"  # the card the preflight's estimate speaks of when nothing was measured
EDIT_COLUMNS = ["id", "editor", "variant", "status", "qc_json", "edit_seconds", "editor_params_json"]
ANSWER_COLUMNS = [
    "edit_id",
    "editor",
    "task",
    "variant",
    "question_set",
    "qtype",
    "qid",
    "mode",
    "rotation",
    "image_role",
    "correct",
    "status",
]


@dataclass
class Funnel:
    """Counts from instruction to accepted item for one editor (``accepted`` None: not reviewed)."""

    instructions: int
    supported: int
    edited: int
    auto_qc_pass: int
    verified: int
    with_questions: int
    accepted: int | None

    @property
    def kept(self) -> int:
        """The items that end the funnel: accepted once reviewed, else verified with questions."""
        return self.with_questions if self.accepted is None else self.accepted

    @property
    def share_accepted(self) -> float | None:
        return None if not self.instructions else round(100.0 * self.kept / self.instructions, 2)


@dataclass
class Cost:
    """Editor seconds per edit and what they came from; ``gpus``: devices a replica holds."""

    s_per_edit: float | None
    source: str  # measured (rows) | measured (manifest) | estimate (...) | unknown
    gpus: int
    s_per_accepted_item: float | None


@dataclass
class Induction:
    """Targeted minus control accuracy (points) with its 95% interval; None where a side is empty."""

    targeted_items: int
    control_items: int
    targeted_accuracy: float | None
    control_accuracy: float | None
    difference: float | None
    ci95: list[float] | None


@dataclass
class EditorFigures:
    editor: str
    name: str  # the registered editor (an ablation label's editor)
    licence: str
    commercial_use: bool | None
    funnel: Funnel
    cost: Cost
    induction: dict[str, Induction]  # per evaluated model
    pooled: Induction | None  # over every evaluated model
    per_hour: float | None  # kept items per device hour
    score: float | None  # kept items per device hour x (control - targeted) / 100
    score_ci95: list[float] | None
    samples: np.ndarray | None = field(default=None, repr=False)  # bootstrap samples of ``score`` (not serialised)


@dataclass
class Verdict:
    recommended: str | None
    text: str
    runner_up: str | None = None
    lead_ci95: list[float] | None = None  # score(recommended) - score(runner-up)
    real: bool | None = None  # the lead's interval excludes 0


def _r(x: float | None, nd: int = 4) -> float | None:
    return None if x is None else round(float(x), nd)


def edit_rejects_per_editor(run: RunFS) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
    """Per editor: requests refused as ``unsupported_edit`` (outside its capabilities), and the other
    edit-stage rejects by reason (``verify_failed`` excluded: those edits are rows too)."""
    reader = addresses.rejects("edit").reader(run)
    unsupported: dict[str, int] = defaultdict(int)
    other: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    if reader.exists():
        for r in reader.iter_rows(columns=["reason", "payload_json"]):
            ed = json.loads(r.get("payload_json") or "{}").get("editor")
            if ed is None or r["reason"] == "verify_failed":
                continue
            if r["reason"] in ("unsupported_edit", "unsupported_edit_type"):
                unsupported[ed] += 1
            else:
                other[ed][r["reason"]] += 1
    return dict(unsupported), {k: dict(v) for k, v in other.items()}


def seconds_per_editor(run: RunFS) -> dict[str, float]:
    """Per editor key: editor wall seconds per computed item, from the edit manifest's timing record
    (tasks/stages/edit.py ``timing_record``: kept for every build, outside the rows so they stay byte-identical)."""
    from tasks.stages.edit import EditStage

    manifest = StageStore(run, "edit", EditStage.outputs).read_manifest() or {}
    totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for rec in ((manifest.get("extra") or {}).get("timings") or {}).values():
        totals[rec["key"]][0] += rec["seconds"]
        totals[rec["key"]][1] += rec["items"]
    return {k: s / n for k, (s, n) in totals.items() if n}


def instructions_to_edit(run: RunFS) -> int:
    """Applicable instructions an editor must carry out (each editor of the run is given all of them)."""
    from tasks.stages.edit import needs_edit

    reader = addresses.INSTRUCTIONS.reader(run)
    if not reader.exists():
        return 0
    return sum(1 for r in reader.iter_rows(columns=["status", "task", "edit_type"]) if needs_edit(r))


def _edits_with_questions(run: RunFS) -> set[str]:
    reader = addresses.QUESTIONS.reader(run)
    return {r["edit_id"] for r in reader.iter_rows(columns=["edit_id"])} if reader.exists() else set()


def _accepted(run: RunFS) -> set[str] | None:
    reader = addresses.VERIFIED_EDITS.reader(run)
    if not reader.exists():
        return None
    from tasks.review.export_set import require_export_set

    require_export_set(run, ("verified_edits",))  # never half of an interrupted export
    return {e["id"] for e in reader.iter_rows(columns=["id"])}


def _estimate(name: str, key: str, params: Mapping[str, Any]) -> tuple[float | None, str]:
    """The preflight's seconds per edit on :data:`ESTIMATE_GPU` for an editor nothing measured."""
    from editors.base import EditorError
    from editors.registry import editor_class
    from editors.timing import edit_cost, load_table, resolution_of

    try:
        cls = editor_class(name)
        p = cls.Params.model_validate({k: v for k, v in params.items() if k in cls.Params.model_fields})
    except (
        EditorError,
        ValueError,
    ) as exc:  # an editor not installed here, params it no longer takes: say so rather than guess
        return None, f"unknown ({name}: {exc})"
    plan = params.get("memory_plan") or "single"
    if params.get("quantization") not in (None, "none"):
        plan = f"{plan}+{params['quantization']}"
    area = getattr(p, "process_area", None) or (1024 * 1024 if hasattr(p, "process_area") else None)
    cost = edit_cost(
        load_table(),
        ESTIMATE_GPU,
        name,
        getattr(p, "model", None),
        plan,
        getattr(p, "steps", None),
        resolution_of(area),
        cls.edit_flops(p, key),
    )
    if cost.s_per_edit is None:
        return None, f"unknown ({cost.note})"
    note = cost.note.removeprefix("estimate: ")
    return cost.s_per_edit, f"estimate ({cost.source} on {ESTIMATE_GPU}: {note}; nothing measured in this run)"


def _induction(
    t_items: list[tuple[float, int]], c_items: list[tuple[float, int]], seed: int, n_boot: int
) -> tuple[Induction, np.ndarray | None]:
    t_acc = 100.0 * sum(c for c, _ in t_items) / sum(n for _, n in t_items) if t_items else None
    c_acc = 100.0 * sum(c for c, _ in c_items) / sum(n for _, n in c_items) if c_items else None
    if t_acc is None or c_acc is None:
        return Induction(len(t_items), len(c_items), _r(t_acc), _r(c_acc), None, None), None
    samples = bootstrap_samples(t_items, c_items, seed, n_boot)
    lo, hi = np.percentile(samples, [2.5, 97.5])
    return Induction(len(t_items), len(c_items), _r(t_acc), _r(c_acc), _r(t_acc - c_acc), [_r(lo), _r(hi)]), samples  # type: ignore[list-item]


def answers_by_editor(run: RunFS, editors: Iterable[str]) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """Per evaluated model (its ``eval/`` folder name): per editor, the main-set answers of the tasks
    that hold control items for that editor (what induction compares)."""
    wanted = set(editors)
    out: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for folder in list_evaluations(run):
        rows: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in ArtifactReader(run, f"{folder}/answers", ANSWERS).iter_rows(ANSWER_COLUMNS):
            if r["editor"] in wanted and r["question_set"] == "main" and r["status"] != "error":
                rows[r["editor"]].append(r)
        for ed, mine in rows.items():
            controlled = {r["task"] for r in mine if r["variant"] == CONTROL}
            rows[ed] = [r for r in mine if r["task"] in controlled]
        out[folder.split("/", 1)[1]] = dict(rows)
    return out


def ablation_summary(run: RunFS, n_boot: int = BOOTSTRAP) -> dict[str, Any]:
    """Everything the report shows and the benchmark prints: ``editors`` (one entry per editor,
    sorted by name), ``unedited`` (pass-through items, no editor), ``models``, ``reviewed``,
    ``verdict``, ``licence_warnings``."""
    from editors.registry import editor_licence
    from tasks.release.export.licences import licence_warnings

    n_instr = instructions_to_edit(run)
    accepted = _accepted(run)
    unsupported, _ = edit_rejects_per_editor(run)
    manifest_s = seconds_per_editor(run)
    acc, unedited = _tally_edits(run, accepted)
    keys = sorted(set(acc) | set(unsupported))
    answers = answers_by_editor(run, keys)
    figures: list[EditorFigures] = []
    licences = {}
    for key in keys:
        a = acc[key]
        doc = a["params"] or {"name": key, "params": {}}
        name, params = doc.get("name") or key, doc.get("params") or {}
        funnel = Funnel(
            n_instr,
            n_instr - unsupported.get(key, 0),
            a["edited"],
            a["qc"],
            a["ok"],
            a["q"],
            a["accepted"] if accepted is not None else None,
        )
        cost, spent = _cost(key, name, params, a["secs"], manifest_s, funnel)
        per_model, pooled, samples = _inductions(answers, key, n_boot)
        per_hour = None if not spent else funnel.kept / (spent / 3600.0)
        score, score_ci, score_samples = _score(per_hour, pooled, samples)
        lic = licences[key] = editor_licence(name, params)
        figures.append(
            EditorFigures(
                key,
                name,
                lic.name,
                lic.commercial_use,
                funnel,
                cost,
                per_model,
                pooled,
                _r(per_hour),
                _r(score),
                score_ci,
                score_samples,
            )
        )  # type: ignore[arg-type]
    warnings = licence_warnings([(f.editor, f.name, licences[f.editor], f.funnel.kept) for f in figures])
    return {
        "reviewed": accepted is not None,
        "instructions": n_instr,
        "unedited": unedited,
        "models": sorted(answers),
        "editors": figures,
        "verdict": verdict(figures, reviewed=accepted is not None, evaluated=bool(answers)),
        "licence_warnings": warnings,
    }


def _tally_edits(run: RunFS, accepted: set[str] | None) -> tuple[dict[str, dict[str, Any]], dict[str, int]]:
    """One pass over the edit rows: per editor the funnel's counts, the edit seconds measured and
    the first row's parameters; and the pass-through (no editor) items' counts."""
    from tasks.stages.edit import NO_EDITOR

    with_q = _edits_with_questions(run)
    acc: dict[str, dict[str, Any]] = defaultdict(
        lambda: {"edited": 0, "qc": 0, "ok": 0, "q": 0, "accepted": 0, "secs": [0, 0.0], "params": None}
    )
    unedited = {"items": 0, "with_questions": 0, "accepted": 0}
    for e in addresses.EDITS.reader(run).iter_rows(EDIT_COLUMNS):
        if e["editor"] == NO_EDITOR:
            unedited["items"] += 1
            unedited["with_questions"] += int(e["id"] in with_q)
            unedited["accepted"] += int(accepted is not None and e["id"] in accepted)
            continue
        a = acc[e["editor"]]
        a["edited"] += 1
        a["qc"] += int(bool(json.loads(e.get("qc_json") or "{}").get("passed")))
        ok = e["status"] == "ok"
        a["ok"] += int(ok)
        a["q"] += int(ok and e["id"] in with_q)
        a["accepted"] += int(ok and accepted is not None and e["id"] in accepted)
        if e.get("edit_seconds") is not None:
            a["secs"][0] += 1
            a["secs"][1] += e["edit_seconds"]
        if a["params"] is None:
            a["params"] = json.loads(e["editor_params_json"] or "{}")
    return acc, unedited


def _cost(
    key: str, name: str, params: dict[str, Any], secs: list[float], manifest_s: dict[str, float], funnel: Funnel
) -> tuple[Cost, float | None]:
    """An editor's cost per edit (measured on its rows, else from its manifest, else estimated)
    and the GPU-seconds it spent on every edit it made."""
    from editors.memory import GPUS_PER_REPLICA

    if secs[0]:
        s, source = secs[1] / secs[0], "measured (edit_seconds of the rows)"
    elif key in manifest_s:
        s, source = manifest_s[key], "measured (the edit manifest's timing record)"
    else:
        s, source = _estimate(name, key, params)
    gpus = GPUS_PER_REPLICA.get(str(params.get("memory_plan") or "single"), 1)
    spent = None if s is None else s * gpus * funnel.edited
    per_item = None if spent is None or not funnel.kept else spent / funnel.kept
    return Cost(_r(s, 6), source, gpus, _r(per_item, 6)), spent


def _inductions(
    answers: dict[str, dict[str, list[dict[str, Any]]]], key: str, n_boot: int
) -> tuple[dict[str, Induction], Induction | None, np.ndarray | None]:
    """The editor's induction per model, and pooled over the models with its bootstrap draws."""
    per_model: dict[str, Induction] = {}
    pooled_t: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    pooled_c: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    for model, by_ed in sorted(answers.items()):
        rows = by_ed.get(key, [])
        t = item_credits([r for r in rows if (r["variant"] or TARGETED) != CONTROL])
        c = item_credits([r for r in rows if r["variant"] == CONTROL])
        per_model[model], _ = _induction(list(t.values()), list(c.values()), seed_of(key, model), n_boot)
        for side, items in ((pooled_t, t), (pooled_c, c)):
            for item, (credit_sum, n) in items.items():
                side[item][0] += credit_sum
                side[item][1] += n
    pooled: Induction | None = None
    samples: np.ndarray | None = None
    if answers:
        pooled, samples = _induction(
            [(c, int(n)) for _, (c, n) in sorted(pooled_t.items())],
            [(c, int(n)) for _, (c, n) in sorted(pooled_c.items())],
            seed_of(key, *sorted(answers)),
            n_boot,
        )  # one model: its own draws, the same interval
    return per_model, pooled, samples


def _score(
    per_hour: float | None, pooled: Induction | None, samples: np.ndarray | None
) -> tuple[float | None, list[float] | None, np.ndarray | None]:
    """Kept items per hour times the pooled induction, with its 95% interval and draws; none for an
    editor that kept nothing (it is not ranked)."""
    score: float | None = None
    score_ci: list[float] | None = None
    score_samples: np.ndarray | None = None
    if per_hour and pooled is not None and pooled.difference is not None and samples is not None:
        score = per_hour * -pooled.difference / 100.0 + 0.0  # + 0.0: no "-0"
        score_samples = per_hour * -samples / 100.0 + 0.0
        lo, hi = np.percentile(score_samples, [2.5, 97.5])
        score_ci = [_r(lo), _r(hi)]  # type: ignore[list-item]
    return score, score_ci, score_samples


def rank_key(f: EditorFigures) -> tuple[float, float, str]:
    """The verdict's order: score, then kept items per hour (a tie at 0 induction), then name."""
    return (-(f.score or 0.0), -(f.per_hour or 0.0), f.editor)


def verdict(figures: list[EditorFigures], reviewed: bool, evaluated: bool) -> Verdict:
    """The editor with the most kept, hallucination-inducing items per device hour, and whether its
    lead over the next one is real (the 95% interval of the difference excludes 0)."""
    from tasks.release.report.svg import significant as g

    kept_what = "accepted" if reviewed else "verified (not reviewed yet)"
    scored = sorted((f for f in figures if f.score is not None), key=rank_key)
    if not scored:
        ranked = sorted((f for f in figures if f.per_hour is not None), key=lambda f: (-f.per_hour, f.editor))  # type: ignore[operator]
        why = (
            "no evaluation yet: run `reactbench eval` to weigh how strongly each editor's edits induce hallucination"
            if not evaluated
            else "targeted minus control accuracy could not be measured: no task holds both evaluated targeted and control items "
            "of an editor (build with `mine.control: true`, and mind that an editor refusing a task's edits leaves it no side)"
        )
        if not ranked:
            return Verdict(
                None, f"No editor can be recommended: no editor time or no {kept_what} items were recorded; {why}."
            )
        best = ranked[0]
        return Verdict(
            best.editor, f"{best.editor} gives the most {kept_what} items per device hour ({g(best.per_hour)}); {why}."
        )
    best = scored[0]
    if best.score <= 0:  # type: ignore[operator]  # nothing induces hallucination measurably: the hourly yield decides
        by_yield = sorted(scored, key=lambda f: (-(f.per_hour or 0.0), f.editor))
        lead = by_yield[0]
        nxt = f", next {by_yield[1].editor} {g(by_yield[1].per_hour)}" if len(by_yield) > 1 else ""
        return Verdict(
            lead.editor,
            f"No editor's {kept_what} edits induce hallucination measurably here (targeted accuracy is not below control: "
            f"the highest, {best.editor}'s, is {g(best.score)} items per device hour, 95% interval "
            f"{g(best.score_ci95[0])} to {g(best.score_ci95[1])}); by {kept_what} items per device hour alone "  # type: ignore[index]
            f"{lead.editor} leads ({g(lead.per_hour)}{nxt}). A larger evaluation, or a model that looks at the images, is needed to weigh induction.",
        )
    text = (
        f"{best.editor} gives the most {kept_what}, hallucination-inducing items per device hour: {g(best.score)} "
        f"(95% interval {g(best.score_ci95[0])} to {g(best.score_ci95[1])}; {g(best.per_hour)} {kept_what} items per hour, "  # type: ignore[index]
        f"targeted minus control accuracy {best.pooled.difference:+.1f} points)."
    )  # type: ignore[union-attr]
    if len(scored) == 1:
        return Verdict(best.editor, text + " No other editor could be scored.")
    second = scored[1]
    lead = best.samples - second.samples
    lo, hi = (float(v) for v in np.percentile(lead, [2.5, 97.5]))
    real = lo > 0
    text += (
        f" Its lead over {second.editor} ({g(second.score)}) is {g(best.score - second.score)} (95% interval {g(lo)} to {g(hi)}): "  # type: ignore[operator]
        + (
            "a real difference."
            if real
            else "not distinguishable at this size; evaluate more items before choosing on it."
        )
    )
    return Verdict(best.editor, text, second.editor, [_r(lo), _r(hi)], real)  # type: ignore[list-item]


def summary_json(summary: dict[str, Any]) -> dict[str, Any]:
    """The benchmark's JSON figures: ``editors``, ``yield``, ``s_per_accepted_item``, ``induction``, ``recommended`` (and the rest)."""
    eds: list[EditorFigures] = summary["editors"]
    return {
        "editors": [f.editor for f in eds],
        "yield": {f.editor: {**asdict(f.funnel), "share_accepted": f.funnel.share_accepted} for f in eds},
        "s_per_accepted_item": {f.editor: f.cost.s_per_accepted_item for f in eds},
        "s_per_edit": {f.editor: {"s": f.cost.s_per_edit, "source": f.cost.source} for f in eds},
        "induction": {
            f.editor: {
                "pooled": None if f.pooled is None else asdict(f.pooled),
                "per_model": {m: asdict(i) for m, i in f.induction.items()},
            }
            for f in eds
        },
        "score": {f.editor: {"per_hour": f.per_hour, "score": f.score, "ci95": f.score_ci95} for f in eds},
        "licences": {
            f.editor: {"name": f.name, "licence": f.licence, "commercial_use": f.commercial_use} for f in eds
        },
        "recommended": summary["verdict"].recommended,
        "lead_ci95": summary["verdict"].lead_ci95,
        "lead_real": summary["verdict"].real,
        "reviewed": summary["reviewed"],
        "models": summary["models"],
        "unedited": summary["unedited"],
        "licence_warnings": summary["licence_warnings"],
    }
