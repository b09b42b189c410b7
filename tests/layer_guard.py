"""An import guard for the run-time half of the layers (issue 41): installed in a fresh interpreter
before the CLI runs, it refuses any import of a ``tasks`` module made from code under ``storage/``,
``miners/``, ``prompts/`` or ``editors/`` (the rooms below the stages), whether a static ``import``
statement, ``importlib.import_module`` or an entry point's ``load()``, and records each refusal, so
a caller that swallows the ``ImportError`` is still caught. Statically, import-linter's
``lower rooms never import tasks`` contract covers the same rule (pyproject ``[tool.importlinter]``).

Usage (what ``tests/flows/test_runtime_layers.py`` runs)::

    python -c "import layer_guard; layer_guard.install(); ..." -- with tests/ on sys.path
"""

from __future__ import annotations

import atexit
import builtins
import importlib
import importlib.metadata
import json
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType, ModuleType

ROOT = Path(__file__).resolve().parents[1]
LOWER_ROOMS = ("storage", "miners", "prompts", "editors")
MARK = "LAYER_VIOLATIONS="
LOOKUP_MARK = "REGISTRY_LOOKUPS="
# storage.task_spec's lookups of the installed task registry (a service locator when a lower room calls them).
LOOKUPS = ("all_tasks", "task_ids", "task_spec", "task_hook", "check_task_id", "task_order")
SPEC_LOOKUPS = ("hook", "miner")
lookups: list[str] = []
_STDLIB_IMPORTLIB = str(Path(importlib.__file__).parent)
violations: list[str] = []
record_only = False  # True: record without refusing (to list every offender of a tree at once)


def _is_tasks(name: str) -> bool:
    return name == "tasks" or name.startswith("tasks.")


def _importer(frame: FrameType | None) -> FrameType | None:
    """The first frame outside the import machinery (importlib's own files and frozen modules)."""
    while frame is not None:
        filename = frame.f_code.co_filename
        if not (filename.startswith("<frozen importlib") or filename.startswith(_STDLIB_IMPORTLIB)):
            return frame
        frame = frame.f_back
    return None


def _check(name: str, frame: FrameType | None) -> None:
    if not _is_tasks(name):
        return
    caller = _importer(frame)
    if caller is None:
        return
    try:
        rel = Path(caller.f_code.co_filename).resolve().relative_to(ROOT)
    except ValueError:
        return
    if rel.parts and rel.parts[0] in LOWER_ROOMS:
        where = f"{rel.as_posix()}:{caller.f_lineno} imports {name}"
        violations.append(where)
        if not record_only:
            raise ImportError(f"layer guard: {where} (a room below the stages imports a tasks module at run time)")


def _lower_room_caller(frame: FrameType | None) -> str | None:
    """``path`` of the calling file when it sits under a lower room (not storage/task_spec.py itself)."""
    if frame is None:
        return None
    try:
        rel = Path(frame.f_code.co_filename).resolve().relative_to(ROOT)
    except ValueError:
        return None
    if rel.as_posix() == "storage/task_spec.py" or not rel.parts or rel.parts[0] not in LOWER_ROOMS:
        return None
    return rel.as_posix()


def _watch_lookups() -> None:
    """Record each call of a registry lookup made from code under a lower room (file and lookup;
    lines move too often to pin). Installed before the lower rooms import the names."""
    import storage.task_spec as ts

    def wrap(name: str, fn: Callable[..., object]) -> Callable[..., object]:
        def watched(*args: object, **kwargs: object) -> object:
            where = _lower_room_caller(sys._getframe(1))
            if where is not None:
                lookups.append(f"{where} calls {name}")
            return fn(*args, **kwargs)

        return watched

    for name in LOOKUPS:
        setattr(ts, name, wrap(name, getattr(ts, name)))
    for name in SPEC_LOOKUPS:
        setattr(ts.TaskSpec, name, wrap(f"TaskSpec.{name}", getattr(ts.TaskSpec, name)))
    atexit.register(lambda: print(LOOKUP_MARK + json.dumps(sorted(set(lookups))), file=sys.stderr))


def install() -> None:
    """Wrap ``__import__`` and ``importlib.import_module`` (also the name importlib.metadata holds)
    and print the violations as the last stderr line at exit."""
    real_import = builtins.__import__
    real_import_module = importlib.import_module

    def guarded_import(name: str, globals=None, locals=None, fromlist=(), level=0) -> ModuleType:  # noqa: A002
        if level == 0:
            _check(name, sys._getframe(1))
        return real_import(name, globals, locals, fromlist, level)

    def guarded_import_module(name: str, package: str | None = None) -> ModuleType:
        if not name.startswith("."):
            _check(name, sys._getframe(1))
        return real_import_module(name, package)

    builtins.__import__ = guarded_import
    importlib.import_module = guarded_import_module
    importlib.metadata.import_module = guarded_import_module  # EntryPoint.load's name for it
    atexit.register(lambda: print(MARK + json.dumps(sorted(set(violations))), file=sys.stderr))


def run_cli(argv: list[str], main: Callable[[], object] | None = None) -> None:
    """Install the guard (and the registry-lookup watch), then run ``reactbench <argv>`` here."""
    install()
    _watch_lookups()
    from flows.entry import main as cli_main

    sys.argv = ["reactbench", *argv]
    (main or cli_main)()
