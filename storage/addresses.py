"""Where each artifact lives in a run directory (``<stage>/<name>``), paired with its schema:
the one place a stage, an export or a report looks an artifact up, instead of writing
``"edit/edits"`` and picking the schema by hand. (The review queue's own artifact, read only by
the review stage, has its schema in ``tasks/review/stage.py`` and its address here through
:func:`review_queue`.) Files that are not Parquet artifacts (reports, evaluations, the review
database and export manifest) are named here too, so a moved folder is one edit.
``tests/flows/test_one_place.py`` fails on a literal artifact path anywhere else.)"""

from __future__ import annotations

from dataclasses import dataclass

from storage import schemas
from storage.fs import RunFS
from storage.parquet_io import ArtifactReader
from storage.schemas import ArtifactSchema


@dataclass(frozen=True)
class Address:
    stage: str
    name: str
    schema: ArtifactSchema

    @property
    def folder(self) -> str:
        """The folder relative to the run directory, e.g. ``edit/edits``."""
        return f"{self.stage}/{self.name}"

    def reader(self, run: RunFS) -> ArtifactReader:
        return ArtifactReader(run, self.folder, self.schema)


def outputs(*addresses: Address) -> dict[str, ArtifactSchema]:
    """A stage's ``outputs`` mapping (artifact name -> schema) from its addresses."""
    return {a.name: a.schema for a in addresses}


CANDIDATES = Address("mine", "candidates", schemas.CANDIDATES)
PAIR_STATS = Address("mine", "pair_stats", schemas.PAIR_STATS)
ATTRIBUTE_STATS = Address("mine", "attribute_stats", schemas.ATTRIBUTE_STATS)
INSTRUCTIONS = Address("instruct", "instructions", schemas.INSTRUCTIONS)
EDITS = Address("edit", "edits", schemas.EDITS)
ANALYSIS = Address("qa", "analysis", schemas.ANALYSIS)
QUESTIONS = Address("qa", "questions", schemas.QUESTIONS)
VERIFIED_EDITS = Address("review", "verified_edits", schemas.VERIFIED_EDITS)
VERIFIED_QUESTIONS = Address("review", "verified_questions", schemas.VERIFIED_QUESTIONS)
DECISIONS = Address("review", "decisions", schemas.DECISIONS)


def rejects(stage: str) -> Address:
    return Address(stage, "rejects", schemas.REJECTS)


def review_queue(schema: ArtifactSchema) -> Address:
    """The review queue's address; its schema lives with the review stage (above this layer)."""
    return Address("review", "queue", schema)


# Run-directory files and folders that are not Parquet artifacts.
CONFIG_FILE = "config.yaml"
REVIEW_DIR = "review"
REVIEW_DB = f"{REVIEW_DIR}/queue.sqlite"
REVIEW_EXPORT_MANIFEST = f"{REVIEW_DIR}/export_manifest.json"
EVAL_DIR = "eval"
REPORTS_DIR = "reports"


def review_export(name: str) -> str:
    """A review-export folder (``verified_edits``, ``verified_questions``, ``decisions``)."""
    return f"{REVIEW_DIR}/{name}"


def evaluation(slug: str) -> str:
    """One model's evaluation folder, ``eval/<slug>``."""
    return f"{EVAL_DIR}/{slug}"


def report_file(kind: str) -> str:
    """Where ``reactbench report <kind>`` writes its HTML by default."""
    return f"{REPORTS_DIR}/{kind}.html"
