"""Which editors run, with what parameters, and the auto-QC thresholds (SPEC section 5)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from storage.config_base import Section


class EditorSpec(Section):
    name: str  # registry name, e.g. classical, qwen-image-edit, sam-lama
    params: dict[str, Any] = Field(default_factory=dict)


class QCParams(Section):
    min_change_inside: float = Field(4.0, ge=0, description="mean absolute pixel change inside the target box (0-255)")
    min_psnr_outside: float = Field(30.0, ge=0, description="PSNR (dB) outside the dilated target box")
    min_ssim_outside: float = Field(0.9, ge=0, le=1)
    dilation_px: int = Field(15, ge=0)
    max_aspect_change: float = Field(0.02, ge=0)
