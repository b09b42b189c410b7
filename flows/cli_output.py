"""How the CLI prints messages: errors and suggested commands are never hard-wrapped.

Rich wraps text at the console width; a command it suggests (``reactbench mine --run-dir ...``)
would then reach a log or a user's clipboard broken across lines, and whether it breaks would
depend on the length of a path. Soft-wrapping is the terminal's job, so messages are printed
with ``soft_wrap=True``; tables keep wrapping their cells to the width. A long step shows a bar
with the time left on a terminal and leaves one summary line in any log (:func:`step_progress`).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator

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


@contextmanager
def step_progress(console: Console, label: str, unit: str) -> Iterator[Callable[[int, int], None]]:
    """A bar for one long step: done / total ``unit``, time spent and an estimate of the time left.

    Yields the ``(done, total)`` callback the step reports through (the runner's ``ProgressFn``).
    The bar is drawn on a terminal only and cleared when the step ends; a redirected log gets
    nothing from it (rich would leave a blank line or a frozen bar), so the caller prints one
    summary line after the step (:func:`step_summary`), which both see."""
    if not console.is_terminal:
        yield lambda done, total: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn(unit), TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        job = bar.add_task(label, total=None)
        yield lambda done, total: bar.update(job, completed=done, total=max(total, 1))


def step_summary(label: str, what: str, seconds: float, details: str = "") -> str:
    """The one line a long step leaves: ``eval rules:rules-v1: 58,208 answers in 41.3 s (12 shards, 0 reused)``."""
    return f"{label}: {what} in {seconds:.1f} s" + (f" ({details})" if details else "")
