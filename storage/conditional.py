"""Conditional writes on object stores: the one primitive the run lease needs there.

An object store has no lock, but S3 (and the S3-compatible stores that implement it) decides a
conditional request atomically: a PUT with ``If-None-Match: *`` succeeds only if the key does
not exist (create-only), a PUT or DELETE with ``If-Match: <etag>`` only if the object is still
the one that was read (compare-and-swap). Of two writers racing on the same key, exactly one
succeeds and the other gets 412, whatever the timing: no settle delay, no re-read.

``conditional_objects(fs)`` gives this interface for a filesystem, or None when the store has
no such writes (the lease then refuses it unless told to be best-effort). A store that accepts
the headers but ignores them would be worse than one that refuses them, so the S3 version
probes once per bucket and process (create-only twice, a mismatched ``If-Match``) before it
is trusted. ``memory://`` (tests, one process) gets the same semantics under a process lock.
"""

from __future__ import annotations

import hashlib
import os
import threading
import uuid
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import fsspec

from storage.fs import StoreError

# S3 answers 412 when a condition fails, and 409 when a concurrent conditional write to the
# same key was in flight (the client is told to retry: for us, someone else changed the key).
CONDITION_FAILED = {"PreconditionFailed", "412", "ConditionalRequestConflict", "409"}
MISSING = {"NoSuchKey", "404"}
UNSUPPORTED = {
    "NotImplemented",
    "501",
    "InvalidArgument",
    "InvalidRequest",
    "400",
}  # how stores without them refuse the headers


@dataclass(frozen=True)
class Versioned:
    """An object's bytes and the version (ETag) they were read at."""

    data: bytes
    version: str


class ConditionalObjects(ABC):
    """Create-only and compare-and-swap writes of single objects (paths as the filesystem takes them)."""

    name: str = "conditional"

    @abstractmethod
    def read(self, path: str) -> Versioned | None:
        """The object and its version, or None when it does not exist."""

    @abstractmethod
    def create(self, path: str, data: bytes) -> str | None:
        """Write ``data`` only if ``path`` does not exist; its version, or None when it exists."""

    @abstractmethod
    def replace(self, path: str, data: bytes, version: str) -> str | None:
        """Write ``data`` only if ``path`` is still at ``version``; the new version, or None."""

    @abstractmethod
    def delete(self, path: str, version: str) -> bool:
        """Delete ``path`` only if it is still at ``version``; False when it changed or is gone."""

    @abstractmethod
    def verify(self, folder: str) -> None:
        """Raise :class:`ConditionalUnsupported` when the store below ``folder`` cannot be trusted."""


class ConditionalUnsupported(StoreError):
    """The store takes no conditional writes (or ignores them): a lease there cannot be exact."""


def _error_code(exc: BaseException) -> str:
    """The S3 error code behind an s3fs exception (s3fs keeps the ClientError as the cause)."""
    for err in (exc, exc.__cause__):
        response = getattr(err, "response", None)
        if isinstance(response, dict):
            code = str(response.get("Error", {}).get("Code", ""))
            status = str(response.get("ResponseMetadata", {}).get("HTTPStatusCode", ""))
            return code if code else status
    if isinstance(exc, FileNotFoundError):
        return "NoSuchKey"
    return type(exc).__name__


class S3Objects(ConditionalObjects):
    """Conditional writes through s3fs's client: ``IfNoneMatch="*"``, ``IfMatch=<etag>``."""

    name = "s3"
    _verified: set[tuple[str, str]] = set()  # (endpoint, bucket) pairs probed in this process
    _verified_guard = threading.Lock()

    def __init__(self, fs: fsspec.AbstractFileSystem):
        self.fs = fs

    def _call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        bucket, key, _ = self.fs.split_path(path)
        return self.fs.call_s3(method, Bucket=bucket, Key=key, **kwargs)

    def _put(self, path: str, data: bytes, **condition: str) -> str | None:
        try:
            resp = self._call("put_object", path, Body=data, **condition)
        except (OSError, ValueError) as exc:
            code = _error_code(exc)
            if code in CONDITION_FAILED or code in MISSING:
                return None
            raise
        finally:
            self.fs.invalidate_cache(path)
        return str(resp["ETag"])

    def read(self, path: str) -> Versioned | None:
        bucket, key, _ = self.fs.split_path(path)

        async def get() -> Versioned | None:
            try:
                resp = await self.fs._call_s3("get_object", Bucket=bucket, Key=key)
            except FileNotFoundError:
                return None
            body = resp["Body"]
            try:
                return Versioned(await body.read(), str(resp["ETag"]))
            finally:
                body.close()

        return fsspec.asyn.sync(self.fs.loop, get)

    def create(self, path: str, data: bytes) -> str | None:
        return self._put(path, data, IfNoneMatch="*")

    def replace(self, path: str, data: bytes, version: str) -> str | None:
        return self._put(path, data, IfMatch=version)

    def delete(self, path: str, version: str) -> bool:
        # Look first: a store that takes If-Match on PUT but ignores it on DELETE would otherwise
        # delete a lease that another writer took over since our last heartbeat.
        current = self.read(path)
        if current is None or current.version != version:
            return False
        try:
            self._call("delete_object", path, IfMatch=version)
        except (OSError, ValueError) as exc:
            code = _error_code(exc)
            if code in CONDITION_FAILED or code in MISSING:
                return False
            if code not in UNSUPPORTED:
                raise
            self.fs.rm_file(path)  # no conditional DELETE at all: the look above is all we have
        finally:
            self.fs.invalidate_cache(path)
        return True

    def verify(self, folder: str) -> None:
        """Refuse a store that ignores or rejects conditional writes (probed once per bucket)."""
        bucket = self.fs.split_path(folder)[0]
        where = (str(self.fs.endpoint_url or os.environ.get("AWS_ENDPOINT_URL", "")), bucket)
        with self._verified_guard:
            if where in self._verified:
                return
        probe = f"{folder.rstrip('/')}/.reactbench-probe-{uuid.uuid4().hex}"
        try:
            first = self.create(probe, b"1")
            second = self.create(probe, b"2")
            mismatch = self.replace(probe, b"3", '"00000000000000000000000000000000"') if first else None
        except (
            OSError
        ) as exc:  # a store that has no such requests says so; anything else (denied, down) is not ours to judge
            if _error_code(exc) not in UNSUPPORTED:
                raise
            raise ConditionalUnsupported(
                f"the store of s3://{bucket} refused a conditional write ({_error_code(exc)}: {exc})"
            ) from None
        finally:
            try:
                self.fs.rm_file(probe)
            except FileNotFoundError:
                pass
        if first is None or second is not None or mismatch is not None:
            raise ConditionalUnsupported(
                f"the store of s3://{bucket} accepts conditional writes but does not honour them (If-None-Match / If-Match are ignored)"
            )
        with self._verified_guard:
            self._verified.add(where)


class MemoryObjects(ConditionalObjects):
    """fsspec's in-process ``memory://`` store, made conditional by one process-wide lock."""

    name = "memory"
    _lock = threading.Lock()

    def __init__(self, fs: fsspec.AbstractFileSystem):
        self.fs = fs

    @staticmethod
    def _version(data: bytes) -> str:
        return hashlib.md5(data).hexdigest()  # noqa: S324 -- an ETag, as S3 computes it, not security

    def _current(self, path: str) -> bytes | None:
        try:
            return bytes(self.fs.cat_file(path))
        except FileNotFoundError:
            return None

    def read(self, path: str) -> Versioned | None:
        with self._lock:
            data = self._current(path)
        return None if data is None else Versioned(data, self._version(data))

    def create(self, path: str, data: bytes) -> str | None:
        with self._lock:
            if self._current(path) is not None:
                return None
            self.fs.pipe_file(path, data)
        return self._version(data)

    def replace(self, path: str, data: bytes, version: str) -> str | None:
        with self._lock:
            current = self._current(path)
            if current is None or self._version(current) != version:
                return None
            self.fs.pipe_file(path, data)
        return self._version(data)

    def delete(self, path: str, version: str) -> bool:
        with self._lock:
            current = self._current(path)
            if current is None or self._version(current) != version:
                return False
            self.fs.rm_file(path)
        return True

    def verify(self, folder: str) -> None:
        return None  # one process, one lock: nothing to probe


def conditional_objects(fs: fsspec.AbstractFileSystem) -> ConditionalObjects | None:
    """Conditional writes for ``fs``, or None when its store has none we can use."""
    protocol = fs.protocol[0] if isinstance(fs.protocol, (tuple, list)) else fs.protocol
    if protocol in ("s3", "s3a"):
        return S3Objects(fs)
    if protocol == "memory":
        return MemoryObjects(fs)
    return None
