"""The ``mine`` config section's own settings (SPEC section 3), as the miners read them.

The per-task sub-sections (``mine.<task id>``, each validated by the Section class its task's spec
names in ``params``) and the check of ``mine.tasks`` against the registered tasks are the task
room's: :class:`tasks.engine.mine_config.MineConfig` extends :class:`MineSettings` with them, so
this room never looks a task up. The miners read a task's settings with
:meth:`MineSettings.params_for` (``cfg.mine.<id>`` works too).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field

from storage.config_base import Section


class MineSettings(Section):
    """``mine``: the tasks to build, how names are read, and one sub-section per registered task
    (pydantic extras, validated and filled in by :class:`tasks.engine.mine_config.MineConfig`)."""

    model_config = ConfigDict(extra="allow", frozen=True, validate_default=True)

    tasks: tuple[str, ...] = Field(
        (),
        description="tasks to mine (and build), registered task ids; at least one, each once (default: the first in benchmark order)",
    )
    canonical: Literal["name", "synset"] = Field(
        "name", description="group object classes by canonical name or by WordNet synset"
    )
    control: bool = Field(
        False, description="one switch for the tasks' control variants (RE and CA); a task's own `control` wins"
    )
    object_alias: str | None = Field(
        None, description="alias file; default <visual_genome>/object_alias.txt when present"
    )
    relationship_alias: str | None = Field(
        None, description="alias file; default <visual_genome>/relationship_alias.txt when present"
    )
    image_dir: str | None = Field(
        None, description="VG image folder when not VG_100K / VG_100K_2 / images beside the JSON"
    )
    box_tolerance: float = Field(
        0.02, ge=0.0, le=1.0, description="fraction of the image side a box may leave the image"
    )
    context_max_objects: int = Field(60, ge=0, description="other objects listed in a candidate's context_json")
    stats_min_count: int = Field(
        1, ge=1, description="pairs / object-attribute rows below this count are not written to the stats"
    )
    block_mb: int = Field(8, ge=1, description="read block of the streaming JSON reader")
    reader: Literal["auto", "duckdb", "msgspec"] = Field(
        "auto", description="VG JSON reader: DuckDB (fast, C++) with msgspec fallback, or msgspec only"
    )
    threads: int = Field(2, ge=1, description="DuckDB reader threads")
    extend_from: str | None = Field(
        None,
        description="extension mode: a previous run directory or release folder whose selection is kept; "
        "added source images only fill the room left under each cap (docs/versions.md)",
    )

    def params_for(self, task: str) -> Section | None:
        """The validated ``mine.<task>`` section; None for a task without settings."""
        return (self.__pydantic_extra__ or {}).get(task)

    def control_for(self, task: str) -> bool:
        """Whether ``task`` emits control variants: its own ``control`` setting, else ``mine.control``."""
        own = getattr(self.params_for(task), "control", None)
        return self.control if own is None else bool(own)

    def stage_key(self) -> dict[str, Any]:
        """Section.stage_key over the declared fields, plus the sections of the tasks mined:
        installing a task plugin, or editing a task that is not mined, re-mines nothing."""
        out = super().stage_key()
        for task, params in (self.__pydantic_extra__ or {}).items():
            if task in self.tasks:
                out[task] = params.stage_key() if isinstance(params, Section) else params
        return out


__all__ = ["MineSettings"]
