"""How the CLI prints messages: errors and suggested commands are never hard-wrapped.

Rich wraps text at the console width; a command it suggests (``reactbench mine --run-dir ...``)
would then reach a log or a user's clipboard broken across lines, and whether it breaks would
depend on the length of a path. Soft-wrapping is the terminal's job, so messages are printed
with ``soft_wrap=True``; tables keep wrapping their cells to the width.
"""

from __future__ import annotations

from rich.console import Console

err_console = Console(stderr=True, soft_wrap=True, highlight=False)


def print_error(message: str, style: str = "red") -> None:
    """One message on stderr, exactly as written (no markup, no inserted line breaks)."""
    err_console.print(message, style=style, markup=False, soft_wrap=True, highlight=False)


def table_console(stderr: bool = False) -> Console:
    """A console for tables: the terminal's width in a terminal; 140 columns in logs and captured
    output (rich would otherwise squeeze tables to ``COLUMNS`` or 80 and break their labels)."""
    probe = Console(stderr=stderr)
    return Console(stderr=stderr, width=None if probe.is_terminal else 140, soft_wrap=True)
