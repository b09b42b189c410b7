"""What the model servers of this process did: requests, failures, retries, per server.

Retries hide a sick server: a server failing every second request still answers every call
in the end, and the command used to exit 0 minutes late without a word. Every ``openai``
client counts here (thread-safe, process-wide, keyed by URL and model), so that

* the stage runner writes what a stage's calls cost into its manifest (``model_calls``:
  :func:`since` a :func:`snapshot` taken when the stage started);
* the executable ends a finished command with one line per server whose requests failed, and
  exits :data:`RETRIED_EXIT` when the share of failed requests passed ``mllm.max_error_rate``
  (:func:`retry_report`).

A shard run in another process (a Ray worker) counts there: it reports what it did
(:func:`since` with ``limits``) and the process that planned the stage adds it to its own
counts (:func:`merge`), so the manifest and the exit status cover the workers' calls too.
:data:`PROCESS` tells the two apart.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, fields

RETRIED_EXIT = 7  # a command that finished, but only through retries of a server failing too often
PROCESS = uuid.uuid4().hex  # this process's counts; a job carried to another process reports back


@dataclass
class ServerCalls:
    """Counts for one (URL, model); ``max_error_rate`` is the lowest threshold any client set."""

    url: str
    model: str
    max_error_rate: float = 1.0
    calls: int = 0  # calls finished (one per question asked), retries not counted
    requests: int = 0  # HTTP attempts, retries included
    failed_requests: int = 0  # attempts that failed: an HTTP error, a timeout, a dropped connection
    retried: int = 0  # failed attempts that were followed by another attempt
    answered_after_retry: int = 0  # calls that got their answer only after a failed attempt
    failed_calls: int = 0  # calls that failed for good

    @property
    def error_rate(self) -> float:
        return self.failed_requests / self.requests if self.requests else 0.0


_COUNTERS = tuple(f.name for f in fields(ServerCalls) if f.type == "int")
_SERVERS: dict[tuple[str, str], ServerCalls] = {}
_LOCK = threading.Lock()


def server(url: str, model: str, max_error_rate: float = 1.0) -> ServerCalls:
    """The counts of (``url``, ``model``), created on first use."""
    with _LOCK:
        found = _SERVERS.get((url, model))
        if found is None:
            found = _SERVERS[(url, model)] = ServerCalls(url, model, max_error_rate)
        found.max_error_rate = min(found.max_error_rate, max_error_rate)
        return found


def count(entry: ServerCalls, **deltas: int) -> None:
    """Add ``deltas`` (counter name -> increment) to ``entry``."""
    with _LOCK:
        for name, n in deltas.items():
            setattr(entry, name, getattr(entry, name) + n)


def snapshot() -> dict[tuple[str, str], dict[str, int]]:
    """The counters now, to subtract later (:func:`since`)."""
    with _LOCK:
        return {k: {c: getattr(v, c) for c in _COUNTERS} for k, v in _SERVERS.items()}


def since(before: dict[tuple[str, str], dict[str, int]], limits: bool = False) -> list[dict[str, str | int | float]]:
    """What each server did after ``before``: one dict per server that was asked anything, with
    its counts and ``error_rate`` (failed requests / requests, rounded to 4 places); ``limits``
    adds each server's ``max_error_rate`` (what :func:`merge` needs)."""
    out = []
    with _LOCK:
        for key, entry in sorted(_SERVERS.items()):
            old = before.get(key, {})
            d = {c: getattr(entry, c) - old.get(c, 0) for c in _COUNTERS}
            if d["requests"] or d["calls"]:
                rate = d["failed_requests"] / d["requests"] if d["requests"] else 0.0
                row: dict[str, str | int | float] = {"url": entry.url, "model": entry.model, **d}
                row["error_rate"] = round(rate, 4)
                if limits:
                    row["max_error_rate"] = entry.max_error_rate
                out.append(row)
    return out


def merge(reported: Iterable[Mapping[str, object]]) -> None:
    """Add the counts another process reported (:func:`since` with ``limits``) to this process's."""
    for row in reported:
        limit = row.get("max_error_rate", 1.0)
        entry = server(str(row["url"]), str(row["model"]), float(limit) if isinstance(limit, int | float) else 1.0)
        count(entry, **{c: int(n) for c in _COUNTERS if isinstance(n := row.get(c, 0), int)})


def retry_report() -> tuple[list[str], bool]:
    """(one line per server whose requests failed in this process, whether any server's share of
    failed requests passed its ``mllm.max_error_rate``)."""
    lines, over = [], False
    with _LOCK:
        entries = [ServerCalls(**asdict(e)) for e in _SERVERS.values()]
    for e in sorted(entries, key=lambda e: (e.url, e.model)):
        if not e.failed_requests:
            continue
        too_many = e.error_rate > e.max_error_rate
        over |= too_many
        verdict = (
            f"more than mllm.max_error_rate {e.max_error_rate:g}: the results held up only through retries (exit {RETRIED_EXIT})"
            if too_many
            else f"within mllm.max_error_rate {e.max_error_rate:g}"
        )
        lines.append(
            f"model server {e.url} (model {e.model!r}): {e.failed_requests} of {e.requests} requests failed "
            f"({100 * e.error_rate:.1f} %), {e.retried} retried; {e.answered_after_retry} of {e.calls} calls answered "
            f"only after a retry, {e.failed_calls} failed; {verdict}"
        )
    return lines, over


def reset() -> None:
    """Forget every count (a test that runs commands in one process)."""
    with _LOCK:
        _SERVERS.clear()
