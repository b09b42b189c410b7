"""Streamed writes and hashes (issue 30): a release file is written and hashed a chunk at a time,
appearing whole or not at all, locally and on an object store."""

from __future__ import annotations

import hashlib

import pytest

from storage.fs import RunFS
from storage.hashing import sha256_file


@pytest.mark.parametrize("url", ["local", "memory://stream-write"])
def test_write_stream_atomic_publishes_whole_or_nothing(url, tmp_path):
    run = RunFS.open(str(tmp_path / "out") if url == "local" else url)
    with run.write_stream_atomic("data/a.bin") as f:
        for i in range(5):
            f.write(bytes([i]) * 1000)
        assert not run.exists("data/a.bin")  # nothing at the final name before the block ends
    assert run.read_bytes("data/a.bin") == b"".join(bytes([i]) * 1000 for i in range(5))
    with pytest.raises(RuntimeError, match="stop"):
        with run.write_stream_atomic("data/a.bin") as f:
            f.write(b"half a new file")
            raise RuntimeError("stop")
    assert run.read_bytes("data/a.bin")[:1000] == b"\0" * 1000  # the old file, untouched
    assert [p for p in run.walk_files() if ".tmp-" in p] == []  # no temporary left behind
    if url != "local":
        run.rm()


def test_sha256_file_reads_in_chunks(tmp_path):
    data = bytes(range(256)) * 1000
    (tmp_path / "f").write_bytes(data)
    run = RunFS.open(str(tmp_path))
    seen: list[int] = []
    digest, size = sha256_file(run.fs, run.path("f"), seen.append, chunk=4096)
    assert (digest, size) == (hashlib.sha256(data).hexdigest(), len(data))
    assert seen == [4096] * (len(data) // 4096) + [len(data) % 4096] and sum(seen) == len(data)
