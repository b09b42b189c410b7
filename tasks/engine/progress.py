"""How a long step of a command reports its progress, without knowing who shows it.

The CLI passes a callable (``flows.cli_output.StepBars``: a bar with the time left in a terminal, a
one-line summary per step in a log); library callers pass nothing. A step calls it with its
name, work done and total (any unit: rows, bytes), and once more with ``summary`` when it ends.
"""

from __future__ import annotations

from typing import Protocol


class StepProgress(Protocol):
    def __call__(
        self, step: str, done: int, total: int | None, summary: str | None = None, details: str | None = None
    ) -> None:
        """``step`` has done ``done`` of ``total`` (None: unknown); ``summary``: it has ended, in these
        words (``details``: what follows its time in brackets)."""


def no_progress(
    step: str, done: int, total: int | None, summary: str | None = None, details: str | None = None
) -> None:
    """A :class:`StepProgress` that shows nothing."""
