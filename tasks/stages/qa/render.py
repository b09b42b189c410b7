"""Deterministic rendering: slot values of one edit -> question rows, or problems (future rejects).

Pure functions, no I/O: the stage feeds them analysis fields and gets rows back, the benchmark
and the property tests call them directly. A question is emitted only when every slot it
uses is filled and its options pass :mod:`tasks.stages.qa.checks`; otherwise it becomes a
:class:`Problem` carrying the rule that failed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from storage.hashing import canonical_json, stable_id
from tasks.stages.qa import mc
from tasks.stages.qa.balance import balanced_forms
from tasks.stages.qa.checks import LengthRule, check_options
from tasks.stages.qa.templates import QuestionSet, QuestionTemplate, question_set
from tasks.stages.qa.text import clean, sentence_case


@dataclass(frozen=True)
class RenderSettings:
    """How questions are laid out: MC mode, the length rule, the run seed, control questions on/off,
    and ``balance`` (qa.balance_yes_no: "No" questions with a declared twin get it, rotated)."""

    mc_mode: str = "shuffle"  # shuffle | cyclic
    run_seed: int = 0
    control: bool = True
    length_rule: LengthRule = field(default_factory=LengthRule)
    balance: bool = False


@dataclass(frozen=True)
class Problem:
    """A question that could not be rendered cleanly; becomes a reject row in the stage."""

    question_set: str
    qid: str
    reason: str  # snake_case rule name
    detail: str


@dataclass(frozen=True)
class EditRender:
    """What every question of one edit is rendered with: its filled slots, the per-edit row
    columns, the images it is asked about (their role and store paths), the layout settings and
    the question set's version (part of every question id)."""

    values: Mapping[str, str]
    base: Mapping[str, Any]
    image_role: str
    images: list[str]
    settings: RenderSettings
    version: int


@dataclass
class Rendered:
    rows: list[dict[str, Any]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


def fill_slots(qs: QuestionSet, values: Mapping[str, Any]) -> dict[str, str]:
    """Clean the raw values and add the set's derived slots (only when their inputs are filled)."""
    out = {k: clean(v) for k, v in values.items()}
    for name, tmpl, used in qs.derived:
        if all(out.get(n) for n in used):
            out[name] = tmpl.format_map(out)
    return out


def render_template(
    t: QuestionTemplate, edit: EditRender, *, set_name: str, twin: bool = False
) -> tuple[list[dict[str, Any]], list[Problem]]:
    """Render one question template of ``edit`` into its row(s) (several in cyclic MC mode) or problems.

    ``twin``: ``t`` is the positively phrased twin of a "No" question (:mod:`tasks.stages.qa.balance`):
    its id differs from the original's, and its ``prior_options`` name "No", the answer a
    prior-driven model gives it (HalluRate's numerator for YN, as "Yes" is for the original)."""
    values, base, settings, version = edit.values, edit.base, edit.settings, edit.version
    image_role = edit.image_role
    empty = [n for n in t.slots if not values.get(n)]
    if empty:
        return [], [
            Problem(set_name, t.qid, "empty_slot", f"{base.get('task')} {t.qid}: slot(s) {empty} are empty or missing")
        ]
    text = sentence_case(t.text.format_map(values))
    edit_id = str(base["edit_id"])
    row = {
        **base,
        "question_set": set_name,
        "qid": t.qid,
        "qtype": t.qtype,
        "dimension": t.dimension or None,
        "text": text,
        "images": edit.images,
        "image_role": image_role,
    }
    if t.qtype != "MC":
        gold = t.gold.format_map(values)  # type: ignore[union-attr]
        rubric = {k: v.format_map(values) for k, v in t.rubric}
        if rubric:
            rubric["reference_answer"] = gold
        key = (edit_id, set_name, t.qid, image_role, 0, version) + (("twin",) if twin else ())
        row.update(
            id=stable_id(*key),
            options=None,
            gold=gold,
            rotation=0,
            rubric_json=canonical_json(rubric) if rubric else None,
            prior_options=["No"] if twin else None,
        )
        return [row], []
    # options share one casing, so the right one never stands out by a capital letter
    options = [sentence_case(t.correct.format_map(values))] + [
        sentence_case(d.format_map(values)) for d in t.distractors
    ]  # type: ignore[union-attr]
    bad = check_options(options, 0, settings.length_rule)
    if bad:
        return [], [
            Problem(set_name, t.qid, reason, f"{base.get('task')} {t.qid}: {detail}") for reason, detail in bad
        ]
    seed = mc.question_seed(settings.run_seed, edit_id, f"{set_name}/{t.qid}")
    rubric_json = canonical_json({"correct_option": options[0]})
    rows = []
    prior_texts = {options[i] for i in t.prior}
    for lay in (
        _ascending(options, settings.mc_mode)
        if t.ascending
        else mc.layouts(options, 0, seed, settings.mc_mode, t.open_option)
    ):
        rows.append(
            {
                **row,
                "id": stable_id(edit_id, set_name, t.qid, image_role, lay.rotation, version),
                "options": list(lay.options),
                "gold": lay.gold,
                "rotation": lay.rotation,
                "rubric_json": rubric_json,
                # letters of the commonsense distractors in this presentation: HalluRate's numerator
                "prior_options": [mc.LETTERS[i] for i, o in enumerate(lay.options) if o in prior_texts],
            }
        )
    return rows, []


def _ascending(options: list[str], mode: str) -> list[mc.Layout]:
    """Counting options in ascending order (the paper's Figure 16), the correct one being options[0]."""
    import re

    def key(o: str) -> float:
        m = re.search(r"\d+(?:\.\d+)?", o)
        return float(m.group()) if m else float("inf")

    order = sorted(range(len(options)), key=lambda i: (key(options[i]), i))
    base = mc.Layout(tuple(options[i] for i in order), mc.LETTERS[order.index(0)], 0)
    return mc.rotations(base) if mode == "cyclic" else [base]


def render_questions(
    task: str,
    values: Mapping[str, Any],
    base: Mapping[str, Any],
    images: Mapping[str, list[str]],
    settings: RenderSettings = RenderSettings(),
) -> Rendered:
    """All questions of one edit: the main set, plus control questions when the task has them.

    ``base`` holds the per-edit row columns (``edit_id``, ``editor``, ``task``, ``variant``);
    ``images`` maps an image role (``edited``, ``original``, ``pair``) to image-store paths.
    """
    qs = question_set(task)
    filled = fill_slots(qs, values)
    role = qs.image_role
    if role not in images:
        raise KeyError(f"{task}: questions are asked about the {role!r} image(s), which were not given")
    edit = EditRender(filled, base, role, images[role], settings, qs.version)
    out = Rendered()
    groups = [("main", qs.main)] + ([("control", qs.control)] if settings.control else [])
    for set_name, templates in groups:
        forms = (
            balanced_forms(templates, qs.twins, set_name, settings.run_seed, str(base["edit_id"]))
            if settings.balance
            else [(t, set_name, False) for t in templates]
        )
        for t, form_set, twin in forms:
            rows, problems = render_template(t, edit, set_name=form_set, twin=twin)
            out.rows.extend(rows)
            out.problems.extend(problems)
    return out
