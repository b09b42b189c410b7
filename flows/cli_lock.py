"""Every CLI command that writes a run directory holds its lock (``storage.run_lock``) while it runs.

Applied once, after all commands are registered (``guard_writers(app)`` in ``flows/cli.py``), by
wrapping the callbacks of the writing commands; readers (``status``, ``report``, ``export``,
``review serve``) are left alone. A second writer exits with :data:`LOCKED_EXIT` at once,
naming the holder.

"At once" includes start-up: the ``reactbench`` executable (``flows.entry``) first asks
:func:`early_refusal` whether the command is a top-level writer on a local run directory whose
lease a live process holds, and refuses before Typer, pydantic, numpy or the stages are
imported. It only refuses: taking the lease is always the wrapper's job.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Callable

from flows.cli_options import DEFAULT_RUN_DIR

if TYPE_CHECKING:
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
        import typer

        from flows.cli_output import print_error
        from storage.run_lock import RunLocked, hold_run

        run_dir = kwargs.get("run_dir")
        ctx = kwargs.get("ctx")
        if run_dir is None or (group_callback and ctx is not None and ctx.invoked_subcommand is not None):
            return fn(*args, **kwargs)
        try:
            lock = hold_run(str(run_dir), f"reactbench {command}", on_message=lambda m: print_error(m, style="yellow"), reentrant=True)
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


def early_refusal(argv: list[str]) -> str | None:
    """The refusal message when ``argv`` is a top-level writing command (``build``, ``mine``, ...)
    whose local run directory is held by a live process; None otherwise (including ``--help``,
    fsspec URLs and command groups, which the full CLI checks)."""
    if not argv or ("", argv[0]) not in WRITERS:
        return None
    if any(a in ("--help", "-h") for a in argv[1:]):
        return None
    run_dir = DEFAULT_RUN_DIR
    rest = iter(argv[1:])
    for arg in rest:
        if arg == "--":
            break
        if arg in ("--run-dir", "-r"):
            run_dir = next(rest, run_dir)
        elif arg.startswith("--run-dir="):
            run_dir = arg.split("=", 1)[1]
    from storage.run_lock import RunLocked, local_holder

    holder = local_holder(run_dir)
    return None if holder is None else str(RunLocked(run_dir, holder))
