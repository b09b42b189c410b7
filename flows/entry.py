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
  it has no conditional writes for the lease).
"""

from __future__ import annotations

import sys


def main() -> None:
    from flows.cli_lock import LOCKED_EXIT, early_refusal

    message = early_refusal(sys.argv[1:])
    if message is not None:
        print(message, file=sys.stderr)
        raise SystemExit(LOCKED_EXIT)

    from flows.cli import app
    from flows.cli_output import print_error
    from flows.config import ConfigError
    from storage.fs import StoreError

    try:
        code = app(standalone_mode=False)
    except (ConfigError, StoreError) as exc:  # a bad config file or an unusable store (missing backend, no conditional writes), for every command
        print_error(str(exc))
        raise SystemExit(2) from None
    except Exception as exc:
        kinds = {c.__name__ for c in type(exc).__mro__}  # click's classes, vendored or not by Typer
        if "ClickException" in kinds:
            if "NoArgsIsHelpError" not in kinds:  # Typer has printed the help already
                print_error(usage_error_text(exc))
            raise SystemExit(getattr(exc, "exit_code", 2)) from None
        if "Abort" in kinds:
            print_error("Aborted.")
            raise SystemExit(1) from None
        raise
    raise SystemExit(code if isinstance(code, int) else 0)


def usage_error_text(exc: Exception) -> str:
    """Click's usage, hint and error lines, each whole (no hard wrap)."""
    ctx = getattr(exc, "ctx", None)
    lines = []
    if ctx is not None:
        lines.append(" ".join(["Usage:", ctx.command_path, *ctx.command.collect_usage_pieces(ctx)]))
        if ctx.command.get_help_option(ctx) is not None:
            lines.append(f"Try '{ctx.command_path} {ctx.help_option_names[0]}' for help.")
    lines.append(f"Error: {exc.format_message()}")  # type: ignore[attr-defined]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
