"""fsspec access for run directories: one place that knows how to join, list and write atomically.

Every artifact path goes through here so that a run directory on ``s3://`` or ``memory://``
behaves like a local folder.
"""

from __future__ import annotations

import errno
import os
import posixpath
import uuid
from dataclasses import dataclass
from typing import Iterator

import fsspec
from fsspec.core import url_to_fs


class DiskFull(OSError):
    """A write ran out of space (ENOSPC): one line naming the file, its size and the space free.

    Still an ``OSError`` with ``errno.ENOSPC``, so retry policies treat it as before."""

    def __init__(self, path: str, needed: int, free: int | None):
        self.path, self.needed, self.free = path, needed, free
        have = f", {_mb(free)} free there" if free is not None else ""
        super().__init__(errno.ENOSPC, f"no space left on device writing {path}: it needs {_mb(needed)}{have}")
        self.filename = path

    def __str__(self) -> str:
        return self.strerror or ""

    def __reduce__(self):  # pickles across processes (Ray) with its fields
        return (type(self), (self.path, self.needed, self.free))


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 100_000 else f"{n} bytes"


def is_disk_full(exc: BaseException) -> bool:
    """ENOSPC (or EDQUOT, a full quota), whatever wrapped it (pyarrow sets no errno)."""
    return getattr(exc, "errno", None) in (errno.ENOSPC, errno.EDQUOT) or "No space left on device" in str(exc)


@dataclass(frozen=True)
class RunFS:
    """A filesystem plus a root path inside it (the run directory or a dataset folder)."""

    fs: fsspec.AbstractFileSystem
    root: str

    @classmethod
    def open(cls, url: str) -> "RunFS":
        fs, root = url_to_fs(str(url))
        return cls(fs, root.rstrip("/") or "/")

    @property
    def protocol(self) -> str:
        proto = self.fs.protocol
        return proto[0] if isinstance(proto, (tuple, list)) else proto

    @property
    def url(self) -> str:
        """The root as a URL that :meth:`open` accepts again."""
        if self.protocol in ("file", "local"):
            return self.root
        return f"{self.protocol}://{self.root.lstrip('/')}" if self.protocol != "memory" else f"memory://{self.root}"

    def path(self, *parts: str) -> str:
        return posixpath.join(self.root, *[p.strip("/") for p in parts if p])

    def sub(self, *parts: str) -> "RunFS":
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

    def write_bytes_atomic(self, rel: str, data: bytes) -> None:
        """Write to a temporary sibling then rename, so readers never see half a file."""
        final = self.path(rel)
        parent = posixpath.dirname(final)
        self.fs.makedirs(parent, exist_ok=True)
        tmp = posixpath.join(parent, f".tmp-{uuid.uuid4().hex}-{posixpath.basename(final)}")
        try:
            with self.fs.open(tmp, "wb") as f:
                f.write(data)
        except OSError as exc:
            if not is_disk_full(exc):
                raise
            if self.fs.exists(tmp):
                self.fs.rm(tmp)  # give the space of the partial file back
            raise DiskFull(final, len(data), self._free(parent)) from exc
        self.fs.mv(tmp, final)

    def _free(self, folder: str) -> int | None:
        """Bytes free on the filesystem of a local folder (None elsewhere)."""
        if self.protocol not in ("file", "local"):
            return None
        try:
            st = os.statvfs(folder)
        except OSError:
            return None
        return st.f_bavail * st.f_frsize

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
            self.fs.rm(p, recursive=True)

    def remove_temporaries(self, *parts: str) -> int:
        """Delete ``.tmp-*`` files a killed writer left below a folder; returns how many."""
        removed = 0
        for path in self.walk_files(*parts):
            if posixpath.basename(path).startswith(".tmp-"):
                self.fs.rm(path)
                removed += 1
        return removed

    def walk_files(self, *parts: str) -> Iterator[str]:
        p = self.path(*parts)
        if not self.fs.exists(p):
            return iter(())
        return iter(sorted(self.fs.find(p)))
