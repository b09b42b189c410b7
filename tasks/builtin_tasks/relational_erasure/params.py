"""RE's mining thresholds: the run config's ``mine.relational_erasure`` section."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from tasks.plugin_api import FloatRange, Section


class RelationalErasureParams(Section):
    n_min: int = Field(50, ge=1, description="minimum C(A∩B) for a pair to be kept")
    theta: float = Field(0.2, ge=0.0, le=1.0, description="minimum max(P(B|A), P(A|B))")
    count_unit: Literal["images", "relations"] = Field(
        "images",
        description="C(A) and C(A∩B) count images, or relationships (A's relationships; those linking A and B)",
    )
    area_range: FloatRange = Field(
        (0.005, 0.5),
        description="[low, high] erased (RE) / edited (CA) box area as a fraction of the image, both in [0, 1]",
    )
    images_per_pair: int = Field(
        20, ge=1, description="at most this many candidate images per kept pair (seeded sample)"
    )
    control: bool | None = Field(None, description="emit control variants; None follows mine.control")

    @field_validator("area_range")
    @classmethod
    def _a_fraction(cls, pair: tuple[float, float]) -> tuple[float, float]:
        """An area is a fraction of the image: a bound over 1 (or below 0) selects what cannot exist."""
        if not all(0.0 <= v <= 1.0 for v in pair):
            raise ValueError(f"{list(pair)} is outside [0, 1]: an area is a fraction of the image, e.g. [0.005, 0.5]")
        return pair
