"""Settings of the stages themselves (beyond the miners', MLLM's and editors' own sections)."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator

from editors.config import QCParams
from storage.config_base import NOT_IN_STAGE_KEY, Section

# Reject reasons of passing item failures: never stored for reuse, recomputed by a rerun
# (the default of orchestration.rerun_reject_reasons). A timeout depends on the node's load,
# and a raised editors[].time_budget_s must reach the items that ran out of it.
TRANSIENT_REJECT_REASONS = ("out_of_memory", "llm_error", "editor_timeout")


class InstructConfig(Section):
    dedup_counterfactuals: bool = Field(
        True,
        description="drop CA instructions whose new attribute repeats another's for the same object (FREAK-style)",
    )
    embedding_model: str | None = Field(
        None, description="local sentence-embedding model folder for paraphrase-level dedup / judging (optional)"
    )
    embedding_threshold: float = Field(
        0.9, ge=0, le=1, description="cosine similarity above which two texts count as the same"
    )


class EditConfig(Section):
    batch_size: int = Field(
        4,
        ge=1,
        description="requests per editor call (capped by the editor's own batch_size)",
        json_schema_extra=NOT_IN_STAGE_KEY,
    )
    keep_loaded: int = Field(
        1,
        ge=1,
        description="model editors kept loaded per worker process (ablations of big models)",
        json_schema_extra=NOT_IN_STAGE_KEY,
    )
    record_timings: bool = Field(
        False, description="fill edits.edit_seconds (wall time varies, so artifacts stop being byte-identical)"
    )
    png_compress_level: int = Field(
        1, ge=0, le=9, description="zlib level of edited PNGs: 1 is ~4x faster than 6 for ~5% more bytes"
    )
    overlap_io: bool = Field(
        True,
        description="read the next batch and QC/encode/write the previous one while the editor runs",
        json_schema_extra=NOT_IN_STAGE_KEY,
    )
    qc: QCParams = QCParams()


class QAConfig(Section):
    mc_mode: Literal["shuffle", "cyclic"] = Field(
        "shuffle",
        description="shuffle: one seeded order per MC question; cyclic: every rotation of the options (FREAK)",
    )
    beaf: bool = Field(
        False, description="also emit the BEAF existence questions for removals (original and edited image)"
    )
    control_questions: bool = Field(True, description="AT control questions about the unchanged location and object")
    balance_yes_no: bool = Field(
        False,
        description="add the positively phrased twin (gold Yes) of each No question that has one, rotating which form is targeted; off: the paper's sets",
    )
    mc_length_ratio: float = Field(
        1.5,
        gt=1.0,
        description="reject MC when the correct option is this many times longer than every distractor ...",
    )
    mc_length_min_gap: int = Field(15, ge=0, description="... and at least this many characters longer")


class ReviewConfig(Section):
    db_url: str | None = Field(
        None,
        description="review queue database; default sqlite in <run>/review/queue.sqlite; postgresql://... for a team",
    )
    lease_minutes: float = Field(
        15.0, gt=0, description="an item leased to an annotator returns to the queue after this long"
    )
    k: int = Field(1, ge=1, description="annotations per item")
    queue_auto_rejected: bool = Field(False, description="also queue edits that failed auto-QC")
    db_pool_size: int = Field(
        10,
        ge=1,
        le=200,
        description="pooled connections per review process; on PostgreSQL a process may open 3 x this + 4 (overflow, session reads): size max_connections for every process",
    )


class ExportConfig(Section):
    vlmevalkit_tsv: bool = Field(
        False,
        description="also write the VLMEvalKit release: a TSV per question type (PNG images), the --config file naming their classes and the launcher that registers them, scoring with the release's parser",
    )
    lmms_eval_yaml: bool = Field(False, description="also write an lmms-eval task YAML")
    version: str | None = Field(
        None,
        pattern=r"^[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}$",
        description="the release's version (e.g. 1.1.0): recorded in its manifest and card, and in the VLMEvalKit file names; null = unversioned",
    )
    hub_repo: str | None = Field(
        None,
        description="Hugging Face dataset repo the release is pushed to (owner/name): the lmms-eval tasks load it from there when export.revision is set",
    )
    revision: str | None = Field(
        None,
        description="hub revision (commit sha or tag) the lmms-eval tasks pin with dataset_kwargs.revision; needs export.hub_repo",
    )


class EvalConfig(Section):
    modes: tuple[Literal["standard", "cot"], ...] = Field(
        ("standard", "cot"), description="answering modes: standard and chain-of-thought"
    )
    temperature: float = Field(0.2, description="sampling temperature of evaluated models")
    max_tokens: int = Field(1024, description="maximum tokens per evaluated answer")
    judge: str | None = Field(
        None,
        description="BACKEND:MODEL of the LLM judge for SA answers, sub-causes and spans; None = offline rules judge",
    )
    judge_base_url: str | None = Field(
        None, description="OpenAI-compatible endpoint of the judge (default: mllm.base_url)"
    )
    embedding_model: str | None = Field(
        None, description="local sentence-embedding model folder for paraphrase-level dedup / judging (optional)"
    )
    embedding_threshold: float = Field(
        0.8,
        ge=-1,
        le=1,
        description="cosine similarity to the reference above which the offline judge accepts a paraphrase",
    )
    extract_with_judge: bool = Field(
        False,
        description="ask the judge for the Yes/No or letter of a reply the rules cannot read (answers record parsed_by: rules | judge)",
    )
    subcauses: bool = Field(True, description="attribute CoT-hallucinated answers to the task's sub-causes")
    spans: bool = Field(True, description="MHALO-style span detection on CoT-hallucinated answers")


class HealthConfig(Section):
    """``health:``: the figures over which ``reactbench export --strict`` refuses a release.

    Without ``--strict`` an export over them only warns (the paper's own design has all-"No" yes/no
    types, so the defaults flag it rather than forbid it)."""

    max_trivial_accuracy: float = Field(
        0.9,
        ge=0.0,
        le=1.0,
        description="most a trivial model (always Yes / No, one fixed letter, the most frequent short answer) may score on any task and question type of the main set",
    )
    max_trivial_accuracy_by: dict[str, float] = Field(
        default_factory=dict,
        description='per "<task>/<qtype>" (e.g. counterfactual_attribute/YN: 0.6): overrides max_trivial_accuracy',
    )
    max_blind_prior_targeted: float = Field(
        0.5,
        ge=0.0,
        le=1.0,
        description="most the blind prior model (question text + mined statistics, no image) may score on any task's targeted items",
    )
    max_duplicate_share: float = Field(
        0.05,
        ge=0.0,
        le=1.0,
        description="most share of items that repeat another item's question with the same gold, or of source images near-identical to another",
    )
    image_hash_distance: int = Field(
        4,
        ge=0,
        le=64,
        description="perceptual-hash (pHash, 64 bits) Hamming distance at or under which two images are near-duplicates",
    )


GUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")  # datasheet.canary_guid


class DatasheetConfig(Section):
    """The ``datasheet:`` section: what a release's metadata says that the run cannot know
    (``tasks.release.export.datasheet`` names the empty ones at export)."""

    name: str | None = Field(
        None,
        description="the benchmark's name (card title, Croissant name; seeds the default canary); default: ReactBench-style hallucination benchmark",
    )
    canary_guid: str | None = Field(
        None,
        description="the benchmark's contamination canary (a lowercase GUID), kept across its versions; default: derived from the release name",
    )
    url: str | None = Field(None, description="the release's home page or hub URL (Croissant url)")
    creators: tuple[str, ...] = Field((), description="authors of the benchmark (Croissant creator)")
    citation: str | None = Field(
        None, description="BibTeX to cite the benchmark (Croissant citeAs); default: a @misc entry from the name"
    )
    intended_use: str | None = Field(
        None, description="what the benchmark is for and what it is not for (rai:dataUseCases)"
    )
    social_impact: str | None = Field(None, description="expected social impact of the release (rai:dataSocialImpact)")
    limitations: str | None = Field(
        None, description="limitations beyond those the run records (rai:dataLimitations, added to the recorded ones)"
    )
    biases: str | None = Field(
        None, description="known biases beyond those the run measures (rai:dataBiases, added to the measured ones)"
    )
    personal_sensitive_information: str | None = Field(
        None,
        description="people, faces, text or other personal data the images may show and how that was handled (rai:personalSensitiveInformation)",
    )
    maintenance_plan: str | None = Field(
        None,
        description="who maintains the release, how errors are reported and fixed (rai:dataReleaseMaintenancePlan)",
    )
    annotator_demographics: str | None = Field(
        None, description="who the human reviewers were, as far as disclosed (rai:annotatorDemographics)"
    )

    @field_validator("canary_guid")
    @classmethod
    def _guid(cls, value: str | None) -> str | None:
        if value is not None and not GUID.match(value):
            raise ValueError(f"{value!r} is not a lowercase GUID like 1f0c6a52-7d1e-4f6b-9a43-2b8e5c1d9f70")
        return value
