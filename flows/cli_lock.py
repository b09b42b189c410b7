"""Every CLI command that writes a run directory holds its lock (``storage.run_lock``) while it runs.

Applied once, after all commands are registered (``guard_writers(app)`` in ``flows/cli.py``), by
wrapping the callbacks of the writing commands; readers (``status``, ``report``, ``export``,
``review serve``) are left alone. A second writer exits with :data:`LOCKED_EXIT` at once,
naming the holder.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import typer

LOCKED_EXIT = 3
# (group, command): "" is the top level; None as the command is the group's own callback
WRITERS: set[tuple[str, str | None]] = {
    ("", "build"), ("", "mine"), ("", "instruct"), ("", "edit"), ("", "qa"), ("", "eval"),
    ("review", None), ("review", "export"), ("review", "import-labelstudio"),
}


def locked(command: str, fn: Callable[..., Any], group_callback: bool = False) -> Callable[..., Any]:
    """``fn`` run while holding the lock of its ``run_dir`` argument (its signature is kept for Typer)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from flows.cli_output import print_error
        from storage.run_lock import RunLocked, hold_run

        run_dir = kwargs.get("run_dir")
        ctx = kwargs.get("ctx")
        if run_dir is None or (group_callback and ctx is not None and ctx.invoked_subcommand is not None):
            return fn(*args, **kwargs)
        try:
            lock = hold_run(str(run_dir), f"reactbench {command}", on_message=lambda m: print_error(m, style="yellow"))
            lock.acquire()
        except RunLocked as exc:
            print_error(str(exc))
            raise typer.Exit(LOCKED_EXIT) from None
        try:
            return fn(*args, **kwargs)
        finally:
            lock.release()

    return wrapper


def guard_writers(app: typer.Typer) -> None:
    """Wrap the writing commands of ``app`` and of its command groups."""
    _wrap_commands(app, "")
    for group in app.registered_groups:
        sub = group.typer_instance
        name = group.name or ""
        if sub is None:
            continue
        _wrap_commands(sub, name)
        cb = sub.registered_callback
        if (name, None) in WRITERS and cb is not None and cb.callback is not None:
            cb.callback = locked(f"{name}", cb.callback, group_callback=True)


def _wrap_commands(app: typer.Typer, group: str) -> None:
    for info in app.registered_commands:
        if info.callback is None:
            continue
        name = info.name or info.callback.__name__.replace("_", "-")
        if (group, name) in WRITERS:
            info.callback = locked(f"{group} {name}".strip(), info.callback)
