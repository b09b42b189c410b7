"""How the CLI prints messages: errors and suggested commands are never hard-wrapped.

Rich wraps text at the console width; a command it suggests (``reactbench mine --run-dir ...``)
would then reach a log or a user's clipboard broken across lines, and whether it breaks would
depend on the length of a path. Soft-wrapping is the terminal's job, so messages are printed
with ``soft_wrap=True``; tables keep wrapping their cells to the width.

Long steps show their progress through :class:`StepBars`, which also leaves one summary line
per step where no terminal shows the bars (a redirected log).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from rich.console import Console

err_console = Console(stderr=True, soft_wrap=True, highlight=False, emoji=False)


def print_error(message: str, style: str = "red") -> None:
    """One message on stderr, exactly as written (no markup, no emoji codes: ``--model vllm:x:``
    would print as ``vllm❌``; no inserted line breaks)."""
    err_console.print(message, style=style, markup=False, emoji=False, soft_wrap=True, highlight=False)


def require_extra(module: str, extra: str, command: str) -> None:
    """Stop ``command`` before it does anything when the optional dependency ``module`` of the
    ``extra`` is not installed: one line naming the extra to install, exit 2."""
    import importlib.util

    import typer

    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        print_error(
            f"{command} needs the `{extra}` extra (no module named {module!r}): pip install 'reactbench-pipeline[{extra}]'; nothing was written"
        )
        raise typer.Exit(2)


def deprecated_option(old: str, new: str, old_value: Any, new_value: Any, why: str) -> Any:
    """The value of an option renamed from ``old`` to ``new``: the old spelling still works, with a
    one-line deprecation notice on stderr; both given with different values is a usage error."""
    if old_value is None:
        return new_value
    if new_value is not None and new_value != old_value:
        import typer

        print_error(f"{old} and {new} are the same setting ({old} is deprecated); give only {new}")
        raise typer.Exit(2)
    print_error(f"{old} is deprecated here: use {new} ({why})", style="yellow")
    return old_value


def table_console(stderr: bool = False) -> Console:
    """A console for tables: the terminal's width in a terminal; 140 columns in logs and captured
    output (rich would otherwise squeeze tables to ``COLUMNS`` or 80 and break their labels)."""
    probe = Console(stderr=stderr)
    return Console(stderr=stderr, width=None if probe.is_terminal else 140, soft_wrap=True, emoji=False)


class StepBars:
    """Progress of a command's long steps (``tasks.engine.progress.StepProgress``): in a terminal a
    bar per step with its time left, removed when the step ends; in a terminal and in a log alike,
    one line per finished step (``export: wrote 51,234 questions ... in 38.2 s``). Use as a
    context manager and pass the object itself as the task's ``progress``."""

    def __init__(self, label: str, console: Console | None = None):
        from rich.progress import (
            BarColumn,
            Progress,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.label = label
        self.console = console or err_console
        self.bars = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TaskProgressColumn(),
            TimeRemainingColumn(),
            TimeElapsedColumn(),
            console=self.console,
            transient=True,
        )
        self.steps: dict[str, tuple[Any, float]] = {}  # step -> (its bar, when it started)

    def __enter__(self) -> StepBars:
        if self.console.is_terminal:  # a log gets no live display (rich would leave a blank line or a frozen bar)
            self.bars.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.console.is_terminal:
            self.bars.stop()

    def step(self, name: str) -> Callable[[int, int], None]:
        """A ``(done, total)`` callback (the stage runner's ``ProgressFn``) for the step ``name``."""
        return lambda done, total: self(name, done, total)

    def __call__(
        self, step: str, done: int, total: int | None, summary: str | None = None, details: str | None = None
    ) -> None:
        if step not in self.steps:
            self.steps[step] = (self.bars.add_task(f"{self.label}: {step}", total=total), time.perf_counter())
        bar, started = self.steps[step]
        self.bars.update(bar, completed=done, total=total)
        if summary is not None:
            self.bars.remove_task(bar)
            del self.steps[step]
            line = f"{self.label}: {summary} in {time.perf_counter() - started:.1f} s" + (
                f" ({details})" if details else ""
            )
            self.bars.console.print(line, markup=False, highlight=False, soft_wrap=True)
