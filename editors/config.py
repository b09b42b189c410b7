"""Which editors run, with what parameters, and the auto-QC thresholds (SPEC section 5)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from storage.config_base import NOT_IN_STAGE_KEY, Section


class EditorSpec(Section):
    """One entry of ``editors: [...]``; each runs on every applicable instruction (the ablation)."""

    name: str  # registry name, e.g. classical, qwen-image-edit, sam-lama, instruct-pix2pix
    params: dict[str, Any] = Field(default_factory=dict)
    label: str | None = Field(
        None, description="value of the `editor` column; set it to run one editor twice with different params"
    )
    time_budget_s: float | None = Field(
        300.0,
        gt=0,
        json_schema_extra=NOT_IN_STAGE_KEY,
        description="wall seconds per item (a batch gets the sum); an item over it becomes an `editor_timeout` reject and the batch goes on (a rerun retries it); null: no budget",
    )

    @property
    def key(self) -> str:
        """What rows are keyed by: (instruction id, key)."""
        return self.label or self.name


class VerifyParams(Section):
    """Tolerances of the pixel verification (editors/verify.py): does the edit match its instruction?"""

    enabled: bool = Field(True, description="verify every performed edit against its instruction before review")
    model_checks: bool = Field(
        True,
        description="also ask the MLLM yes/no questions on both images when its backend sees images (openai, transformers)",
    )
    min_change: float = Field(6.0, ge=0, description="removal: mean absolute change inside the object (0-255)")
    min_psnr_outside: float = Field(28.0, ge=0, description="removal: PSNR (dB) outside the erased region plus margin")
    margin_px: int = Field(15, ge=0, description="margin around the erased region excluded from the outside check")
    hue_tolerance: float = Field(
        12.0, ge=0, le=90, description="recolour: circular distance (OpenCV hue units, 0-179) from the named colour"
    )
    min_pattern_contrast: float = Field(
        8.0, ge=0, description="pattern: rise of the value channel's standard deviation inside the object"
    )
    max_similarity_gone: float = Field(
        0.8, ge=-1, le=1, description="template similarity at or above which an object still counts as there"
    )
    min_similarity_found: float = Field(
        0.6, ge=-1, le=1, description="template similarity at or above which an object counts as found"
    )
    search_px: int = Field(6, ge=0, description="template search margin around a destination box")


class QCParams(Section):
    min_change_inside: float = Field(
        4.0, ge=0, description="mean absolute pixel change inside the target region (0-255)"
    )
    min_psnr_outside: float = Field(30.0, ge=0, description="PSNR (dB) outside the dilated target box")
    min_ssim_outside: float = Field(0.9, ge=0, le=1, description="minimum SSIM outside the dilated target box")
    dilation_px: int = Field(15, ge=0, description="margin around the target box that edits may touch")
    max_aspect_change: float = Field(
        0.02, ge=0, description="maximum relative change of the aspect ratio of the editor's raw output"
    )
    verify: VerifyParams = VerifyParams()
