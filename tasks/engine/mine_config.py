"""The ``mine`` config section as a run config validates it: :class:`miners.config.MineSettings`
plus what only the task registry can answer.

``mine.<task id>`` validates against the Section class its spec's ``params`` hook names (the
built-ins': ``tasks/builtin_tasks/<id>/params.py``), and every registered task with a ``params``
hook gets its defaults filled in, in benchmark order, so the saved ``config.yaml`` lists them all;
``mine.tasks`` validates against the registry. It lives in the task room because it looks tasks up;
the miners read only the settings (``MineSettings``).
"""

from __future__ import annotations

from typing import Any

from pydantic import (
    Field,
    GetCoreSchemaHandler,
    ModelWrapValidatorHandler,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError, core_schema

from miners.config import MineSettings
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


class MineConfig(MineSettings):
    """``mine``: the tasks to build, how names are read, and one sub-section per registered task.

    The task sub-sections are not declared fields: they are the registry's (pydantic extras,
    validated by :meth:`_task_sections`), so a third-party task's ``mine.<id>`` needs no change here.
    """

    tasks: tuple[TaskId, ...] = Field(
        default_factory=lambda: task_ids()[:1],
        description="tasks to mine (and build), registered task ids; at least one, each once (default: the first in benchmark order)",
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


def _sectioned() -> list[str]:
    """Registered tasks with a ``params`` hook, in benchmark order."""
    return [t for t, spec in all_tasks().items() if spec.has("params")]


def _position(task: str) -> int:
    ids = task_ids()
    return ids.index(task) if task in ids else len(ids)


__all__ = ["MineConfig", "TaskError", "TaskId", "task_params_class"]
