"""RE's mining thresholds: the run config's ``mine.relational_erasure`` section."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from tasks.plugin_api import FractionRange, Section


class RelationalErasureParams(Section):
    n_min: int = Field(50, ge=1, description="minimum C(A∩B) for a pair to be kept")
    theta: float = Field(0.2, ge=0.0, le=1.0, description="minimum max(P(B|A), P(A|B))")
    count_unit: Literal["images", "relations"] = Field(
        "images",
        description="C(A) and C(A∩B) count images, or relationships (A's relationships; those linking A and B)",
    )
    area_range: FractionRange = Field(
        (0.005, 0.5),
        description="[low, high] erased (RE) / edited (CA) box area as a fraction of the image, both in [0, 1]",
    )
    images_per_pair: int = Field(
        20, ge=1, description="at most this many candidate images per kept pair (seeded sample)"
    )
    control: bool | None = Field(None, description="emit control variants; None follows mine.control")
