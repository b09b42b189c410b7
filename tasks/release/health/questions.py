"""The question table the health figures are computed from: one columnar read, no row dicts."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from storage.fs import RunFS
from tasks.release.items import InputsMissing, source_for

COLUMNS = [
    "id",
    "edit_id",
    "task",
    "variant",
    "question_set",
    "qid",
    "qtype",
    "dimension",
    "text",
    "options",
    "gold",
    "rotation",
    "images",
]
MAIN = "main"
CONTROL = "control"


@dataclass(frozen=True)
class HealthInputs:
    """Questions (``COLUMNS``), each edit's original image, and which source they came from."""

    questions: pa.Table
    originals: pa.Table  # edit_id, task, original_image
    unverified: bool

    @property
    def label(self) -> str:
        return source_for(self.unverified).label


def choose_source(run: RunFS, unverified: bool | None) -> bool:
    """``unverified`` as asked; when not asked, the review export if the run has one, else qa/questions."""
    if unverified is not None:
        return unverified
    return not source_for(False).questions.reader(run).exists()


def read_health_inputs(run: RunFS, unverified: bool | None = None) -> HealthInputs:
    """Read the questions and edits once, only the columns the figures need."""
    unverified = choose_source(run, unverified)
    src = source_for(unverified)
    q_reader = src.questions.reader(run)
    if not q_reader.exists():
        hint = "run `reactbench build` first" if unverified else "export the review decisions first"
        raise InputsMissing(f"{run.path(src.questions.folder)}: no question shards found; {hint}")
    questions = q_reader.read(COLUMNS)
    e_reader = src.edits.reader(run)
    originals = (
        e_reader.read(["id", "task", "original_image"]).rename_columns(["edit_id", "task", "original_image"])
        if e_reader.exists()
        else pa.table(
            {
                "edit_id": pa.array([], pa.string()),
                "task": pa.array([], pa.string()),
                "original_image": pa.array([], pa.string()),
            }
        )
    )
    kept = pc.is_in(originals.column("edit_id"), value_set=pc.unique(questions.column("edit_id")))
    return HealthInputs(questions, originals.filter(kept), unverified)


def first_presentations(questions: pa.Table) -> pa.Table:
    """One row per question: a cyclic MC question's first presentation only (rotation 0 or null)."""
    rot = questions.column("rotation")
    return questions.filter(pc.or_kleene(pc.is_null(rot), pc.equal(rot, 0)))


def main_targeted(questions: pa.Table) -> pa.Table:
    """The rows React-Score is computed on: the main set of the targeted variant."""
    return questions.filter(
        pc.and_(pc.equal(questions.column("question_set"), MAIN), pc.not_equal(questions.column("variant"), CONTROL))
    )


def is_control(questions: pa.Table) -> pa.ChunkedArray:
    """Control items: the control variant, or a control question set (AT's unchanged-place questions)."""
    return pc.or_(pc.equal(questions.column("variant"), CONTROL), pc.equal(questions.column("question_set"), CONTROL))
