"""One writer per run directory: a lease file naming its holder, kept fresh by a heartbeat.

Two writers on one run directory double the work at best and, with different configs, leave
``config.yaml`` describing the other writer's artifacts. Every command that writes a run
directory therefore holds ``<run>/.reactbench-lock.json`` for its whole life; a second writer
fails at once with a message naming the holder (command, host, pid, start, last heartbeat).
Readers (``status``, ``reuse stats``, ``audit``, ``preflight``) never take it; ``review serve`` writes only to the review database.

Local folders: the lease file is also ``flock``-ed, so the kernel releases it the instant its
holder dies (``kill -9`` included); the next writer takes the stale lease over and says so. A
held flock means a live holder, however old its heartbeat (a process stopped with SIGSTOP is
named, not taken over).

Object stores (``s3://``, ``memory://``): the lease is created with a create-only conditional
write and refreshed, taken over and deleted with compare-and-swap on its ETag
(``storage/conditional.py``), so of any number of writers racing for a free or a stale lease
exactly one wins, by construction rather than by timing. A lease counts as stale when its
heartbeat is older than ``ttl_s`` (or, on the same host, when its process is gone); clocks
must roughly agree. A store without conditional writes is refused unless the user opts in to
the best-effort lease (``REACTBENCH_BEST_EFFORT_LEASE=1``: write, wait, re-read, which a
writer pausing at the wrong moment can defeat).
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # storage.fs pulls fsspec; the CLI's early refusal (local_holder) must stay light
    from storage.conditional import ConditionalObjects
    from storage.fs import RunFS

LEASE_FILE = ".reactbench-lock.json"
DEFAULT_TTL_S = 60.0  # a lease whose heartbeat is older is stale (fsspec URLs)
DEFAULT_HEARTBEAT_S = 10.0
SETTLE_S = 0.5  # best-effort lease only: wait this long before re-reading the lease to see who won
BEST_EFFORT_ENV = "REACTBENCH_BEST_EFFORT_LEASE"  # "1": accept a store without conditional writes
ROUNDS = 10  # object stores: a round is lost only to a writer that changed the lease meanwhile

# Run directories this process holds (URL -> lock): a Prefect flow started by a CLI command that
# already holds the lease gets a nested handle (hold_run) instead of refusing its own caller.
_held_here: dict[str, RunLock] = {}
_held_guard = threading.Lock()


class RunLocked(RuntimeError):
    """Another live process holds the run directory; the message names it.

    ``holder`` is None only for a local lease whose flock is held by a process that has not
    written the file yet (stopped between the two steps).
    """

    def __init__(self, where: str, holder: Lease | None, now: float | None = None):
        self.holder = holder
        who = (
            holder.describe(now)
            if holder is not None
            else f"a process that holds the lock of {LEASE_FILE} but has not written its lease yet"
        )
        super().__init__(
            f"{where} is being written by {who}; wait for it to finish (readers such as `reactbench status` need no lock)"
        )


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
        text = (
            f"`{self.owner}` (pid {self.pid} on host {self.host}, started {started}, last heartbeat {age:.0f} s ago)"
        )
        if self.host == socket.gethostname() and process_state(self.pid) == "T":
            text += f"; that process is stopped (SIGSTOP or Ctrl-Z): `kill -CONT {self.pid}` resumes it, `kill {self.pid}` ends it"
        return text

    def to_json(self) -> bytes:
        return json.dumps(asdict(self), indent=1).encode("utf-8")

    @classmethod
    def parse(cls, data: bytes) -> Lease | None:
        """The lease in ``data``, or None when the file is empty or half-written."""
        try:
            doc = json.loads(data.decode("utf-8"))
            return cls(
                **{k: doc[k] for k in ("owner", "host", "pid", "token", "started_at", "heartbeat_at")},
                ttl_s=float(doc.get("ttl_s", DEFAULT_TTL_S)),
            )
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


def process_state(pid: int) -> str | None:
    """The kernel's one-letter state of ``pid`` ("T": stopped), or None where /proc cannot tell."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode("ascii", "replace")
    except OSError:
        return None
    return stat.rsplit(")", 1)[-1].split()[0] if ")" in stat else None


def live_under_flock(holder: Lease | None) -> bool:
    """Whether ``holder``, found in a local lease file whose flock is held, is the live writer.

    The kernel holds a flock only for a live process, so the lease names the writer however old
    its heartbeat (a holder stopped with SIGSTOP beats no more). The exceptions are momentary
    flocks over a lease that names someone else: nothing written yet (None), or a lease whose
    process is gone (``local_holder``'s probe, or a writer about to replace a dead holder's lease).
    """
    if holder is None:
        return False
    return not (holder.host == socket.gethostname() and not pid_alive(holder.pid))


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
        best_effort: bool | None = None,
        lease_file: str = LEASE_FILE,
    ):
        self.run = run
        self.owner = owner
        self.lease_file = (
            lease_file  # another name: a lease on something else than the run directory (a release folder's swap)
        )
        self.ttl_s = ttl_s
        self.heartbeat_s = heartbeat_s
        self.on_message = on_message or (lambda msg: print(msg, file=sys.stderr))
        self.reentrant = reentrant  # code this holder calls may hold_run() the same directory (nested)
        # a store without conditional writes is accepted (best-effort lease) only when asked for
        self.best_effort = (
            best_effort if best_effort is not None else os.environ.get(BEST_EFFORT_ENV, "") not in ("", "0")
        )
        self.lease: Lease | None = None
        self.took_over: Lease | None = None
        self._objects: ConditionalObjects | None = None  # object stores: conditional writes
        self._version: str | None = None  # the ETag of our lease as last written
        self.contended = 0  # object stores: conditional writes this acquire lost to another writer
        self.lost = threading.Event()  # set when another writer replaced our lease (fsspec only)
        self._fd: int | None = None
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None
        self._io = threading.Lock()

    @property
    def path(self) -> str:
        return self.run.path(self.lease_file)

    def _new_lease(self) -> Lease:
        now = time.time()
        return Lease(self.owner, socket.gethostname(), os.getpid(), uuid.uuid4().hex, now, now, self.ttl_s)

    # -- acquire / release ----------------------------------------------------------------
    def acquire(self) -> Lease:
        """Take the lease or raise :class:`RunLocked` naming the live holder."""
        self.run.makedirs()
        if self.run.local:
            previous = self._acquire_local()
        else:
            self._objects = self._conditional_objects()
            previous = (
                self._acquire_conditional(self._objects) if self._objects is not None else self._acquire_best_effort()
            )
        if previous is not None:
            self.took_over = previous
            reason = stale_reason(previous, time.time()) or "its holder is gone (the kernel released its lock)"
            self.on_message(f"Taking over the stale lock of {self.run.url} held by {previous.describe()}: {reason}.")
        self._stop.clear()
        self._beat = threading.Thread(target=self._heartbeat_loop, name="run-lock-heartbeat", daemon=True)
        self._beat.start()
        assert self.lease is not None
        if self.lease_file == LEASE_FILE:  # only a run directory's own lease is found by hold_run / ensure_lease
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
                # A flock held over an empty lease or a dead process's lease is momentary (a
                # writer between creating and writing the file, local_holder's probe, a writer
                # replacing a dead holder's lease): look again shortly.
                if not live_under_flock(holder):
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
        # the flock stayed held for a second over a lease that names no live process: its holder
        # was stopped between taking the flock and writing its lease
        raise RunLocked(self.run.url, None)

    def _conditional_objects(self) -> ConditionalObjects | None:
        """The store's conditional writes; None means the best-effort lease, which must be asked for."""
        from storage.conditional import ConditionalUnsupported, conditional_objects

        objects = conditional_objects(self.run.fs)
        try:
            if objects is None:
                raise ConditionalUnsupported(
                    f"{self.run.protocol}:// offers no conditional writes (create-only, compare-and-swap) that the lease can use"
                )
            objects.verify(self.run.root)
        except ConditionalUnsupported as exc:
            if not self.best_effort:
                raise ConditionalUnsupported(
                    f"cannot lock {self.run.url}: {exc}. Without them two writers could both take the run directory; use a "
                    f"store with conditional writes (S3, or an S3-compatible store honouring If-None-Match and If-Match), or "
                    f"accept a best-effort lease with {BEST_EFFORT_ENV}=1"
                ) from None
            self.on_message(
                f"warning: {exc}; best-effort lease ({BEST_EFFORT_ENV}=1): two writers starting within moments of each other may both run"
            )
            return None
        return objects

    def _acquire_conditional(self, objects: ConditionalObjects) -> Lease | None:
        """Create the lease create-only, or replace a stale one by compare-and-swap on its ETag."""
        mine = self._new_lease()
        data = mine.to_json()
        for _ in range(ROUNDS):
            current = objects.read(self.path)
            if current is None:
                version = objects.create(self.path, data)
                previous = None
            else:
                previous = Lease.parse(current.data)
                now = time.time()
                if previous is not None and previous.token == mine.token:  # our create, whose answer was lost
                    version, previous = current.version, None
                elif previous is not None and stale_reason(previous, now) is None:
                    raise RunLocked(self.run.url, previous, now)
                else:  # stale, or not a lease at all (it names no one to protect)
                    version = objects.replace(self.path, data, current.version)
            if version is not None:
                self.lease, self._version = mine, version
                return previous
            self.contended += (
                1  # another writer created or replaced the lease between our read and our write: look again
            )
        raise RunLocked(self.run.url, Lease.parse(current.data) if current is not None else None)

    def _acquire_best_effort(self) -> Lease | None:
        """Write, wait, re-read: for stores without conditional writes, when the user accepts it."""
        for _ in range(5):
            current = self._read_remote()
            now = time.time()
            if current is not None and stale_reason(current, now) is None:
                raise RunLocked(self.run.url, current, now)
            mine = self._new_lease()
            self.run.write_bytes_atomic(self.lease_file, mine.to_json())
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
            elif self.lease is not None and self._objects is not None:
                if self._version is not None:
                    self._objects.delete(self.path, self._version)  # only if it is still ours
            elif self.lease is not None:
                current = self._read_remote()
                if current is not None and current.token == self.lease.token:
                    self.run.rm(self.lease_file)
            self.lease = None
            self._version = None

    def drop_now(self) -> None:
        """Remove a local lease file without waiting for anything (a second stop signal: the
        process exits next and the kernel drops the ``flock``). A lease on an object store is left
        to go stale: deleting it would wait on the network."""
        if self.run.local and self.lease is not None:
            try:
                os.unlink(self.path)
            except OSError:
                pass

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()

    # -- heartbeat ------------------------------------------------------------------------
    def heartbeat(self) -> None:
        """Refresh ``heartbeat_at``; on object stores, notice when another writer replaced the lease."""
        with self._io:
            if self.lease is None or self.lost.is_set():
                return
            fresh = Lease(**{**asdict(self.lease), "heartbeat_at": time.time()})
            if self._fd is not None:
                self._write_fd(fresh)
            elif self._objects is not None and self._version is not None:
                version = self._objects.replace(self.path, fresh.to_json(), self._version)
                if version is None:
                    self._lost(self._read_remote())
                    return
                self._version = version
            else:
                current = self._read_remote()
                if current is None or current.token != self.lease.token:
                    self._lost(current)
                    return
                self.run.write_bytes_atomic(self.lease_file, fresh.to_json())
            self.lease = fresh

    def _lost(self, current: Lease | None) -> None:
        """Say once that the lease is no longer ours (``lost`` is set; we stop refreshing it)."""
        if not self.lost.is_set():
            self.lost.set()
            who = current.describe() if current else "nobody (the lease file is gone)"
            self.on_message(
                f"warning: the lock of {self.run.url} is now held by {who}; this process no longer owns the run directory"
            )
        self._version = None

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
            return Lease.parse(self.run.read_bytes(self.lease_file))
        except FileNotFoundError:
            return None


def read_lease(run: RunFS) -> Lease | None:
    """The lease currently recorded in a run directory (for display; it may be stale)."""
    try:
        return Lease.parse(run.read_bytes(LEASE_FILE))
    except (FileNotFoundError, IsADirectoryError):
        return None


class LeaseLost(RuntimeError):
    """This writer's lease was taken over: what it computed must not land in the run directory."""


def held_token(run: RunFS) -> str | None:
    """The token of the lease this process holds on ``run``, or None (not held here)."""
    with _held_guard:
        lock = _held_here.get(run.url)
    return lock.lease.token if lock is not None and lock.lease is not None else None


def ensure_lease(run: RunFS, token: str | None) -> None:
    """Refuse to land work (a shard, a manifest) for a run whose lease is no longer ours.

    Why: a holder that paused past its ttl (a GC pause, a stopped process, a partitioned node)
    has been taken over; a shard it finishes afterwards would overwrite the new holder's. In the
    holding process the heartbeat's ``lost`` flag answers at no cost; elsewhere (a Ray worker on
    another node, given the driver's ``token``) one read of the lease on object stores does. A
    local run directory is guarded by its flock and needs no read.
    """
    with _held_guard:
        lock = _held_here.get(run.url)
    if lock is not None:
        if lock.lost.is_set():
            raise LeaseLost(
                f"the lock of {run.url} was taken over while this process worked; its results are not written"
            )
        return
    if token is None or run.local:
        return
    current = read_lease(run)
    if current is None or current.token != token:
        who = current.describe() if current else "nobody (the lease file is gone)"
        raise LeaseLost(f"the lock of {run.url} is now held by {who}; this worker's results are not written")


def local_holder(run_dir: str) -> Lease | None:
    """The live holder of a local run directory's lease, or None (free, stale, or not local).

    A cheap look that needs neither fsspec nor the CLI: ``reactbench build`` on a locked run
    directory is refused by this before the heavy imports. It only ever refuses; taking the
    lease stays with :meth:`RunLock.acquire`.
    """
    import fcntl

    from storage.literal_paths import UrlRefused, is_local, literal_url

    try:
        run_dir = literal_url(run_dir)
    except UrlRefused:  # refused with its reason by the full CLI
        return None
    if not is_local(run_dir):
        return None
    path = os.path.join(run_dir, LEASE_FILE)
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = Lease.parse(os.pread(fd, 1 << 16, 0))
            return holder if live_under_flock(holder) else None
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def writer_alive(run: RunFS) -> bool:
    """Whether a live process holds the run directory's lease: a stage manifest that says
    ``running`` is true only then (a writer killed with ``kill -9`` left it saying so)."""
    if run.local:
        return local_holder(run.url) is not None
    lease = read_lease(run)
    return lease is not None and stale_reason(lease, time.time()) is None


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

    def drop_now(self) -> None:
        return None  # the outer holder drops it

    def __enter__(self) -> NestedLock:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None


def hold_run(url: str, owner: str, **kwargs: Any) -> RunLock | NestedLock:
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
