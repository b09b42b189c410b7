"""One writer per run directory: a lease file naming its holder, kept fresh by a heartbeat.

Two writers on one run directory double the work at best and, with different configs, leave
``config.yaml`` describing the other writer's artifacts. Every command that writes a run
directory therefore holds ``<run>/.reactbench-lock.json`` for its whole life; a second writer
fails at once with a message naming the holder (command, host, pid, start, last heartbeat).
Readers (``status``, ``report``, ``review serve``) never take it.

Local folders: the lease file is also ``flock``-ed, so the kernel releases it the instant its
holder dies (``kill -9`` included); the next writer takes the stale lease over and says so.
fsspec URLs (``s3://``, ``gs://``, ``memory://``): there is no lock primitive, so the lease is
written, re-read after a short settle delay to see who won, and counts as stale when its
heartbeat is older than ``ttl_s`` (or, on the same host, when its process is gone). This is a
best-effort guard against concurrent commands, not a consensus protocol: clocks must roughly agree.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
import uuid
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:  # storage.fs pulls fsspec; the CLI's early refusal (local_holder) must stay light
    from storage.fs import RunFS

LEASE_FILE = ".reactbench-lock.json"
DEFAULT_TTL_S = 60.0  # a lease whose heartbeat is older is stale (fsspec URLs)
DEFAULT_HEARTBEAT_S = 10.0
SETTLE_S = 0.5  # fsspec URLs: wait this long before re-reading the lease to see who won

# Run directories this process holds (URL -> lock): a Prefect flow started by a CLI command that
# already holds the lease gets a nested handle (hold_run) instead of refusing its own caller.
_held_here: dict[str, "RunLock"] = {}
_held_guard = threading.Lock()


class RunLocked(RuntimeError):
    """Another live process holds the run directory; the message names it."""

    def __init__(self, where: str, holder: "Lease", now: float | None = None):
        self.holder = holder
        super().__init__(f"{where} is being written by {holder.describe(now)}; wait for it to finish (readers such as `reactbench status` need no lock)")


@dataclass(frozen=True)
class Lease:
    """Who holds a run directory; ``heartbeat_at`` is refreshed while the holder runs."""

    owner: str  # the command, e.g. "reactbench build"
    host: str
    pid: int
    token: str
    started_at: float
    heartbeat_at: float
    ttl_s: float = DEFAULT_TTL_S

    def describe(self, now: float | None = None) -> str:
        age = (now if now is not None else time.time()) - self.heartbeat_at
        started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(self.started_at))
        return f"`{self.owner}` (pid {self.pid} on host {self.host}, started {started}, last heartbeat {age:.0f} s ago)"

    def to_json(self) -> bytes:
        return json.dumps(asdict(self), indent=1).encode("utf-8")

    @classmethod
    def parse(cls, data: bytes) -> "Lease | None":
        """The lease in ``data``, or None when the file is empty or half-written."""
        try:
            doc = json.loads(data.decode("utf-8"))
            return cls(**{k: doc[k] for k in ("owner", "host", "pid", "token", "started_at", "heartbeat_at")}, ttl_s=float(doc.get("ttl_s", DEFAULT_TTL_S)))
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            return None


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def stale_reason(lease: Lease, now: float) -> str | None:
    """Why ``lease`` no longer protects anything, or None while its holder may still be writing."""
    if lease.host == socket.gethostname() and not pid_alive(lease.pid):
        return f"its process {lease.pid} is gone"
    if now - lease.heartbeat_at > lease.ttl_s:
        return f"no heartbeat for {now - lease.heartbeat_at:.0f} s (ttl {lease.ttl_s:.0f} s)"
    return None


class RunLock:
    """The write lease of one run directory; use as a context manager around a writing command.

    ``on_message`` receives the takeover notice when a stale lease is replaced. ``reentrant``:
    code running under this holder (in this process) may ``hold_run`` the same directory and
    gets a :class:`NestedLock`; otherwise a second holder in this process is refused like any other.
    """

    def __init__(
        self,
        run: RunFS,
        owner: str,
        *,
        ttl_s: float = DEFAULT_TTL_S,
        heartbeat_s: float = DEFAULT_HEARTBEAT_S,
        on_message: Callable[[str], None] | None = None,
        reentrant: bool = False,
    ):
        self.run = run
        self.owner = owner
        self.ttl_s = ttl_s
        self.heartbeat_s = heartbeat_s
        self.on_message = on_message or (lambda msg: print(msg, file=sys.stderr))
        self.reentrant = reentrant  # code this holder calls may hold_run() the same directory (nested)
        self.lease: Lease | None = None
        self.took_over: Lease | None = None
        self.lost = threading.Event()  # set when another writer replaced our lease (fsspec only)
        self._fd: int | None = None
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None
        self._io = threading.Lock()

    @property
    def local(self) -> bool:
        return self.run.protocol in ("file", "local")

    @property
    def path(self) -> str:
        return self.run.path(LEASE_FILE)

    def _new_lease(self) -> Lease:
        now = time.time()
        return Lease(self.owner, socket.gethostname(), os.getpid(), uuid.uuid4().hex, now, now, self.ttl_s)

    # -- acquire / release ----------------------------------------------------------------
    def acquire(self) -> Lease:
        """Take the lease or raise :class:`RunLocked` naming the live holder."""
        self.run.makedirs()
        previous = self._acquire_local() if self.local else self._acquire_remote()
        if previous is not None:
            self.took_over = previous
            reason = stale_reason(previous, time.time()) or "its holder is gone (the kernel released its lock)"
            self.on_message(f"Taking over the stale lock of {self.run.url} held by {previous.describe()}: {reason}.")
        self._stop.clear()
        self._beat = threading.Thread(target=self._heartbeat_loop, name="run-lock-heartbeat", daemon=True)
        self._beat.start()
        assert self.lease is not None
        with _held_guard:
            _held_here[self.run.url] = self
        return self.lease

    def _acquire_local(self) -> Lease | None:
        import fcntl

        for _ in range(20):
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = self._read_fd(fd)
                os.close(fd)
                # None: the holder is between creating and writing the file. A stale lease under
                # a held flock: a momentary holder (local_holder's probe, or a writer about to
                # replace the lease), not a live writer; either way, look again shortly.
                if holder is None or stale_reason(holder, time.time()) is not None:
                    time.sleep(0.05)
                    continue
                raise RunLocked(self.run.url, holder) from None
            try:  # the file may have been unlinked by a releasing holder after we opened it
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if not same:
                os.close(fd)
                continue
            previous = self._read_fd(fd)
            self._fd = fd
            self.lease = self._new_lease()
            self._write_fd(self.lease)
            return previous
        raise RuntimeError(f"could not lock {self.path}: the lease file keeps changing")

    def _acquire_remote(self) -> Lease | None:
        for _ in range(5):
            current = self._read_remote()
            now = time.time()
            if current is not None and stale_reason(current, now) is None:
                raise RunLocked(self.run.url, current, now)
            mine = self._new_lease()
            self.run.write_bytes_atomic(LEASE_FILE, mine.to_json())
            time.sleep(SETTLE_S if self.run.protocol != "memory" else 0.0)
            check = self._read_remote()
            if check is not None and check.token == mine.token:
                self.lease = mine
                return current
            if check is not None and stale_reason(check, time.time()) is None:
                raise RunLocked(self.run.url, check)
        raise RuntimeError(f"could not take the lease {self.path}: other writers keep replacing it")

    def release(self) -> None:
        """Stop the heartbeat and remove the lease (only if it is still ours)."""
        with _held_guard:
            if _held_here.get(self.run.url) is self:
                del _held_here[self.run.url]
        self._stop.set()
        if self._beat is not None:
            self._beat.join(timeout=5)
            self._beat = None
        with self._io:
            if self._fd is not None:
                try:
                    os.unlink(self.path)  # while still holding the flock: no one can hold this inode after us
                except FileNotFoundError:
                    pass
                os.close(self._fd)
                self._fd = None
            elif self.lease is not None:
                current = self._read_remote()
                if current is not None and current.token == self.lease.token:
                    self.run.rm(LEASE_FILE)
            self.lease = None

    def __enter__(self) -> "RunLock":
        self.acquire()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()

    # -- heartbeat ------------------------------------------------------------------------
    def heartbeat(self) -> None:
        """Refresh ``heartbeat_at``; on fsspec, notice when another writer replaced the lease."""
        with self._io:
            if self.lease is None:
                return
            if self._fd is None:
                current = self._read_remote()
                if current is None or current.token != self.lease.token:
                    if not self.lost.is_set():
                        self.lost.set()
                        who = current.describe() if current else "nobody (the lease file is gone)"
                        self.on_message(f"warning: the lock of {self.run.url} is now held by {who}; this process no longer owns the run directory")
                    return
            self.lease = Lease(**{**asdict(self.lease), "heartbeat_at": time.time()})
            if self._fd is not None:
                self._write_fd(self.lease)
            else:
                self.run.write_bytes_atomic(LEASE_FILE, self.lease.to_json())

    def _heartbeat_loop(self) -> None:
        while not self._stop.wait(self.heartbeat_s):
            try:
                self.heartbeat()
            except OSError as exc:  # a flaky remote store: the next beat retries
                self.on_message(f"warning: could not refresh the lock of {self.run.url}: {exc}")

    # -- file access ----------------------------------------------------------------------
    @staticmethod
    def _read_fd(fd: int) -> Lease | None:
        return Lease.parse(os.pread(fd, 1 << 16, 0))

    def _write_fd(self, lease: Lease) -> None:
        assert self._fd is not None
        data = lease.to_json()
        os.pwrite(self._fd, data, 0)
        os.ftruncate(self._fd, len(data))
        os.fsync(self._fd)

    def _read_remote(self) -> Lease | None:
        try:
            return Lease.parse(self.run.read_bytes(LEASE_FILE))
        except FileNotFoundError:
            return None


def read_lease(run: RunFS) -> Lease | None:
    """The lease currently recorded in a run directory (for display; it may be stale)."""
    try:
        return Lease.parse(run.read_bytes(LEASE_FILE))
    except (FileNotFoundError, IsADirectoryError):
        return None


def local_holder(run_dir: str) -> Lease | None:
    """The live holder of a local run directory's lease, or None (free, stale, or not local).

    A cheap look that needs neither fsspec nor the CLI: ``reactbench build`` on a locked run
    directory is refused by this before the heavy imports. It only ever refuses; taking the
    lease stays with :meth:`RunLock.acquire`.
    """
    import fcntl

    if "://" in run_dir and not run_dir.startswith("file://"):
        return None
    path = os.path.join(run_dir.removeprefix("file://"), LEASE_FILE)
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = Lease.parse(os.pread(fd, 1 << 16, 0))
            return holder if holder is not None and stale_reason(holder, time.time()) is None else None
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


class NestedLock:
    """A handle on a lease this process already holds: entering and leaving it change nothing."""

    def __init__(self, outer: RunLock):
        self.outer = outer

    @property
    def lease(self) -> Lease | None:
        return self.outer.lease

    def acquire(self) -> Lease | None:
        return self.outer.lease

    def release(self) -> None:
        return None

    def __enter__(self) -> "NestedLock":
        return self

    def __exit__(self, *exc: Any) -> None:
        return None


def hold_run(url: str, owner: str, **kwargs: Any) -> "RunLock | NestedLock":
    """The lock of the run directory at ``url`` (a context manager): ``with hold_run(d, "reactbench build"): ...``.

    When this process already holds it through a ``reentrant`` lock (the CLI's ``build`` running
    the Prefect build flow in process), the handle is nested: the outer holder keeps the lease
    and releases it.
    """
    from storage.fs import RunFS

    run = RunFS.open(url)
    with _held_guard:
        outer = _held_here.get(run.url)
        if outer is not None and outer.reentrant and outer.lease is not None:
            return NestedLock(outer)
    return RunLock(run, owner, **kwargs)

