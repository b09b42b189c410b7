"""Waiting for a server the tests started (Prefect, Label Studio, the review app): the one poll
loop, so each server's start-up failure reads the same (exit status or timeout, and its log)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable

import httpx


def wait_until_ready(
    proc: subprocess.Popen,
    ready: Callable[[], bool],
    what: str,
    log_tail: Callable[[], str],
    timeout_s: float,
    poll_s: float = 0.5,
    error: type[Exception] = RuntimeError,
    stop: Callable[[], None] | None = None,
) -> None:
    """Poll ``ready()`` (an HTTP probe; transport errors count as not ready) until it is true.
    Raises ``error`` naming ``what`` and the log's tail when the process exits first or
    ``timeout_s`` passes (after ``stop()``, or killing the process, on a timeout)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise error(f"{what} exited with {proc.returncode} while starting:\n{log_tail()}")
        try:
            if ready():
                return
        except httpx.TransportError:
            pass
        time.sleep(poll_s)
    if stop is not None:
        stop()
    elif proc.poll() is None:
        proc.kill()
        proc.wait()
    raise error(f"{what} did not answer within {timeout_s:.0f} s:\n{log_tail()}")
