"""CA's mining thresholds: the run config's ``mine.counterfactual_attribute`` section."""

from __future__ import annotations

from pydantic import Field

from tasks.plugin_api import FractionRange, Section


class CounterfactualAttributeParams(Section):
    n_min: int = Field(50, ge=1, description="minimum C(o∩a) for an object-attribute pair to be kept")
    theta: float = Field(0.2, ge=0.0, le=1.0, description="minimum P(a|o)")
    top_k: int = Field(3, ge=1, description="dominant attributes kept per object")
    area_range: FractionRange = Field(
        (0.05, 0.8),
        description="[low, high] erased (RE) / edited (CA) box area as a fraction of the image, both in [0, 1]",
    )
    images_per_attribute: int = Field(
        20, ge=1, description="at most this many candidate instances per (object, attribute)"
    )
    control: bool | None = Field(None, description="emit control variants; None follows mine.control")
