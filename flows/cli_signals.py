"""Ctrl-C / SIGTERM / SIGHUP during a writing command: stop cleanly, release the lease, say what
finished and how to resume.

Python's default for SIGTERM and SIGHUP is to die at once: no message, and the lease file stays
behind (the kernel frees its ``flock``, so the next writer takes it over, but the user is told
nothing); its default for Ctrl-C (SIGINT) is a ``KeyboardInterrupt`` that waited for every
running shard, model calls and their retries included, and left the stage ``running`` in its
manifest. A scheduler stopping a job (Kubernetes, Slurm, systemd), a closed terminal or a user
at the keyboard sends one of these, so writers handle all three alike:

* the first signal cuts the model calls in flight (``prompts.clients.endpoint.abort_model_calls``:
  a shard waiting on a server is abandoned at once, without a marker) and raises
  :class:`Interrupted` in the main thread. The thread runner's ``Executor.map`` cancels the
  shards not yet started and the other running shards finish (each is written with its
  completion marker last, so a shard is either kept or recomputed later); the stage's manifest
  says ``interrupted``; the writer's ``finally`` releases the lease; the executable prints what
  finished, what was abandoned and the command to resume, and exits 128 + the signal number
  (130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP);
* a second signal while shards are finishing abandons them: the lease is released and the
  process exits at once with the same status (a half-written shard has no marker and is
  recomputed by the next run). The handler stays installed until the process exits, so a
  second signal that lands while the lease is being released or the message printed exits
  the same way instead of through the default action (which would report death by signal).
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_installed = False  # the outermost writer of the process owns the handlers
_stopping = False  # a handled signal arrived: the process is on its way out


class Interrupted(BaseException):
    """A handled signal arrived; a BaseException so ``except Exception`` in stage code lets it through."""

    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(signal.Signals(signum).name)

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def stopped_message(command: str, signum: int, resume: str, details: list[str] | None = None) -> str:
    """What the executable prints after a handled signal stopped ``command`` (one line);
    ``details``: what the stopped stage finished and abandoned (the runner's notes)."""
    counts = f" ({'; '.join(details)})" if details else ""
    return (
        f"{command}: stopped by {signal.Signals(signum).name}; the lease is released and finished shards are kept{counts}. "
        f"Resume with `{resume}`"
    )


@contextmanager
def stop_on_signals(abandon: Callable[[], None]) -> Iterator[None]:
    """Handle Ctrl-C, SIGTERM and SIGHUP while the block runs (main thread only; elsewhere a no-op).

    ``abandon`` runs on a second signal, just before the process exits without waiting for
    running shards: it must release the lease without blocking."""
    global _installed
    if threading.current_thread() is not threading.main_thread() or _installed:
        yield  # a nested writer (``build`` running its stages) is served by the outermost handler
        return
    _installed = True
    state = {"signum": 0}

    def handler(signum: int, frame: object) -> None:
        if state["signum"]:
            try:
                abandon()
            finally:
                print(
                    f"{signal.Signals(signum).name} again: abandoning the running shards (they are recomputed on resume)",
                    file=sys.stderr,
                    flush=True,
                )
                os._exit(128 + state["signum"])
        global _stopping
        state["signum"] = signum
        _stopping = True
        _abort_model_calls(signum)
        raise Interrupted(signum)

    # a signal ignored when the process started stays ignored (``nohup``, a background job of a
    # non-interactive shell, where Ctrl-C in the terminal is not meant for it)
    previous = {s: signal.signal(s, handler) for s in HANDLED if signal.getsignal(s) is not signal.SIG_IGN}
    try:
        yield
    finally:
        if not state["signum"]:  # after a signal the handler stays: a second one during the lease
            for s, h in previous.items():  # release and the message must not fall back to dying silently
                signal.signal(s, h)
            _installed = False


def _abort_model_calls(signum: int) -> None:
    """Abandon the model calls in flight (only if a client module was ever loaded: a signal
    handler imports nothing)."""
    endpoint = sys.modules.get("prompts.clients.endpoint")
    if endpoint is None:
        return
    try:
        endpoint.abort_model_calls(f"stopped by {signal.Signals(signum).name}")
    except Exception:  # noqa: BLE001 - the stop itself must go on; the calls then end by their timeouts
        pass


def _ignore_late_signals() -> None:
    """Once a stopped writer has released its lease and said so, a further signal must not turn
    exit status 143 / 129 into death by signal. Python resets its own handlers to the default
    action when the interpreter shuts down (it leaves ignored signals ignored), so the last
    atexit step (registered when this module is imported, before the command's own) ignores
    them: the threads have been joined by then, nothing is left to abandon."""
    if _stopping:
        for s in HANDLED:
            signal.signal(s, signal.SIG_IGN)


atexit.register(_ignore_late_signals)
