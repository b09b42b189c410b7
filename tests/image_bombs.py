"""Image files made to be refused: a PNG whose header claims a huge size (a decompression bomb's
first bytes), without the memory a real one would take."""

from __future__ import annotations

import struct
import zlib


def png_header(width: int, height: int) -> bytes:
    """A PNG whose header claims ``width`` x ``height`` (8-bit grey) and whose data is a stub."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(b"\0" * 64))
    )
