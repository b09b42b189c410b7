"""Settings of the stages themselves (beyond the miners', MLLM's and editors' own sections)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from editors.config import QCParams
from storage.config_base import Section


class InstructConfig(Section):
    dedup_counterfactuals: bool = True
    embedding_model: str | None = None  # local sentence-embedding model path, when installed
    embedding_threshold: float = Field(0.9, ge=0, le=1)


class EditConfig(Section):
    batch_size: int = Field(4, ge=1, description="requests per editor call (capped by the editor's own batch_size)")
    keep_loaded: int = Field(1, ge=1, description="model editors kept loaded per worker process (ablations of big models)")
    record_timings: bool = Field(False, description="fill edits.edit_seconds (wall time varies, so artifacts stop being byte-identical)")
    png_compress_level: int = Field(1, ge=0, le=9, description="zlib level of edited PNGs: 1 is ~4x faster than 6 for ~5% more bytes")
    overlap_io: bool = Field(True, description="read the next batch and QC/encode/write the previous one while the editor runs")
    qc: QCParams = QCParams()


class QAConfig(Section):
    mc_mode: Literal["shuffle", "cyclic"] = "shuffle"
    beaf: bool = False
    control_questions: bool = True
    mc_length_ratio: float = Field(1.5, gt=1.0, description="reject MC when the correct option is this many times longer than every distractor ...")
    mc_length_min_gap: int = Field(15, ge=0, description="... and at least this many characters longer")


class ReviewConfig(Section):
    db_url: str | None = None  # default: sqlite:///<run>/review/queue.sqlite
    lease_minutes: float = Field(15.0, gt=0)
    k: int = Field(1, ge=1, description="annotations per item")
    queue_auto_rejected: bool = False


class ExportConfig(Section):
    vlmevalkit_tsv: bool = False
    lmms_eval_yaml: bool = False


class EvalConfig(Section):
    modes: tuple[Literal["standard", "cot"], ...] = ("standard", "cot")
    temperature: float = 0.2
    max_tokens: int = 1024
    judge: str | None = Field(None, description="BACKEND:MODEL of the LLM judge for SA answers, sub-causes and spans; None = offline rules judge")
    judge_base_url: str | None = None  # OpenAI-compatible endpoint of the judge (defaults to mllm.base_url)
    embedding_model: str | None = None  # local sentence-embedding model folder for the offline SA judge (optional)
    embedding_threshold: float = Field(0.8, ge=-1, le=1, description="cosine similarity to the reference above which the offline judge accepts a paraphrase")
    subcauses: bool = True  # attribute CoT-hallucinated answers to the task's sub-causes
    spans: bool = True  # MHALO-style span detection on CoT-hallucinated answers
