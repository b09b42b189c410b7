"""fsspec access for run directories: one place that knows how to join, list and write atomically.

Every artifact path goes through here so that a run directory on ``s3://`` or ``memory://``
behaves like a local folder. How a write is made whole depends on the store: a local file is
written to a temporary sibling and renamed (a reader never sees half a file); an object store
publishes an object only once its upload completes (a single PUT, or the completion of a
multipart upload), so there the bytes go straight to their final key: a rename would be a
copy plus a delete, twice the traffic and no more atomic. Completion markers are written after
the outputs they vouch for, so a writer killed mid-shard leaves no marker either way.
"""

from __future__ import annotations

import errno
import os
import posixpath
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import BinaryIO

import fsspec
from fsspec.core import url_to_fs
from fsspec.implementations.local import LocalFileSystem

from storage.literal_paths import UrlRefused, literal_url

# Stores where one PUT publishes an object whole (no partial object is ever visible).
OBJECT_STORES = frozenset({"s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "memory"})
# The extra of this package that installs a protocol's fsspec backend.
BACKEND_EXTRAS = {"s3": "s3", "s3a": "s3"}
# s3fs caches listings for the life of the process; other processes (a second node, Ray
# workers, the next command) write the same run directory, so every listing is asked afresh.
STORAGE_OPTIONS: dict[str, dict[str, object]] = {
    "s3": {"use_listings_cache": False},
    "s3a": {"use_listings_cache": False},
}


# Characters fsspec reads as a glob in a path given to cat / rm / copy of several files.
GLOB_CHARS = frozenset("*?[")


class StoreError(RuntimeError):
    """A run directory's store cannot be used as asked (missing backend, no conditional writes)."""


def missing_backend(url: str, exc: ImportError) -> StoreError:
    """The error for a URL whose fsspec backend is not installed, naming what to install."""
    protocol = url.split("://", 1)[0]
    extra = BACKEND_EXTRAS.get(protocol)
    hint = (
        f"pip install 'reactbench-pipeline[{extra}]'"
        if extra
        else f"install the fsspec backend for {protocol}:// ({exc})"
    )
    return StoreError(f"{url}: no fsspec backend for {protocol}:// is installed; {hint}")


class DiskFull(OSError):
    """A write ran out of space (ENOSPC): one line naming the file, its size and the space free.

    Still an ``OSError`` with ``errno.ENOSPC``, so retry policies treat it as before."""

    def __init__(self, path: str, needed: int | None, free: int | None):
        """``needed`` None: a write whose size nobody knows (a database page, SQLite's journal)."""
        self.path, self.needed, self.free = path, needed, free
        need = f": it needs {_mb(needed)}" if needed is not None else ""
        have = f", {_mb(free)} free there" if free is not None else ""
        super().__init__(errno.ENOSPC, f"no space left on device writing {path}{need}{have}")
        self.filename = path

    def __str__(self) -> str:
        return self.strerror or ""

    def __reduce__(self):  # pickles across processes (Ray) with its fields
        return (type(self), (self.path, self.needed, self.free))


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 100_000 else f"{n} bytes"


def free_bytes(folder: str) -> int | None:
    """Bytes free to this user on the filesystem of a local folder (None when it cannot be read)."""
    try:
        st = os.statvfs(folder)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


def is_disk_full(exc: BaseException) -> bool:
    """ENOSPC (or EDQUOT, a full quota), whatever wrapped it (pyarrow sets no errno)."""
    return getattr(exc, "errno", None) in (errno.ENOSPC, errno.EDQUOT) or "No space left on device" in str(exc)


def cat_literal(fs: fsspec.AbstractFileSystem, paths: list[str]) -> dict[str, bytes]:
    """The bytes of each of ``paths`` that can be read, by path, every name taken literally.

    fsspec's ``cat`` of a list expands each path as a glob, so a run directory named
    ``runs/r[1]`` read ``runs/r1`` (or nothing, and the read failed). Async stores (s3fs) still
    get one concurrent round of GETs; a path that cannot be read is simply absent."""
    if getattr(fs, "async_impl", False):
        from fsspec.asyn import _run_coros_in_chunks, sync

        async def gather() -> list[object]:
            coros = [fs._cat_file(p) for p in paths]
            return await _run_coros_in_chunks(coros, batch_size=fs.batch_size, nofiles=True, return_exceptions=True)

        got = sync(fs.loop, gather)
        return {p: data for p, data in zip(paths, got, strict=True) if isinstance(data, bytes)}
    out: dict[str, bytes] = {}
    for p in paths:
        try:
            out[p] = fs.cat_file(p)
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError):
            continue
    return out


def rm_literal(fs: fsspec.AbstractFileSystem, path: str) -> None:
    """Remove ``path`` and everything below it, the name taken literally (never as a glob).

    A local store removes it as named already; on other stores a name holding ``*``, ``?`` or
    ``[`` is removed file by file from a listing, since their ``rm`` would expand it as a glob
    (and could delete a sibling run that the pattern matches)."""
    if isinstance(fs, LocalFileSystem) or not any(c in path for c in GLOB_CHARS):
        fs.rm(path, recursive=True)
        return
    if not fs.isdir(path):
        fs.rm_file(path)
        return
    for found in sorted(fs.find(path), reverse=True):
        fs.rm_file(found)
    for folder in sorted(fs.find(path, withdirs=True), key=len, reverse=True):
        if fs.isdir(folder):
            try:
                fs.rmdir(folder)
            except (OSError, NotImplementedError):
                pass


@dataclass(frozen=True)
class RunFS:
    """A filesystem plus a root path inside it (the run directory or a dataset folder)."""

    fs: fsspec.AbstractFileSystem
    root: str

    @classmethod
    def open(cls, url: str) -> RunFS:
        """The run directory at ``url``; :class:`StoreError` names the extra when its backend is missing."""
        try:
            url = literal_url(str(url))
        except UrlRefused as exc:
            raise StoreError(str(exc)) from None
        try:
            fs, root = url_to_fs(url, **STORAGE_OPTIONS.get(url.split("://", 1)[0] if "://" in url else "file", {}))
        except ImportError as exc:
            raise missing_backend(url, exc) from None
        return cls(fs, root.rstrip("/") or "/")

    @property
    def protocol(self) -> str:
        proto = self.fs.protocol
        return proto[0] if isinstance(proto, (tuple, list)) else proto

    @property
    def local(self) -> bool:
        """Whether the run directory is on this machine's filesystem (flock, rename and free space work)."""
        return self.protocol in ("file", "local")

    @property
    def url(self) -> str:
        """The root as a URL that :meth:`open` accepts again."""
        if self.local:
            return self.root
        return f"{self.protocol}://{self.root.lstrip('/')}" if self.protocol != "memory" else f"memory://{self.root}"

    def path(self, *parts: str) -> str:
        return posixpath.join(self.root, *[p.strip("/") for p in parts if p])

    def sub(self, *parts: str) -> RunFS:
        return RunFS(self.fs, self.path(*parts))

    def exists(self, *parts: str) -> bool:
        return self.fs.exists(self.path(*parts))

    def makedirs(self, *parts: str) -> None:
        self.fs.makedirs(self.path(*parts), exist_ok=True)

    def read_bytes(self, *parts: str) -> bytes:
        with self.fs.open(self.path(*parts), "rb") as f:
            return f.read()

    def read_text(self, *parts: str) -> str:
        return self.read_bytes(*parts).decode("utf-8")

    def read_many(self, rels: list[str]) -> dict[str, bytes]:
        """The files among ``rels`` that exist, by relative path. On an object store one
        concurrent round (fsspec's ``cat`` of a list: s3fs sends the GETs together) instead of
        a HEAD and a GET per file one after the other; a missing file is simply absent."""
        if not rels:
            return {}
        full = {self.fs._strip_protocol(self.path(rel)): rel for rel in rels}
        return {full[path]: data for path, data in cat_literal(self.fs, list(full)).items()}

    @property
    def object_store(self) -> bool:
        """True when a single PUT publishes an object whole (S3, GCS, Azure, memory)."""
        return self.protocol in OBJECT_STORES

    def write_bytes_atomic(self, rel: str, data: bytes) -> None:
        """Write ``data`` so that readers see the old file or the new one, never half of one.

        Files: a temporary sibling renamed into place. Object stores: one PUT of the final key.
        """
        if self.object_store:
            self.fs.pipe_file(self.path(rel), data)
            return
        try:
            with self.write_stream_atomic(rel) as f:
                f.write(data)
        except DiskFull as exc:  # the message names what the whole file needed, not what was written
            raise DiskFull(exc.path, len(data), exc.free) from exc.__cause__

    @contextmanager
    def write_stream_atomic(self, rel: str) -> Iterator[BinaryIO]:
        """A binary file to write ``rel`` through, for files too large to hold in memory: readers
        see the old file or the whole new one, as with :meth:`write_bytes_atomic`.

        Files: a temporary sibling, renamed into place when the block ends. Object stores: a
        local temporary file, uploaded to the final key when the block ends (an upload publishes
        whole; a failed block uploads nothing). An error inside the block leaves nothing behind."""
        final = self.path(rel)
        if self.object_store:
            with tempfile.NamedTemporaryFile(prefix=".tmp-upload-") as f:
                yield f  # type: ignore[misc]
                f.flush()
                self.fs.put_file(f.name, final)
            return
        parent = posixpath.dirname(final)
        self.fs.makedirs(parent, exist_ok=True)
        tmp = posixpath.join(parent, f".tmp-{uuid.uuid4().hex}-{posixpath.basename(final)}")
        try:
            with self.fs.open(tmp, "wb") as f:
                yield f
        except BaseException as exc:
            written = self.fs.size(tmp) if self.fs.exists(tmp) else 0
            if self.fs.exists(tmp):
                self.fs.rm(tmp)  # give the space of the partial file back
            if isinstance(exc, OSError) and is_disk_full(exc):
                raise DiskFull(final, written, self._free(parent)) from exc  # needs at least what was written
            raise
        self.fs.mv(tmp, final)

    def _free(self, folder: str) -> int | None:
        """Bytes free on the filesystem of a local folder (None elsewhere)."""
        return free_bytes(folder) if self.local else None

    def write_text_atomic(self, rel: str, text: str) -> None:
        self.write_bytes_atomic(rel, text.encode("utf-8"))

    def listdir(self, *parts: str) -> list[str]:
        """Base names in a folder, sorted; empty when the folder does not exist."""
        p = self.path(*parts)
        if not self.fs.exists(p):
            return []
        names = [posixpath.basename(e.rstrip("/")) for e in self.fs.ls(p, detail=False)]
        return sorted(n for n in names if n)

    def rm(self, *parts: str) -> None:
        p = self.path(*parts)
        if self.fs.exists(p):
            rm_literal(self.fs, p)

    def remove_temporaries(self, *parts: str) -> int:
        """Delete ``.tmp-*`` files a killed writer left below a folder; returns how many."""
        removed = 0
        for path in self.walk_files(*parts):
            if posixpath.basename(path).startswith(".tmp-"):
                self.fs.rm(path)
                removed += 1
        return removed

    def file_sizes(self, *parts: str) -> dict[str, int]:
        """Every file below a folder (path relative to the root -> bytes), from one listing (a
        paginated LIST on an object store); empty when the folder does not exist."""
        p = self.path(*parts)
        if not self.fs.exists(p):
            return {}
        base = self.fs._strip_protocol(self.root).rstrip("/")
        return {
            posixpath.relpath(self.fs._strip_protocol(path), base): int(info["size"])
            for path, info in self.fs.find(p, detail=True).items()
        }

    def walk_files(self, *parts: str) -> Iterator[str]:
        p = self.path(*parts)
        if not self.fs.exists(p):
            return iter(())
        return iter(sorted(self.fs.find(p)))
