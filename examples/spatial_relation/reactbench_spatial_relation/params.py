"""The ``mine.spatial_relation`` section: which pairs count as having a dominant direction, and
which relationship instances become items."""

from __future__ import annotations

from pydantic import Field, field_validator

from tasks.plugin_api import FractionRange, Section


class SpatialRelationParams(Section):
    n_min: int = Field(
        20, ge=1, description="minimum number of spatial relationships linking a pair of classes (either order)"
    )
    theta: float = Field(
        0.6,
        ge=0.0,
        le=1.0,
        description="minimum P(relation | pair): the dominant relation's share of the pair's spatial relationships",
    )
    area_range: FractionRange = Field(
        (0.002, 0.25), description="[low, high] area of the moved object's box as a fraction of the image"
    )
    unique_instances: bool = Field(
        True,
        description="only images with one annotated instance of each of the two classes (so 'the cup' names one object)",
    )
    images_per_pair: int = Field(
        20, ge=1, description="at most this many candidate images per kept pair (seeded sample)"
    )
    max_candidates: int = Field(60, ge=1, description="at most this many candidates in all")
    gap: float = Field(
        0.04,
        ge=0.0,
        le=0.5,
        description="clearance between the moved object and the other one, as a fraction of the shorter image side",
    )
    max_overlap: float = Field(
        0.05,
        ge=0.0,
        le=1.0,
        description="the moved object may cover at most this fraction of another annotated object (or of itself)",
    )
    sides: tuple[str, ...] = Field(
        ("left", "right", "below", "above"),
        description="where the moved object may go, tried in this order after a seeded rotation",
    )

    @field_validator("sides")
    @classmethod
    def _known_sides(cls, sides: tuple[str, ...]) -> tuple[str, ...]:
        from reactbench_spatial_relation.geometry import SIDES

        bad = [s for s in sides if s not in SIDES]
        if bad or not sides:
            raise ValueError(f"sides must be some of {sorted(SIDES)}, got {list(sides)}")
        return sides
