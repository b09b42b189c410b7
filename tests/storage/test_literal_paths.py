"""Names taken literally on every store (issue 42.6) and the URL spellings of issue 42.4.

The CLI cases are in tests/faults/test_fault_literal_paths.py; here the object-store side, where
fsspec's ``cat`` of a list and ``rm`` expand ``[``, ``*`` and ``?`` too: a run named ``r[1]``
must neither read nor delete its sibling ``r1``, which the glob ``r[1]`` matches.
"""

from __future__ import annotations

import pytest

from storage.fs import RunFS, StoreError
from storage.literal_paths import UrlRefused, literal_url


@pytest.mark.parametrize("name", ["r[1]", "r*", "r?"])
def test_an_object_store_run_named_like_a_glob_reads_and_removes_only_itself(name: str) -> None:
    root = f"memory://literal-{abs(hash(name))}"
    run, sibling = RunFS.open(f"{root}/{name}"), RunFS.open(f"{root}/r1")
    sibling.write_bytes_atomic("mine/_shards/00000.json", b"sibling")
    run.write_bytes_atomic("mine/_shards/00000.json", b"own")
    run.write_bytes_atomic("mine/_shards/deep/00001.json", b"own too")
    got = run.read_many(["mine/_shards/00000.json", "mine/_shards/deep/00001.json", "mine/_shards/absent.json"])
    assert got == {"mine/_shards/00000.json": b"own", "mine/_shards/deep/00001.json": b"own too"}
    run.rm("mine")
    assert not run.exists("mine/_shards/00000.json") and not run.exists("mine/_shards/deep/00001.json")
    assert sibling.read_bytes("mine/_shards/00000.json") == b"sibling"


@pytest.mark.parametrize(
    "url, means",
    [
        ("file:///abs/run", "/abs/run"),
        ("file://localhost/abs/run", "/abs/run"),
        ("FILE://LOCALHOST/abs/run", "/abs/run"),
        ("runs/r[1]", "runs/r[1]"),
        ("s3://bucket/run", "s3://bucket/run"),
    ],
)
def test_urls_mean_one_path(url: str, means: str) -> None:
    assert literal_url(url) == means


@pytest.mark.parametrize("url", ["file://otherhost/abs/run", "dir::file:///abs/run", "simplecache::s3://b/run"])
def test_foreign_hosts_and_chained_urls_are_refused_before_fsspec_sees_them(url: str) -> None:
    with pytest.raises(UrlRefused, match="/abs/path"):  # the fix names a path that works
        literal_url(url)
    with pytest.raises(StoreError):
        RunFS.open(url)
