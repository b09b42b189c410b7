"""The ``mine`` config section (SPEC section 3). Each task's own thresholds are the Section
class its spec's ``params`` names (the built-ins': ``tasks/builtin_tasks/<id>/params.py``).

Per-task settings come from the task registry (``storage/task_spec.py``): ``mine.<task id>``
validates against the Section class its spec's ``params`` hook names, and every registered task
with a ``params`` hook gets its defaults filled in, in benchmark order, so the saved
``config.yaml`` lists them all. Read them with :meth:`MineConfig.params_for` (``cfg.mine.<id>``
works too); ``mine.tasks`` validates against the registry.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    ModelWrapValidatorHandler,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError, core_schema

from storage.config_base import Section
from storage.task_spec import TaskError, all_tasks, check_task_id, task_ids, task_spec


class TaskId(str):
    """A registered task id, as a config type: validates with ``storage.task_spec.check_task_id``
    (an unknown id fails with the choices) and yields a plain ``str``."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(check_task_id, core_schema.str_schema())


def task_params_class(task: str) -> type[Section] | None:
    """The Section class of ``mine.<task>`` (the spec's ``params`` hook), None for a task without settings."""
    spec = task_spec(task)
    return spec.hook("params") if spec.has("params") else None


class MineConfig(Section):
    """``mine``: the tasks to build, how names are read, and one sub-section per registered task.

    The task sub-sections are not declared fields: they are the registry's (pydantic extras,
    validated by :meth:`_task_sections`), so a third-party task's ``mine.<id>`` needs no change here.
    """

    model_config = ConfigDict(extra="allow", frozen=True, validate_default=True)

    tasks: tuple[TaskId, ...] = Field(
        default_factory=lambda: task_ids()[:1],
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

    @model_validator(mode="wrap")
    @classmethod
    def _task_sections(cls, data: object, handler: ModelWrapValidatorHandler[MineConfig]) -> MineConfig:
        """``mine.<task id>`` against the registered task's params class; defaults for every
        registered task; any other unknown key fails with the settings and tasks that exist.
        Errors keep their key paths (``mine.<task>.<key>``)."""
        if not isinstance(data, dict):
            return handler(data)
        own = {k: v for k, v in data.items() if k in cls.model_fields}
        errors: list[dict[str, Any]] = []
        sections: dict[str, Any] = {}
        registered = all_tasks()
        for key, value in data.items():
            if key in cls.model_fields:
                continue
            params = task_params_class(key) if key in registered else None
            if params is None:
                what = f"task {key!r} takes no mine settings" if key in registered else "unknown key"
                errors.append(
                    {
                        "type": PydanticCustomError(
                            "extra_forbidden",
                            "{what}; mine settings: {fields}; task sections: {tasks}",
                            {"what": what, "fields": ", ".join(cls.model_fields), "tasks": ", ".join(_sectioned())},
                        ),
                        "loc": (key,),
                        "input": value,
                    }
                )
                continue
            try:
                sections[key] = (
                    value if isinstance(value, params) else params.model_validate(value if value is not None else {})
                )
            except ValidationError as exc:
                errors += [
                    {
                        "type": e["type"],
                        "loc": (key, *e["loc"]),
                        "input": e["input"],
                        **({"ctx": e["ctx"]} if "ctx" in e else {}),
                    }
                    for e in exc.errors()
                ]
        for task in _sectioned():  # registry order: the saved config lists the sections in benchmark order
            if task not in sections and not any(e["loc"][:1] == (task,) for e in errors):
                sections[task] = task_params_class(task)()
        try:
            out = handler({**own, **dict(sorted(sections.items(), key=lambda kv: _position(kv[0])))})
        except ValidationError as exc:
            errors = [*({k: e[k] for k in ("type", "loc", "input", "ctx") if k in e} for e in exc.errors()), *errors]
            out = None
        if errors:
            raise ValidationError.from_exception_data(cls.__name__, errors)
        return out

    @field_validator("tasks")
    @classmethod
    def _some_task(cls, tasks: tuple[str, ...]) -> tuple[str, ...]:
        """An empty list would build an empty benchmark and exit 0."""
        if not tasks:
            raise ValueError(f"list at least one task; choices: {', '.join(task_ids())}")
        twice = sorted({t for t in tasks if tasks.count(t) > 1})
        if twice:
            raise ValueError(f"{', '.join(twice)} listed more than once; list each task once")
        return tasks

    @classmethod
    def task_sections(cls) -> dict[str, type[Section]]:
        """``mine.<task>`` -> its Section class, for every registered task with settings (benchmark order)."""
        return {task: task_params_class(task) for task in _sectioned()}

    def params_for(self, task: str) -> Section | None:
        """The validated ``mine.<task>`` section (its defaults when the config predates the task's
        registration); None for a task without settings."""
        extra = self.__pydantic_extra__ or {}
        if task in extra:
            return extra[task]
        params = task_params_class(task)
        return params() if params is not None else None

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


def _sectioned() -> list[str]:
    """Registered tasks with a ``params`` hook, in benchmark order."""
    return [t for t, spec in all_tasks().items() if spec.has("params")]


def _position(task: str) -> int:
    ids = task_ids()
    return ids.index(task) if task in ids else len(ids)


__all__ = ["MineConfig", "TaskError", "TaskId", "task_params_class"]
