"""CA's mining thresholds: the run config's ``mine.counterfactual_attribute`` section."""

from __future__ import annotations

from pydantic import Field, field_validator

from tasks.plugin_api import FloatRange, Section


class CounterfactualAttributeParams(Section):
    n_min: int = Field(50, ge=1, description="minimum C(o∩a) for an object-attribute pair to be kept")
    theta: float = Field(0.2, ge=0.0, le=1.0, description="minimum P(a|o)")
    top_k: int = Field(3, ge=1, description="dominant attributes kept per object")
    area_range: FloatRange = Field(
        (0.05, 0.8),
        description="[low, high] erased (RE) / edited (CA) box area as a fraction of the image, both in [0, 1]",
    )
    images_per_attribute: int = Field(
        20, ge=1, description="at most this many candidate instances per (object, attribute)"
    )
    control: bool | None = Field(None, description="emit control variants; None follows mine.control")

    @field_validator("area_range")
    @classmethod
    def _a_fraction(cls, pair: tuple[float, float]) -> tuple[float, float]:
        """An area is a fraction of the image: a bound over 1 (or below 0) selects what cannot exist."""
        if not all(0.0 <= v <= 1.0 for v in pair):
            raise ValueError(f"{list(pair)} is outside [0, 1]: an area is a fraction of the image, e.g. [0.005, 0.5]")
        return pair
