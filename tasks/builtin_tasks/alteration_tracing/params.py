"""AT's mining thresholds: the run config's ``mine.alteration_tracing`` section."""

from __future__ import annotations

from pydantic import Field, model_validator

from tasks.plugin_api import Section


class AlterationTracingParams(Section):
    min_objects: int = Field(15, ge=0, description="images need more than this many annotated objects")
    max_target_area: float = Field(
        0.2, gt=0.0, le=1.0, description="target objects must cover less than this fraction of the image"
    )
    min_target_area: float = Field(0.001, ge=0.0, le=1.0, description="skip specks smaller than this fraction")
    max_images: int = Field(200, ge=1, description="at most this many AT candidate images (seeded sample)")
    edit_types: tuple[str, ...] = Field(
        ("delete", "add", "replace", "move"),
        description="AT edit types assigned in balanced seeded rotation (the others form the fallback chain)",
    )

    @model_validator(mode="after")
    def _area_bounds_ordered(self) -> AlterationTracingParams:
        """min/max target area form one range: inverted, no object qualifies."""
        if self.min_target_area >= self.max_target_area:
            raise ValueError(
                f"min_target_area {self.min_target_area} must be below max_target_area {self.max_target_area}"
            )
        return self
