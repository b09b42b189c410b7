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
    batch_size: int = Field(4, ge=1)
    qc: QCParams = QCParams()


class QAConfig(Section):
    mc_mode: Literal["shuffle", "cyclic"] = "shuffle"
    beaf: bool = False
    control_questions: bool = True


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
