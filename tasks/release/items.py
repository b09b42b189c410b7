"""What an evaluation reads: questions and the edits they belong to, verified or not.

Verified inputs are the review export (``review/verified_questions``, ``review/verified_edits``).
A fresh build has no human decisions yet, so ``unverified=True`` reads ``qa/questions`` and
``edit/edits`` instead; every output row and report then says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from storage import addresses
from storage.addresses import Address
from storage.checksums import file_sha256
from storage.fs import RunFS
from storage.hashing import canonical_json, sha256_hex, stable_id
from storage.json_columns import candidate_of, context_objects, load_json_column
from storage.task_spec import all_tasks, task_hook
from tasks.engine.intact import DamagedInput, require_intact
from tasks.engine.suggest import suggest


class InputsMissing(RuntimeError):
    """The questions an evaluation or export needs are not in the run directory."""


@dataclass(frozen=True)
class Source:
    questions: Address
    edits: Address
    unverified: bool

    @property
    def label(self) -> str:
        return "unverified (qa/questions, no human review)" if self.unverified else "verified (review export)"


VERIFIED = Source(addresses.VERIFIED_QUESTIONS, addresses.VERIFIED_EDITS, False)
UNVERIFIED = Source(addresses.QUESTIONS, addresses.EDITS, True)


def source_for(unverified: bool) -> Source:
    return UNVERIFIED if unverified else VERIFIED


def read_inputs(run: RunFS, unverified: bool) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """Questions sorted by id, and edits by id. Fails naming the folder and the way out.

    Read one shard at a time with repeated values shared (``ArtifactReader.iter_shared_rows``):
    every question is kept, so its row is all it costs (no whole-table copy beside the rows)."""
    src = source_for(unverified)
    q_reader = src.questions.reader(run)
    if not unverified and q_reader.exists():
        _require_review_export(run)
    if not q_reader.exists():
        hint = (
            "run `reactbench qa` first"
            if unverified
            else "export the review decisions first (`reactbench review export`), or pass --unverified to use qa/questions"
        )
        raise InputsMissing(f"{run.path(src.questions.folder)}: no question shards found; {hint}")
    if unverified:  # straight from the stages: their files must be the ones their markers wrote
        _require_intact(run, (src.questions.stage, src.edits.stage))
    pool: dict[Any, Any] = {}  # one object per repeated value (task, editor, edit id, image path...) across both
    questions = sorted(q_reader.iter_shared_rows(pool=pool), key=lambda r: r["id"])
    if not unverified and not questions:  # a release or score of nothing is a mistake, not a result
        raise InputsMissing(
            f"{run.path(src.questions.folder)}: the review export holds no accepted question (no item has been accepted yet); "
            f"review the queue (`{suggest('review', 'serve', '--run-dir', run.url)}`), export the decisions "
            f"(`{suggest('review', 'export', '--run-dir', run.url)}`) and run this again, or pass --unverified to use qa/questions"
        )
    e_reader = src.edits.reader(run)
    edits = {e["id"]: e for e in e_reader.iter_shared_rows(pool=pool)}
    return questions, edits


def _require_intact(run: RunFS, stages: tuple[str, ...]) -> None:
    """Refuse to read a finished stage whose files went missing or changed (``tasks.engine.intact``:
    sizes, then sha256): read as it is, it would give fewer questions, or altered ones, without a word."""
    try:
        require_intact(run, stages)
    except DamagedInput as exc:
        raise InputsMissing(str(exc)) from None


def _require_review_export(run: RunFS) -> None:
    """A review export is read only as a complete set (its manifest, every file matching)."""
    from tasks.review.export_set import ExportSetError, require_export_set

    try:
        require_export_set(run, ("verified_edits", "verified_questions"))
    except ExportSetError as exc:
        raise InputsMissing(str(exc)) from None


def input_fingerprint(run: RunFS, unverified: bool) -> str:
    """Hash of the question and edit shard files: the evaluation reruns when they change."""
    src = source_for(unverified)
    parts = []
    for address in (src.questions, src.edits):
        for rel in address.reader(run).shard_files():
            parts.append((rel, file_sha256(run, rel)))  # streamed; once per process (storage.checksums)
    return sha256_hex(canonical_json(parts))[:16]


def rubric(question: dict[str, Any]) -> dict[str, Any]:
    """The question's rubric fields ({} when absent); a malformed rubric names the question."""
    return load_json_column(question.get("rubric_json"), "rubric_json", f"question {question['id']}")


def edit_annotations(questions: list[dict[str, Any]], edits: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per edit id: what the original annotations say (target, original attribute, count,
    objects) and the prior terms a hallucinating answer falls back on."""
    out: dict[str, dict[str, Any]] = {}
    rubrics: dict[
        str, dict[str, Any]
    ] = {}  # per edit: its questions' rubric fields (first value per key), for prior_terms
    for q in questions:
        ann = out.setdefault(q["edit_id"], {"task": q["task"], "objects": set(), "prior_terms": set()})
        r = rubric(q)
        for key, value in r.items():
            rubrics.setdefault(q["edit_id"], {}).setdefault(key, value)
        for key, field in (
            ("removed_object", "target_name"),
            ("original_attribute", "original_attribute"),
            ("new_attribute", "new_attribute"),
            ("attribute_type", "attribute_type"),
        ):
            if r.get(key) and not ann.get(field):
                ann[field] = str(r[key])
        if r.get("count") is not None and ann.get("count") is None:
            try:
                ann["count"] = int(str(r["count"]))
            except ValueError:
                pass
    for edit_id, ann in out.items():
        e = edits.get(edit_id) or {}
        cand = candidate_of(e, f"edit {edit_id}")
        ann.setdefault("target_name", e.get("target_name") or cand.get("target_name"))
        if not ann.get("original_attribute") and cand.get("attribute"):
            ann["original_attribute"] = cand["attribute"]
        if ann.get("count") is None and cand.get("count") is not None:
            ann["count"] = int(cand["count"])
        names = {cand.get("target_name"), cand.get("partner_name"), ann.get("target_name")}
        names |= {o.get("name") for o in context_objects(cand, f"edit {edit_id}")}
        ann["objects"] = sorted(n for n in names if n)
        ann["prior_terms"] = prior_terms({**ann, "rubric": rubrics.get(edit_id, {})})
    return out


def probes_prior(task: str) -> bool:
    """Whether the task's questions can fall back on a prior answer (``TaskSpec.probes_prior``:
    HalluRate counts them); False for a task not registered here."""
    spec = all_tasks().get(task)
    return bool(spec and spec.probes_prior)


def prior_terms(ann: dict[str, Any]) -> list[str]:
    """The words that state the prior answer of an item, from its task's ``prior_terms`` hook
    (none for a task without one)."""
    hook = task_hook(str(ann.get("task")), "prior_terms")
    return list(hook(ann)) if hook is not None else []


def answer_id(question_id: str, mode: str, backend: str, model_id: str) -> str:
    return stable_id("answer", question_id, mode, backend, model_id)
