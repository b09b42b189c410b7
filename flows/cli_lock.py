"""Every CLI command that writes a run directory holds its lock (``storage.run_lock``) while it runs.

Applied once, after all commands are registered (``guard_writers(app)`` in ``flows/cli.py``), by
wrapping the callbacks of the writing commands; readers (``status``, ``reuse stats``,
``review serve``) are left alone. ``export`` (its rejects), ``report`` (``<run>/reports/``) and
``reuse prune`` (deletes from the run's store) write too, so they hold the lease as well. A second writer exits with :data:`LOCKED_EXIT` at once,
naming the holder.

"At once" includes start-up: the ``reactbench`` executable (``flows.entry``) first asks
:func:`early_refusal` whether the command is a top-level writer on a local run directory whose
lease a live process holds, and refuses before Typer, pydantic, numpy or the stages are
imported. It only refuses: taking the lease is always the wrapper's job.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

from flows.cli_options import DEFAULT_RUN_DIR, no_run_dir
from storage.literal_paths import is_local, literal_url

if TYPE_CHECKING:
    import typer

    from storage.run_lock import NestedLock, RunLock

LOCKED_EXIT = 3
# (group, command): "" is the top level; None as the command is the group's own callback
WRITERS: set[tuple[str, str | None]] = {
    ("", "build"),
    ("", "mine"),
    ("", "instruct"),
    ("", "edit"),
    ("", "qa"),
    ("", "eval"),
    ("review", None),
    ("review", "export"),
    ("review", "import-labelstudio"),
    ("", "export"),
    ("", "report"),
    ("reuse", "prune"),  # export's rejects, report's HTML, prune's deletions
}
# Writers that read a run which must be there already: a --run-dir that does not exist is a
# mistyped path, refused before the lease would create it (``build`` and ``mine`` start runs;
# ``reuse prune`` may work on a shared store alone and checks the run itself).
NEEDS_RUN = WRITERS - {("", "build"), ("", "mine"), ("reuse", "prune")}
# Writers that write nothing into the run when --out points elsewhere: on a read-only run
# directory (a published run mounted read-only) they run without the lease.
READS_WITH_OUT = {"export", "report", "eval"}
# Writers whose --out folder receives, in place of the run, what they write (``eval --out``: the
# answers, the response cache, metrics.json), with what that is (for the refusal of an --out that
# is a file): that folder is leased as a run directory is, so two evaluations into one folder
# wait for each other as two into one run do.
WRITES_OUT = {"eval": "evaluation results"}


def locked(
    command: str, fn: Callable[..., Any], group_callback: bool = False, needs_run: bool = False
) -> Callable[..., Any]:
    """``fn`` run while holding the lock of its ``run_dir`` argument (its signature is kept for Typer),
    and of its ``--out`` folder when the command writes there instead (:data:`WRITES_OUT`).

    Nothing is written before the command's config validates: a ``--config`` given to the
    command is loaded first (a bad one exits 2 without creating the run directory), and a folder
    that taking a lease created is removed again if the command left it empty.
    ``needs_run``: a run directory that does not exist is refused (exit 2) before the lease is
    taken. SIGTERM / SIGHUP end the command cleanly (``flows.cli_signals``)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        import typer

        from flows.cli_output import print_error
        from flows.cli_signals import stop_on_signals

        run_dir = kwargs.get("run_dir")
        ctx = kwargs.get("ctx")
        if run_dir is None or (group_callback and ctx is not None and ctx.invoked_subcommand is not None):
            return fn(*args, **kwargs)
        refusal = refused_path(kwargs)  # a chained or foreign-host URL: refused before anything is made
        if refusal is not None:
            print_error(refusal)
            raise typer.Exit(2)
        if "config" in kwargs:
            from flows.config import resolve_run_config

            resolve_run_config(kwargs["config"], run_dir=run_dir)  # ConfigError: exit 2, nothing written
        read_only = read_only_run(command, str(run_dir), kwargs.get("out"))
        if read_only:  # a published run mounted read-only, which this command would write: refused
            print_error(read_only)
            raise typer.Exit(2)
        # "": a read-only run the command only reads here (its output goes elsewhere): no lease file can be made there
        folders = [] if read_only == "" else [str(run_dir)]
        if folders and needs_run and _first_missing(str(run_dir)) is not None:
            print_error(no_run_dir(str(run_dir)))  # a mistyped path: no stage or file hint, nothing created
            raise typer.Exit(2)
        out = written_out(command, kwargs.get("out"))
        if out is not None:
            folders.append(out)
        if not folders:
            return fn(*args, **kwargs)  # it only reads the run, and writes nowhere it would lease
        with ExitStack() as held:
            leases = [_take_lease(command, where, held) for where in folders]
            with stop_on_signals(lambda: [lease.drop_now() for lease in leases]):
                return fn(*args, **kwargs)

    return wrapper


def written_out(command: str, out: object) -> str | None:
    """The ``--out`` folder ``command`` writes into in place of the run (:data:`WRITES_OUT`), or
    None; one that is a file (or lies under one) is refused in one line, exit 2."""
    what = WRITES_OUT.get(command)
    if what is None or not isinstance(out, str) or not out:
        return None
    from storage.fs import RunFS
    from storage.run_dirs import file_in_the_way

    blocked = file_in_the_way(RunFS.open(out))
    if blocked is not None:
        import typer

        from flows.cli_output import print_error

        print_error(f"error: --out {out}: {blocked} is a file; {what} go to a folder")
        raise typer.Exit(2)
    return out


def _take_lease(command: str, where: str, held: ExitStack) -> RunLock | NestedLock:
    """The lease of the folder ``where``, released when ``held`` closes (and the folder removed
    again if taking the lease created it and it is still empty); a live holder exits
    :data:`LOCKED_EXIT`, naming it."""
    import typer

    from flows.cli_output import print_error
    from storage.run_lock import RunLocked, hold_run

    created = _first_missing(where)  # taking the lease creates it: removed again if left empty
    if created is not None:
        held.callback(_remove_empty_up_to, where, created)
    try:
        lock = hold_run(
            where, f"reactbench {command}", on_message=lambda m: print_error(m, style="yellow"), reentrant=True
        )
        lock.acquire()
    except RunLocked as exc:
        print_error(str(exc))
        raise typer.Exit(LOCKED_EXIT) from None
    held.callback(lock.release)
    return lock


def refused_path(kwargs: Mapping[str, object]) -> str | None:
    """Why the command's ``--run-dir`` or ``--out`` cannot be used as written (a chained fsspec
    URL, a ``file://`` URL of another host), or None."""
    from storage.literal_paths import UrlRefused

    for key in ("run_dir", "out"):
        value = kwargs.get(key)
        if isinstance(value, str):
            try:
                literal_url(value)
            except UrlRefused as exc:
                return str(exc)
    return None


def read_only_run(command: str, run_dir: str, out: object) -> str | None:
    """None when the local run directory can be written (or is not local). On a read-only one:
    "" when the command only reads it here (``export`` or ``report`` with ``--out`` outside
    it), else the one-line refusal naming the run, why and the fix."""
    from storage.literal_paths import read_only_reason

    where = literal_url(run_dir)
    reason = read_only_reason(where)
    if reason is None:
        return None
    if command in READS_WITH_OUT and isinstance(out, str) and out:
        target = literal_url(out)
        run_real = os.path.realpath(where)
        if not is_local(target) or not (os.path.realpath(target) + "/").startswith(run_real + "/"):
            return ""
    elsewhere = " unless --out lies outside it" if command in READS_WITH_OUT else ""
    return (
        f"{run_dir}: the run directory is {reason}, and `reactbench {command}` writes into it{elsewhere}; "
        f"copy it to a writable folder (cp -r {run_dir} <copy>) and run the command there; nothing was written"
    )


def _first_missing(run_dir: str) -> str | None:
    """The outermost folder of a local run directory's path that does not exist yet (None when
    the run directory exists, or for fsspec URLs)."""
    run_dir = literal_url(run_dir)
    if not is_local(run_dir):
        return None
    path = os.path.abspath(run_dir)
    missing = None
    while not os.path.exists(path):
        missing, parent = path, os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return missing


def _remove_empty_up_to(run_dir: str, top: str) -> None:
    """Remove the run directory and its parents up to ``top`` while they are empty."""
    path = os.path.abspath(literal_url(run_dir))
    while True:
        try:
            os.rmdir(path)  # only ever removes an empty folder
        except OSError:
            return
        if path == top or os.path.dirname(path) == path:
            return
        path = os.path.dirname(path)


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
            cb.callback = locked(f"{name}", cb.callback, group_callback=True, needs_run=(name, None) in NEEDS_RUN)


def _wrap_commands(app: typer.Typer, group: str) -> None:
    for info in app.registered_commands:
        if info.callback is None:
            continue
        name = info.name or info.callback.__name__.replace("_", "-")
        if (group, name) in WRITERS:
            info.callback = locked(f"{group} {name}".strip(), info.callback, needs_run=(group, name) in NEEDS_RUN)


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
