"""Which shard failures are worth another attempt, and how many attempts a shard gets.

One classification for every mode: the local thread mapper retries with it, the Prefect
mapper hands it to Prefect as the task's ``retry_condition_fn``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from storage.fs import is_disk_full
from tasks.engine.build_config import BuildConfig

_PERMANENT_OS_ERRORS = (FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError)
_TRANSIENT_NAME_HINTS = (
    "outofmemory",
    "timeout",
    "connection",
    "ratelimit",
    "serviceunavailable",
    "internalserver",
    "transport",
)


def is_transient(exc: BaseException) -> bool:
    """Errors worth retrying: network and I/O hiccups, timeouts, (GPU) out-of-memory, rate limits.

    Matching by class name keeps torch / openai / httpx imports out of this module:
    ``torch.cuda.OutOfMemoryError``, ``openai.APIConnectionError``, ``openai.RateLimitError``,
    ``httpx.ConnectTimeout`` all match. Programming and data errors (KeyError, ValueError,
    schema errors) are not retried: they would fail the same way again; nor is an error that
    says so (``retryable = False``: a model server found down, calls aborted by a stop signal);
    nor a full disk (ENOSPC, EDQUOT), which stays full until someone frees space: the stage stops
    with one line and the rerun computes the rest.
    """
    if getattr(exc, "retryable", None) is False:
        return False
    for e in _chain(exc):
        if isinstance(e, _PERMANENT_OS_ERRORS) or is_disk_full(e):
            return False
        if isinstance(e, (OSError, MemoryError, TimeoutError, ConnectionError)):
            return True
        name = type(e).__name__.lower()
        if any(h in name for h in _TRANSIENT_NAME_HINTS):
            return True
    return False


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        yield cur
        cur = cur.__cause__ or cur.__context__


@dataclass(frozen=True)
class RetryPolicy:
    """``retries`` extra attempts of a failed shard, ``delay_s`` apart; transient errors only unless
    ``transient_only`` is false (``orchestration.retries`` / ``retry_delay_s`` / ``retry_transient_only``)."""

    retries: int = 0
    delay_s: float = 0.0
    transient_only: bool = True

    def should_retry(self, exc: BaseException) -> bool:
        """Whether this error deserves another attempt (the attempt budget is the mapper's)."""
        if getattr(exc, "retryable", None) is False or any(is_disk_full(e) for e in _chain(exc)):
            return False
        return not self.transient_only or is_transient(exc)

    @classmethod
    def from_config(cls, config: BuildConfig | None) -> RetryPolicy:
        orch = getattr(config, "orchestration", None)
        if orch is None:
            return cls()
        return cls(int(orch.retries), float(orch.retry_delay_s), bool(orch.retry_transient_only))
