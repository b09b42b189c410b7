"""The task registry: every :class:`~storage.task_spec.TaskSpec` by id, from the
``reactbench.tasks`` entry points (the four built-in tasks too) and :func:`register_task`, and the
importer of their ``"module:attr"`` hooks.

Why here and not beside the spec: resolving a task imports its package, and a task package sits in
this room (``tasks/``). The spec (data and its checks) stays in ``storage/`` where every room reads
it; the lookups there (``storage.task_spec.all_tasks``, ``TaskSpec.hook``) call this registry,
which installs itself when ``tasks`` is imported, so every import of a task module is made here,
never by a room below (``tests/flows/test_runtime_layers.py`` watches a demo build for it). The
name -> object lookup is the one every plugin kind shares (``storage/plugins.py``).
"""

from __future__ import annotations

import importlib
from functools import cache
from types import ModuleType

from storage.plugins import PluginRegistry, broken_plugin, instance_check, load_target
from storage.task_spec import ENTRY_POINT_GROUP, InstalledRegistry, TaskError, TaskSpec, use_registry


def _import(module: str) -> ModuleType:
    """This room's import: a task's modules are imported by ``tasks`` code (the layer guard's rule)."""
    return importlib.import_module(module)


REGISTRY: PluginRegistry[TaskSpec] = PluginRegistry(
    kind="task",
    group=ENTRY_POINT_GROUP,
    error=TaskError,
    check=instance_check(TaskSpec, TaskError, "task"),
    import_module=_import,
)


def register_task(spec: TaskSpec) -> TaskSpec:
    """Register a task in this process (tests, notebooks); entry points are the durable way."""
    REGISTRY.register(spec.id, spec)
    _all.cache_clear()
    return spec


@cache
def _all() -> dict[str, TaskSpec]:
    specs: dict[str, TaskSpec] = {}
    for ep, spec in REGISTRY.loaded_entry_points():
        if not isinstance(spec, TaskSpec):
            raise TaskError(broken_plugin(ep, f"gives {type(spec).__name__}, not a TaskSpec"))
        if spec.id != ep.name:
            raise TaskError(broken_plugin(ep, f"gives a spec with id {spec.id!r}; the names must match"))
        specs[spec.id] = spec
    specs.update(REGISTRY.registered)
    return dict(sorted(specs.items(), key=lambda kv: (kv[1].order, kv[0])))


def all_specs() -> dict[str, TaskSpec]:
    """Every registered task by id, in benchmark order (``order``, then id)."""
    return dict(_all())


def load(ref: str) -> object:
    """A hook's ``"module:attr"``, imported by this room."""
    return load_target(ref, _import)


use_registry(InstalledRegistry(specs=all_specs, load=load, register=register_task))
