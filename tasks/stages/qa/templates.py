"""Question templates: one YAML file per task, compiled once into fast formatters.

One file per task holds all the wording (kept as data, so a reviewer can read and change the
question set without touching code). Which file is the task's spec (storage/task_spec.py): its
``qa_templates`` entry names a package resource, ``"package:path/inside.yaml"`` (the built-ins':
``tasks/stages/qa/templates/<id>.yaml``), so a third-party task ships its own file. The BEAF
wording (``templates/beaf.yaml``) belongs to no task. Compilation checks each template up front: known types,
unique qids, MC with a correct option and distractors, every ``{slot}`` declared in ``slots``
or ``derived`` — so a typo fails at import time naming the file and the qid, not mid-run.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

import yaml

from storage.task_spec import all_tasks

QTYPES = ("YN", "SA", "MC")
QA_TEMPLATES = "qa_templates"  # the spec entry naming a task's template file
BEAF = "beaf"
_FORMATTER = string.Formatter()
# ``rubric_base`` only holds a YAML anchor that questions reuse for their rubric.
# ``twins`` holds the positively phrased twins of "No" questions (``qa.balance_yes_no``).
_TOP_KEYS = {"task", "version", "image_role", "slots", "derived", "questions", "control", "twins", "rubric_base"}


class TemplateError(ValueError):
    """A question template file is malformed; the message names the file and the question."""


def slot_names(text: str) -> tuple[str, ...]:
    """The ``{slot}`` names a format string uses, in order of first use."""
    names: list[str] = []
    for _, name, spec, conv in _FORMATTER.parse(text):
        if name is None:
            continue
        if not name.isidentifier() or spec or conv:
            raise TemplateError(f"slot {{{name}}} must be a plain name (no format spec or conversion)")
        if name not in names:
            names.append(name)
    return tuple(names)


@dataclass(frozen=True)
class QuestionTemplate:
    qid: str
    qtype: str  # YN | SA | MC
    dimension: str
    text: str
    gold: str | None  # YN / SA: the answer template; MC: None (the letter comes from the layout)
    correct: str | None  # MC: the correct option template
    distractors: tuple[str, ...]  # MC: the wrong option templates
    rubric: tuple[tuple[str, str], ...]  # SA: (field, template) pairs
    slots: tuple[str, ...]  # every slot any part of the question uses
    prior: tuple[int, ...] = ()  # MC: indices into [correct, *distractors] of the commonsense (prior) options
    open_option: int | None = None  # MC: index of the slot-free open option ("None of these"), fixed in cyclic mode
    ascending: bool = False  # MC: options shown in ascending numeric order, not shuffled (counting, paper Fig. 16)


# A slot-free option that answers "none of the offered ones": FREAK's fixed open option.
OPEN_OPTION = re.compile(
    r"^\s*(none of (these|the above)|no such \w+|(the correct answer is )?not listed|nothing\b.*|no \w+ did)\s*\.?\s*$",
    re.I,
)


def open_option_index(options: list[str]) -> int | None:
    """Index of the one slot-free option that says "none of these" (None if there is none)."""
    hits = [i for i, o in enumerate(options) if "{" not in o and OPEN_OPTION.match(o)]
    return hits[0] if len(hits) == 1 else None


@dataclass(frozen=True)
class QuestionSet:
    task: str
    version: int
    image_role: str
    slots: tuple[str, ...]
    derived: tuple[tuple[str, str, tuple[str, ...]], ...]  # (name, template, slots it uses)
    main: tuple[QuestionTemplate, ...]
    control: tuple[QuestionTemplate, ...] = field(default=())
    # qid -> the positively phrased twin (gold "Yes") of that "No" question; used with qa.balance_yes_no
    twins: dict[str, QuestionTemplate] = field(default_factory=dict)


def _compile_question(raw: dict[str, Any], where: str, known: set[str]) -> QuestionTemplate:
    qid = str(raw.get("qid", ""))
    here = f"{where} question {qid or '?'}"
    qtype = raw.get("type")
    if qtype not in QTYPES:
        raise TemplateError(f"{here}: type must be one of {QTYPES}, got {qtype!r}")
    text = raw.get("text")
    if not qid or not isinstance(text, str) or not text.strip():
        raise TemplateError(f"{here}: needs a qid and a non-empty text")
    parts = [text]
    gold = correct = None
    distractors: tuple[str, ...] = ()
    if qtype == "MC":
        correct, distractors = raw.get("correct"), tuple(raw.get("distractors") or ())
        if not isinstance(correct, str) or len(distractors) < 2 or "gold" in raw:
            raise TemplateError(f"{here}: MC needs 'correct' and at least two 'distractors' (and no 'gold')")
        parts += [correct, *distractors]
    else:
        gold = raw.get("gold")
        if not isinstance(gold, str) or not gold.strip():
            raise TemplateError(f"{here}: {qtype} needs a 'gold' answer")
        if qtype == "YN" and gold not in ("Yes", "No"):
            raise TemplateError(f"{here}: YN gold must be 'Yes' or 'No', got {gold!r}")
        parts.append(gold)
    prior: tuple[int, ...] = ()
    open_option = None
    if qtype == "MC":
        listed = [correct, *distractors]
        unknown_prior = [p for p in raw.get("prior") or [] if p not in distractors]
        if unknown_prior:
            raise TemplateError(f"{here}: 'prior' must list distractors, got {unknown_prior}")
        prior = tuple(sorted(listed.index(p) for p in raw.get("prior") or []))
        open_option = open_option_index(listed)  # type: ignore[arg-type]
    elif "prior" in raw:
        raise TemplateError(f"{here}: 'prior' is for MC questions only")
    rubric = tuple((str(k), str(v)) for k, v in (raw.get("rubric") or {}).items())
    if qtype == "SA" and not rubric:
        raise TemplateError(f"{here}: SA questions need a rubric for the judge")
    parts += [v for _, v in rubric]
    names: list[str] = []
    for p in parts:
        try:
            found = slot_names(p)
        except (TemplateError, ValueError) as exc:
            raise TemplateError(f"{here}: {exc}") from None
        names += [n for n in found if n not in names]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise TemplateError(f"{here}: undeclared slots {unknown}; declare them under 'slots' or 'derived'")
    order = raw.get("order", "shuffled")
    if order not in ("shuffled", "ascending") or (order == "ascending" and qtype != "MC"):
        raise TemplateError(f"{here}: order must be 'shuffled' or (MC only) 'ascending', got {order!r}")
    return QuestionTemplate(
        qid,
        qtype,
        str(raw.get("dimension", "")),
        text,
        gold,
        correct,
        distractors,
        rubric,
        tuple(names),
        prior,
        open_option,
        order == "ascending",
    )


def compile_set(data: dict[str, Any], where: str) -> QuestionSet:
    """Validate and compile one template file's content."""
    extra = set(data) - _TOP_KEYS
    if extra:
        raise TemplateError(f"{where}: unknown keys {sorted(extra)}")
    slots = tuple(data.get("slots") or ())
    derived = tuple((str(k), str(v), slot_names(str(v))) for k, v in (data.get("derived") or {}).items())
    known = set(slots)
    for name, _, used in derived:
        missing = [n for n in used if n not in known]
        if missing:
            raise TemplateError(f"{where}: derived slot {name!r} uses undeclared slots {missing}")
        known.add(name)
    sets = {}
    for key in ("questions", "control"):
        qs = tuple(_compile_question(q, where, known) for q in data.get(key) or ())
        qids = [q.qid for q in qs]
        if len(set(qids)) != len(qids):
            raise TemplateError(f"{where}: duplicate qids in {key}: {qids}")
        sets[key] = qs
    if not sets["questions"]:
        raise TemplateError(f"{where}: no questions")
    twins = _compile_twins(data.get("twins") or (), where, known, sets["questions"] + sets["control"])
    return QuestionSet(
        task=str(data.get("task")),
        version=int(data.get("version", 1)),
        image_role=str(data.get("image_role", "edited")),
        slots=slots,
        derived=derived,
        main=sets["questions"],
        control=sets["control"],
        twins=twins,
    )


def _compile_twins(
    raw: Any, where: str, known: set[str], questions: tuple[QuestionTemplate, ...]
) -> dict[str, QuestionTemplate]:
    """The ``twins`` list: each a YN question with gold "Yes" under the qid of a YN question whose
    gold is "No" (its dimension is the original's), so balancing never asks a new kind of thing."""
    by_qid = {q.qid: q for q in questions}
    out: dict[str, QuestionTemplate] = {}
    for item in raw:
        t = _compile_question({"type": "YN", "dimension": "", **item}, f"{where} twins", known)
        orig = by_qid.get(t.qid)
        if orig is None or orig.qtype != "YN" or orig.gold != "No":
            raise TemplateError(f"{where} twins question {t.qid}: must name a YN question whose gold is 'No'")
        if t.qtype != "YN" or t.gold != "Yes" or t.qid in out:
            raise TemplateError(f"{where} twins question {t.qid}: a twin is one YN question with gold 'Yes'")
        out[t.qid] = QuestionTemplate(t.qid, "YN", orig.dimension, t.text, "Yes", None, (), (), t.slots)
    return out


def template_tasks() -> tuple[str, ...]:
    """The registered tasks that name question templates, in benchmark order."""
    return tuple(t for t, spec in all_tasks().items() if getattr(spec.hooks, QA_TEMPLATES))


def template_ref(task: str) -> str:
    """Where the task's templates are: its spec's ``qa_templates`` (``"package:path/inside.yaml"``)."""
    spec = all_tasks().get(task)
    ref = getattr(spec.hooks, QA_TEMPLATES) if spec is not None else None
    if not ref:
        raise KeyError(f"no question templates for task {task!r}; known: {list(template_tasks())}")
    if not isinstance(ref, str) or ":" not in ref:
        raise TemplateError(f"task {task!r}: {QA_TEMPLATES} must read 'package:path/inside.yaml', got {ref!r}")
    return ref


def _read_yaml(name: str) -> dict[str, Any]:
    return yaml.safe_load(_read_text(name))


def templates_fingerprint() -> str:
    """Hash of every question-template file: part of the qa stage key, so new wording re-renders."""
    from storage.hashing import sha256_hex

    return sha256_hex("".join(_read_text(n) for n in (*template_tasks(), BEAF)))[:16]


def _read_text(name: str) -> str:
    """The template text of task ``name`` (or of the BEAF wording, ``beaf``)."""
    ref = f"tasks.stages.qa:templates/{BEAF}.yaml" if name == BEAF else template_ref(name)
    package, _, path = ref.partition(":")
    resource = resources.files(package)
    for part in path.split("/"):
        resource = resource.joinpath(part)
    return resource.read_text(encoding="utf-8")


@cache
def question_set(task: str) -> QuestionSet:
    """The compiled question set of a task (cached; the YAML is read once per process)."""
    where = template_ref(task)
    qs = compile_set(_read_yaml(task), where)
    if qs.task != task:
        raise TemplateError(f"{where}: declares task {qs.task!r}")
    return qs


@cache
def beaf_settings() -> dict[str, Any]:
    """The BEAF question wording and probe lists (``templates/beaf.yaml``)."""
    data = _read_yaml(BEAF)
    if "{obj}" not in data.get("question", ""):
        raise TemplateError("tasks/stages/qa/templates/beaf.yaml: 'question' must contain {obj}")
    return data
