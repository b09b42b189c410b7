"""What a user's path or URL means, before fsspec reads anything into it.

fsspec gives some spellings meanings a user typing a folder name does not expect:
``file://localhost/abs/path`` is read as the relative path ``localhost/abs/path`` (an export
landed under the current folder), ``dir::file:///x`` chains two filesystems (a folder named
after part of the URL was created before anything failed), and ``[``, ``*``, ``?`` are glob
characters to its multi-file calls (``storage.fs`` reads names literally). This module turns a
user's text into the one path or URL it names, or refuses it in one line, and says whether a
local folder can be written (a published run mounted read-only)."""

from __future__ import annotations

import errno
import os

LOCAL_HOSTS = frozenset({"", "localhost"})


class UrlRefused(ValueError):
    """A path or URL this tool will not guess the meaning of; the message names it and the fix."""


def literal_url(url: str) -> str:
    """``url`` as the one path or URL it names: ``file:///p`` and ``file://localhost/p`` become
    ``/p``; chained fsspec URLs (``a::b``) and ``file://`` URLs naming another host are refused."""
    url = str(url)
    if "::" in url:
        raise UrlRefused(
            f"{url}: a chained fsspec URL (`::`) is not accepted here; give one local path or one URL "
            "(e.g. /abs/path or s3://bucket/folder)"
        )
    if url.lower().startswith("file://"):
        rest = url[len("file://") :]
        host, slash, path = rest.partition("/")
        if host.lower() not in LOCAL_HOSTS:
            raise UrlRefused(
                f"{url}: a file:// URL names the host {host!r}, not this machine; write file:///abs/path, "
                "file://localhost/abs/path or the path itself"
            )
        return slash + path if slash else "/"
    return url


def is_local(url: str) -> bool:
    """Whether ``url`` (after :func:`literal_url`) is a path on this machine."""
    return "://" not in url


def read_only_reason(url: str) -> str | None:
    """Why the existing local folder ``url`` cannot be written (a read-only mount, no write
    permission), or None when it can, does not exist yet, or is not local. ``access(2)`` answers
    EROFS for a read-only filesystem even to root, so a published run mounted read-only is seen."""
    if not is_local(url):
        return None
    path = os.path.abspath(url)
    if not os.path.isdir(path):
        return None
    if os.access(path, os.W_OK):
        return None
    try:
        st = os.statvfs(path)
    except OSError:
        return "not writable"
    return "on a read-only filesystem" if st.f_flag & os.ST_RDONLY else f"not writable ({os.strerror(errno.EACCES)})"
