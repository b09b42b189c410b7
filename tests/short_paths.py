"""Temporary folders for servers that open unix sockets (Chromium, PostgreSQL).

A unix socket's path must fit in 108 bytes. Under a long ``TMPDIR`` (a CI workspace, a home
folder with spaces) Chromium aborts with "Socket path too long" and PostgreSQL cannot start, so
these servers get their socket folders under ``/tmp`` whenever ``TMPDIR`` leaves too little room.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

ROOM_FOR_SOCKET_NAMES = (
    60  # bytes a server appends below its folder (e.g. org.chromium.Chromium.XXXXXX/SingletonSocket)
)
SOCKET_PATH_MAX = 107


def socket_safe_tmpdir(prefix: str) -> Path:
    """A new, empty folder whose path leaves room for socket names; the caller removes it."""
    base = tempfile.gettempdir()
    if len(os.fsencode(base)) + len(prefix) + 10 + ROOM_FOR_SOCKET_NAMES > SOCKET_PATH_MAX or " " in base:
        base = "/tmp"
    return Path(tempfile.mkdtemp(prefix=prefix, dir=base))
