"""Mining thresholds per task (SPEC section 3). Defaults are the paper's settings."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from storage.config_base import FloatRange, IntEdges, IntRange, Section
from storage.task_ids import TASK_IDS as ALL_TASKS, TaskId  # noqa: F401 - ALL_TASKS re-exported for the miners


class RelationalErasureParams(Section):
    n_min: int = Field(50, ge=1, description="minimum C(A∩B) for a pair to be kept")
    theta: float = Field(0.2, ge=0.0, le=1.0, description="minimum max(P(B|A), P(A|B))")
    count_unit: Literal["images", "relations"] = Field("images", description="C(A) and C(A∩B) count images, or relationships (A's relationships; those linking A and B)")
    area_range: FloatRange = Field((0.005, 0.5), description="[low, high] erased (RE) / edited (CA) box area as a fraction of the image")
    images_per_pair: int = Field(20, ge=1, description="at most this many candidate images per kept pair (seeded sample)")
    control: bool | None = Field(None, description="emit control variants; None follows mine.control")


class CounterfactualAttributeParams(Section):
    n_min: int = Field(50, ge=1, description="minimum C(o∩a) for an object-attribute pair to be kept")
    theta: float = Field(0.2, ge=0.0, le=1.0, description="minimum P(a|o)")
    top_k: int = Field(3, ge=1, description="dominant attributes kept per object")
    area_range: FloatRange = Field((0.05, 0.8), description="[low, high] erased (RE) / edited (CA) box area as a fraction of the image")
    images_per_attribute: int = Field(20, ge=1, description="at most this many candidate instances per (object, attribute)")
    control: bool | None = Field(None, description="emit control variants; None follows mine.control")


class AlterationTracingParams(Section):
    min_objects: int = Field(15, ge=0, description="images need more than this many annotated objects")
    max_target_area: float = Field(0.2, gt=0.0, le=1.0, description="target objects must cover less than this fraction of the image")
    min_target_area: float = Field(0.001, ge=0.0, le=1.0, description="skip specks smaller than this fraction")
    max_images: int = Field(200, ge=1, description="at most this many AT candidate images (seeded sample)")
    edit_types: tuple[str, ...] = Field(("delete", "add", "replace", "move"), description="AT edit types assigned in balanced seeded rotation (the others form the fallback chain)")

    @model_validator(mode="after")
    def _area_bounds_ordered(self) -> "AlterationTracingParams":
        """min/max target area form one range: inverted, no object qualifies."""
        if self.min_target_area >= self.max_target_area:
            raise ValueError(f"min_target_area {self.min_target_area} must be below max_target_area {self.max_target_area}")
        return self


class DenseCountingParams(Section):
    count_range: IntRange = Field((10, 200), description="inclusive [low, high] range of object counts (annotated points) of DC images")
    bins: IntEdges = Field((10, 25, 50, 100, 200), description="count bin edges for stratified DC sampling (at least two, increasing)")
    per_bin: int = Field(20, ge=1, description="DC images drawn per count bin")
    splits: tuple[str, ...] = Field(("train", "val", "test"), description="keys of Train_Test_Val_FSC_147.json to draw DC images from")


class MineConfig(Section):
    tasks: tuple[TaskId, ...] = Field(("relational_erasure",), description="tasks to mine (and build); at least one")
    canonical: Literal["name", "synset"] = Field("name", description="group object classes by canonical name or by WordNet synset")
    control: bool = Field(False, description="one switch for the RE and CA control variants")
    object_alias: str | None = Field(None, description="alias file; default <visual_genome>/object_alias.txt when present")
    relationship_alias: str | None = Field(None, description="alias file; default <visual_genome>/relationship_alias.txt when present")
    image_dir: str | None = Field(None, description="VG image folder when not VG_100K / VG_100K_2 / images beside the JSON")
    box_tolerance: float = Field(0.02, ge=0.0, le=1.0, description="fraction of the image side a box may leave the image")
    context_max_objects: int = Field(60, ge=0, description="other objects listed in a candidate's context_json")
    stats_min_count: int = Field(1, ge=1, description="pairs / object-attribute rows below this count are not written to the stats")
    block_mb: int = Field(8, ge=1, description="read block of the streaming JSON reader")
    reader: Literal["auto", "duckdb", "msgspec"] = Field("auto", description="VG JSON reader: DuckDB (fast, C++) with msgspec fallback, or msgspec only")
    threads: int = Field(2, ge=1, description="DuckDB reader threads")
    relational_erasure: RelationalErasureParams = RelationalErasureParams()
    counterfactual_attribute: CounterfactualAttributeParams = CounterfactualAttributeParams()
    alteration_tracing: AlterationTracingParams = AlterationTracingParams()
    dense_counting: DenseCountingParams = DenseCountingParams()

    @field_validator("tasks")
    @classmethod
    def _some_task(cls, tasks: tuple[str, ...]) -> tuple[str, ...]:
        """An empty list would build an empty benchmark and exit 0."""
        if not tasks:
            raise ValueError(f"list at least one task; choices: {', '.join(ALL_TASKS)}")
        return tasks

    def control_for(self, task: str) -> bool:
        own = getattr(self, task).control
        return self.control if own is None else bool(own)
