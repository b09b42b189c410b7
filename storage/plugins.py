"""One name -> object lookup for every kind of plugin (editors, sources, tasks): built-ins named by
import string, objects registered in this process, then the kind's entry-point group.

Why one helper: editors, sources and tasks each resolved names over entry points with their own
loop and their own messages. Here the order of lookup, the "unknown name lists the choices" error
and the "broken plugin names its package" error are written once.

Why the import function is the owner's: this module sits in the bottom room, and an import made for
a room above must be made by that room (``tests/layer_guard.py`` watches who imports ``tasks``). The
task registry (``tasks/engine/registry.py``) passes its own ``import_module``; editors and sources
use the default.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from types import ModuleType
from typing import Generic, TypeVar

T = TypeVar("T")


def broken_plugin(ep: EntryPoint, problem: str, kind: str = "task") -> str:
    """The one-line message for a plugin entry point that cannot be used: its ``module:attr``
    and, when known, the package that declared it, so the message says what to fix or uninstall."""
    dist = getattr(ep, "dist", None)
    if dist is None:
        return f"{kind} entry point {ep.name!r} ({ep.value}) {problem}"
    return (
        f"{kind} entry point {ep.name!r} ({ep.value}, declared by {dist.name} {dist.version}) {problem}"
        f"; fix that package or remove it (pip uninstall {dist.name})"
    )


def load_target(target: str, import_module: Callable[[str], ModuleType] = importlib.import_module) -> object:
    """``"pkg.module:attr.sub"`` -> the attribute, its module imported with ``import_module``."""
    module, _, attr = target.partition(":")
    obj: object = import_module(module)
    for part in attr.split(".") if attr else ():
        obj = getattr(obj, part)
    return obj


def instance_check(cls: type[T], error: type[Exception], kind: str) -> Callable[[str, object], T]:
    """A ``PluginRegistry.check`` for kinds whose objects are instances of ``cls`` (a spec object)."""

    def check(name: str, obj: object) -> T:
        if not isinstance(obj, cls):
            raise error(f"{kind} {name!r} resolves to {obj!r}, which is not a {cls.__module__}.{cls.__qualname__}")
        return obj

    return check


@dataclass
class PluginRegistry(Generic[T]):
    """Name -> ``T`` for one kind: ``registered`` (this process) first, then ``builtin`` (import
    strings, imported on first use), then the entry points of ``group``.

    ``check(name, obj)`` returns the object as ``T`` or raises ``error`` (e.g. "is not an Editor");
    ``import_module`` imports what a built-in or an entry point names (the owner's, see the module
    docstring). Unknown names and broken entry points raise ``error`` with the choices or the
    declaring package.
    """

    kind: str
    group: str
    error: type[Exception]
    check: Callable[[str, object], T]
    builtin: dict[str, str] = field(default_factory=dict)
    import_module: Callable[[str], ModuleType] = importlib.import_module
    registered: dict[str, T] = field(default_factory=dict)

    def register(self, name: str, obj: T) -> T:
        """Register ``obj`` under ``name`` in this process (tests, notebooks); entry points are the durable way."""
        self.registered[name] = obj
        return obj

    def entry_points(self) -> dict[str, EntryPoint]:
        """The entry points of the kind's group, by name."""
        return {ep.name: ep for ep in entry_points(group=self.group)}

    def names(self) -> list[str]:
        """Every name: built-ins in their declared order, then the others sorted."""
        others = sorted((set(self.registered) | set(self.entry_points())) - set(self.builtin))
        return [*self.builtin, *others]

    def unknown(self, name: str, choices: list[str] | None = None, word: str = "available") -> Exception:
        """The error for a name nothing registers: it lists the choices and where plugins register."""
        listed = choices if choices is not None else self.names()
        return self.error(
            f"unknown {self.kind} {name!r}; {word}: {listed} "
            f"(third-party {self.kind}s register under the entry-point group {self.group!r})"
        )

    def load_entry_point(self, ep: EntryPoint) -> object:
        """The object ``ep`` names, imported with the owner's ``import_module``; a failure names the package."""
        try:
            return load_target(f"{ep.module}:{ep.attr}" if ep.attr else ep.module, self.import_module)
        except Exception as exc:  # a broken plugin is named, not a bare ImportError deep in a stage
            raise self.error(broken_plugin(ep, f"failed to load: {exc}", kind=self.kind)) from exc

    def get(self, name: str) -> T:
        """The object registered under ``name``, checked; unknown names list what exists."""
        if name in self.registered:
            obj: object = self.registered[name]
        elif name in self.builtin:
            obj = load_target(self.builtin[name], self.import_module)
        else:
            eps = self.entry_points()
            if name not in eps:
                raise self.unknown(name)
            obj = self.load_entry_point(eps[name])
        return self.check(name, obj)

    def loaded_entry_points(self) -> Iterator[tuple[EntryPoint, object]]:
        """Each entry point of the group with the object it names (for kinds that load them all)."""
        for ep in entry_points(group=self.group):
            yield ep, self.load_entry_point(ep)
