"""Stable ids and fingerprints: content-derived, so reruns are idempotent and rows join across stages."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem


def canonical_json(value: object) -> str:
    """JSON with sorted keys and no whitespace: the one serialisation that ids and hashes use."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def sha256_hex(data: bytes | str) -> str:
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def sha256_file(
    fs: AbstractFileSystem, path: str, advance: Callable[[int], None] | None = None, chunk: int = 8 * 1024 * 1024
) -> tuple[str, int]:
    """sha256 (hex) and size of a file on an fsspec filesystem, read ``chunk`` bytes at a time,
    so a file of any size is hashed in bounded memory; ``advance`` is told each chunk's length."""
    digest, size = hashlib.sha256(), 0
    with fs.open(path, "rb") as f:
        while block := f.read(chunk):
            digest.update(block)
            size += len(block)
            if advance is not None:
                advance(len(block))
    return digest.hexdigest(), size


def stable_id(*parts: object, length: int = 16) -> str:
    """A short id derived from the given parts (source ids, task, parameters)."""
    return sha256_hex(canonical_json(list(parts)))[:length]


def config_hash(section: object) -> str:
    return sha256_hex(canonical_json(section))[:16]
