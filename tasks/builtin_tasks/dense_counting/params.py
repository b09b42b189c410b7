"""DC's sampling settings: the run config's ``mine.dense_counting`` section."""

from __future__ import annotations

from pydantic import Field

from tasks.plugin_api import IntEdges, IntRange, Section


class DenseCountingParams(Section):
    count_range: IntRange = Field(
        (10, 200), description="inclusive [low, high] range of object counts (annotated points) of DC images"
    )
    bins: IntEdges = Field(
        (10, 25, 50, 100, 200), description="count bin edges for stratified DC sampling (at least two, increasing)"
    )
    per_bin: int = Field(20, ge=1, description="DC images drawn per count bin")
    splits: tuple[str, ...] = Field(
        ("train", "val", "test"), description="keys of Train_Test_Val_FSC_147.json to draw DC images from"
    )
