"""Files checked against the sha256 their writer recorded: streamed, and once per file per process.

Every command that reads a finished stage's part files (``status``, ``export``, ``eval``,
``audit``, ``report``, a stage run alone, a build's next stage) compares each file's sha256 with
the one its shard marker recorded, so a file changed by a single byte that still loads (a flipped
bit in an id) is refused instead of being read as an output. A file is hashed in bounded memory
(``sha256_file``, 8 MB at a time), so a check costs one read of the stage's files and no more
memory for a large one.

Sums are kept for the life of the process, keyed by what the local filesystem says of the file
(path, size, modification and change times, inode), so a command that checks a stage twice, or
reads what it wrote itself, reads each file once; a file written since (its change time moves on
every write and cannot be set back) is hashed again. On an object store there is no such stamp:
each check reads the files again, in concurrent rounds of at most ``BATCH_BYTES``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from storage.fs import RunFS
from storage.hashing import sha256_file, sha256_hex

BATCH_BYTES = 64 * 1024 * 1024  # an object store's files are fetched together up to this much at a time

_SUMS: dict[tuple[object, ...], str] = {}  # stamp of a local file -> its sha256, for this process


def _stamp(run: RunFS, rel: str) -> tuple[object, ...] | None:
    """What identifies the current content of a local file without reading it; None elsewhere."""
    if not run.local:
        return None
    try:
        st = os.stat(run.path(rel))
    except OSError:
        return None
    return (run.path(rel), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)


def remember(run: RunFS, rel: str, sha256: str) -> None:
    """Record the sha256 of a file this process has just written (no later check reads it again)."""
    stamp = _stamp(run, rel)
    if stamp is not None:
        _SUMS[stamp] = sha256


def file_sha256(run: RunFS, rel: str) -> str:
    """The sha256 of ``rel`` under the run, streamed; read at most once per process while the file
    stays as it is (local files)."""
    stamp = _stamp(run, rel)
    if stamp is not None and stamp in _SUMS:
        return _SUMS[stamp]
    digest, _ = sha256_file(run.fs, run.path(rel))
    if stamp is not None:
        _SUMS[stamp] = digest
    return digest


def changed_files(run: RunFS, expected: Mapping[str, str], sizes: Mapping[str, int] | None = None) -> list[str]:
    """The files among ``expected`` (run-relative path -> recorded sha256) whose content hashes to
    another sum, sorted. Every file must exist (the caller has compared the listing first);
    ``sizes`` (that listing) groups an object store's reads into rounds of ``BATCH_BYTES``."""
    if run.local or not expected:
        return sorted(rel for rel, want in expected.items() if file_sha256(run, rel) != want)
    bad: list[str] = []
    batch: list[str] = []
    held = 0
    for rel in sorted(expected):
        batch.append(rel)
        held += (sizes or {}).get(rel, 0)
        if held >= BATCH_BYTES:
            bad += _changed_round(run, batch, expected)
            batch, held = [], 0
    return sorted(bad + _changed_round(run, batch, expected))


def _changed_round(run: RunFS, rels: list[str], expected: Mapping[str, str]) -> list[str]:
    """One concurrent read of ``rels`` (an object store), compared with ``expected``."""
    got = run.read_many(rels)
    return [rel for rel in rels if rel not in got or sha256_hex(got[rel]) != expected[rel]]
