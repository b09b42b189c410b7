"""The ``reactbench`` executable.

Two things happen here rather than in the Typer app (``flows.cli``):

* a second writer on a locked run directory is refused before the CLI is imported (Typer, the
  config schema and the stages take most of a second to load, several on a busy node), so the
  refusal names the holder at once (``flows.cli_lock.early_refusal``);
* usage errors (an unknown option, a missing argument) are printed on unwrapped lines: Typer
  would draw them in a panel as wide as the terminal, breaking an option name or a path across
  lines. Help screens keep Typer's layout. A config that does not load (``ConfigError``) is
  one message naming the file and keys, with exit status 2, whichever command read it; so is a
  run directory whose store cannot be used (``StoreError``: its fsspec backend is missing, or
  it has no conditional writes for the lease);
* a command stopped by Ctrl-C / SIGTERM / SIGHUP (``flows.cli_signals``) says so, what its stage
  finished and abandoned, and how to resume, and exits 130 / 143 / 129; a full disk is one line
  naming the file and the space it needs, with the command that resumes (finished shards are
  kept), exit 1;
* a model server that is down or failing (``prompts.clients.endpoint.EndpointError``: found by
  the check before work, or by the circuit breaker while a stage ran) is one line naming its
  URL and what failed, what finished, and the command that resumes, exit 1;
* a command that finished although its model server failed requests (answered only through
  retries) ends with one line per such server (``prompts.clients.call_stats``), and exits 7
  when the share of failed requests passed ``mllm.max_error_rate``;
* a task or source plugin whose entry point does not load is one line naming it and the package
  that declared it, exit 2, for every command (the config schema loads every task plugin).
"""

from __future__ import annotations

import sys


def main() -> None:
    from flows.cli_lock import LOCKED_EXIT, early_refusal

    message = early_refusal(sys.argv[1:])
    if message is not None:
        print(message, file=sys.stderr)
        raise SystemExit(LOCKED_EXIT)

    from flows.cli_output import print_error

    try:
        from flows.cli import app  # the config schema loads every task plugin
    except Exception as exc:
        broken = plugin_failure(exc)
        if broken is None:
            raise
        print_error(broken)
        raise SystemExit(2) from None
    from flows.cli_signals import Interrupted, stopped_message
    from flows.config import ConfigError
    from prompts.clients.endpoint import EndpointError
    from storage.fs import StoreError, is_disk_full
    from tasks.engine.suggest import suggest

    try:
        code = app(standalone_mode=False)
    except (
        ConfigError,
        StoreError,
    ) as exc:  # a bad config file or an unusable store (missing backend, no conditional writes), for every command
        print_error(str(exc))
        raise SystemExit(2) from None
    except Interrupted as exc:  # the writer's lease is already released (flows.cli_lock)
        details = list(getattr(exc, "__notes__", []))  # the stopped stage's counts (tasks.engine.runner)
        print_error(
            stopped_message(command_name(sys.argv[1:]), exc.signum, suggest(*sys.argv[1:]), details), style="yellow"
        )
        raise SystemExit(exc.exit_code) from None
    except EndpointError as exc:  # the lease is released; finished shards are kept
        print_error(endpoint_text(exc, suggest(*sys.argv[1:])))
        raise SystemExit(1) from None
    except OSError as exc:
        if not is_disk_full(exc):
            raise
        print_error(
            f"{disk_full_text(exc)}; free some space and resume with `{suggest(*sys.argv[1:])}` (finished shards are kept)"
        )
        raise SystemExit(1) from None
    except Exception as exc:
        kinds = {c.__name__ for c in type(exc).__mro__}  # click's classes, vendored or not by Typer
        if "ClickException" in kinds:
            if "NoArgsIsHelpError" not in kinds:  # Typer has printed the help already
                print_error(usage_error_text(exc, sys.argv[1:]))
            raise SystemExit(getattr(exc, "exit_code", 2)) from None
        if "Abort" in kinds:
            print_error("Aborted.")
            raise SystemExit(1) from None
        raise
    code = code if isinstance(code, int) else 0
    raise SystemExit(retried_exit(code))


def retried_exit(code: int) -> int:
    """Say which model servers failed requests that retries then covered; the exit status: ``code``,
    or ``call_stats.RETRIED_EXIT`` for a command that succeeded only through too many retries."""
    from flows.cli_output import print_error
    from prompts.clients.call_stats import RETRIED_EXIT, retry_report

    lines, over = retry_report()
    for line in lines:
        print_error(line, style="yellow")
    return RETRIED_EXIT if over and code == 0 else code


def endpoint_text(exc: BaseException, resume: str) -> str:
    """One line for a model server that is down or failing: the server and what failed, what the
    stopped stage finished (the runner's note), and the command to run once it answers."""
    notes = [n for n in getattr(exc, "__notes__", []) if n]
    finished = f" ({'; '.join(notes)})" if notes else ""
    return f"{exc}{finished}; once the server answers, {'resume with' if notes else 'run'} `{resume}`"


def plugin_failure(exc: BaseException) -> str | None:
    """The message of a task or source plugin that does not load, wherever it was raised (a
    config model's default wraps it in pydantic's ValidationError); None for anything else."""
    from miners.sources import SourceError
    from storage.task_spec import TaskError

    todo: list[BaseException] = [exc]
    seen: set[int] = set()
    while todo:
        cur = todo.pop()
        if id(cur) in seen:
            continue
        seen.add(id(cur))
        if isinstance(cur, (TaskError, SourceError)):
            return str(cur)
        errors = getattr(cur, "errors", None)
        if callable(errors) and type(cur).__name__ == "ValidationError":
            todo += [
                e["ctx"]["error"] for e in errors() if isinstance((e.get("ctx") or {}).get("error"), BaseException)
            ]
        todo += [c for c in (cur.__cause__, cur.__context__) if c is not None]
    return None


def command_name(argv: list[str]) -> str:
    """``reactbench review export`` from the arguments (the words before the first option)."""
    words = []
    for a in argv:
        if a.startswith("-"):
            break
        words.append(a)
    return " ".join(["reactbench", *words[:2]])


def disk_full_text(exc: BaseException) -> str:
    """The original ENOSPC of a chain (a failure while recording a failure wraps the first one)."""
    from storage.fs import DiskFull, is_disk_full

    found: BaseException = exc
    cur: BaseException | None = exc
    seen: set[int] = set()
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if is_disk_full(cur) and (isinstance(cur, DiskFull) or not isinstance(found, DiskFull)):
            found = cur
        cur = cur.__cause__ or cur.__context__
    if isinstance(found, DiskFull):
        return str(found)
    where = getattr(found, "filename", None)
    return f"no space left on device{f' writing {where}' if where else ''} ({found})"


def usage_error_text(exc: Exception, argv: list[str] | None = None) -> str:
    """Click's usage, hint and error lines, each whole (no hard wrap); a value given to a flag
    (``--force true``) gets a line saying that flags take none."""
    ctx = getattr(exc, "ctx", None)
    lines = []
    if ctx is not None:
        lines.append(" ".join(["Usage:", ctx.command_path, *ctx.command.collect_usage_pieces(ctx)]))
        if ctx.command.get_help_option(ctx) is not None:
            lines.append(f"Try '{ctx.command_path} {ctx.help_option_names[0]}' for help.")
    lines.append(f"Error: {exc.format_message()}")  # type: ignore[attr-defined]
    flag = _flag_given_a_value(ctx, argv or [])
    if flag is not None:
        lines.append(
            f"{flag} is a flag and takes no value: give {flag} alone to turn it on, leave it out to keep it off."
        )
    return "\n".join(lines)


def _flag_given_a_value(ctx: object, argv: list[str]) -> str | None:
    """The flag that a stray argument follows (``--force true``, ``--force=true``), if any."""
    if ctx is None:
        return None
    flags = {
        o
        for p in getattr(ctx.command, "params", [])
        if getattr(p, "is_flag", False)
        for o in (*p.opts, *p.secondary_opts)
    }
    for i, arg in enumerate(argv):
        name = arg.split("=", 1)[0]
        if name in flags and (
            "=" in arg
            or (i + 1 < len(argv) and argv[i + 1].lower() in ("true", "false", "yes", "no", "1", "0", "on", "off"))
        ):
            return name
    return None


if __name__ == "__main__":
    main()
