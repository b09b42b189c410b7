"""Per-item time budgets for editor calls: one pathological image must not stall a shard.

A budget is wall seconds per item (``time_budget_s`` of an editor entry; a batch gets the sum of
its items'). The call runs on a helper thread and the caller stops waiting when the budget is
spent: the items become ``editor_timeout`` rejects and the batch goes on. Python cannot kill a
thread, so the abandoned call is also told to stop: code that loops (the GrabCut iterations of
the mask step, diffusion steps) calls :func:`check_deadline`, which raises :class:`EditTimeout`
once the budget of the item it works on is spent. The clock starts when the call holds the
editor's model lock, so an item never pays for the one before it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from editors.base import Editor

T = TypeVar("T")
_local = threading.local()


class EditTimeout(Exception):
    """The item (or batch) ran over its time budget."""


def check_deadline(step: str = "") -> None:
    """Raise :class:`EditTimeout` when the budget of the current call is spent (no-op without one)."""
    deadline = getattr(_local, "deadline", None)
    if deadline is not None and time.monotonic() > deadline:
        raise EditTimeout(f"time budget spent{f' during {step}' if step else ''}")


def set_deadline(seconds: float | None) -> None:
    """Start the current thread's budget clock (``seconds`` from now), or stop it with None."""
    _local.deadline = None if seconds is None else time.monotonic() + seconds


def remaining_seconds() -> float | None:
    """Seconds left in the current call's budget, or None when it has none."""
    deadline = getattr(_local, "deadline", None)
    return None if deadline is None else deadline - time.monotonic()


def run_within(seconds: float, fn: Callable[[Callable[[], None]], T], what: str = "editor call") -> T:
    """``fn(start)`` on a helper thread; raise :class:`EditTimeout` if it runs more than ``seconds``
    after it calls ``start()`` (it calls it once it holds whatever it waits for, e.g. a model lock)."""
    started, finished = threading.Event(), threading.Event()
    value: list[T] = []  # the result, once ``fn`` returns
    error: list[BaseException] = []

    def start() -> None:
        set_deadline(seconds)
        started.set()

    def target() -> None:
        try:
            value.append(fn(start))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            error.append(exc)
        finally:
            set_deadline(None)
            started.set()
            finished.set()

    thread = threading.Thread(target=target, name="editor-call", daemon=True)
    thread.start()
    started.wait()
    if not finished.wait(seconds):
        raise EditTimeout(f"{what} ran over its {seconds:g} s budget")
    if error:
        raise error[0]
    return value[0]


class Budgeted:
    """An editor with a per-item time budget; everything else is the editor's own."""

    def __init__(self, editor: Editor, seconds: float | None):
        self._editor = editor
        self.time_budget_s = seconds

    def __getattr__(self, name: str) -> Any:
        return getattr(self._editor, name)


def with_budget(editor: Editor, seconds: float | None) -> Editor | Budgeted:
    """``editor`` whose calls :func:`editors.runtime.run_batch` bounds to ``seconds`` per item."""
    return Budgeted(editor, seconds) if seconds else editor
