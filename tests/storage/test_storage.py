"""Storage layer: atomic sharded Parquet, schema checks, manifests/markers, image store; local, memory:// and s3:// (moto)."""

from __future__ import annotations

import io
import uuid

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from storage.fs import RunFS
from storage.hashing import stable_id
from storage.image_store import ImageStore
from storage.parquet_io import ArtifactError, ArtifactReader, read_table, table_from_rows, write_table
from storage.rejects import reject
from storage.schemas import REJECTS, ArtifactSchema
from storage.stage_store import ShardResult, StageStore

TOY = ArtifactSchema(
    "toy",
    2,
    pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("value", pa.int64()),
            pa.field("tags", pa.list_(pa.string())),
        ]
    ),
)


@pytest.fixture(params=["local", "memory", "s3"])
def run(request, tmp_path) -> RunFS:
    """The same storage code on a local folder, fsspec's memory store and a real S3 API (moto)."""
    if request.param == "local":
        return RunFS.open(str(tmp_path / "run"))
    if request.param == "s3":
        return RunFS.open(request.getfixturevalue("s3_run_url"))
    return RunFS.open(f"memory://test-{uuid.uuid4().hex}")


def test_atomic_write_leaves_no_temporary_files(run: RunFS) -> None:
    run.write_text_atomic("a/b.txt", "hello")
    run.write_text_atomic("a/b.txt", "world")
    assert run.read_text("a/b.txt") == "world"
    assert run.listdir("a") == ["b.txt"]


def test_rows_round_trip_through_a_shard(run: RunFS) -> None:
    rows = [{"id": "x", "value": 1, "tags": ["a"]}, {"id": "y", "value": None, "tags": []}]
    write_table(run, "s/toy/part-00000.parquet", table_from_rows(TOY, rows))
    assert read_table(run, "s/toy/part-00000.parquet", TOY).to_pylist() == rows


def test_missing_required_field_names_row_and_field() -> None:
    with pytest.raises(ArtifactError, match=r"row 1 .*'id'"):
        table_from_rows(TOY, [{"id": "a"}, {"value": 3}])


def test_unknown_field_is_refused() -> None:
    with pytest.raises(ArtifactError, match="not in schema"):
        table_from_rows(TOY, [{"id": "a", "colour": "red"}])


def _raw_parquet(run: RunFS, rel: str, table: pa.Table) -> None:
    buf = io.BytesIO()
    pq.write_table(table, buf)
    run.write_bytes_atomic(rel, buf.getvalue())


def test_incompatible_type_names_file_and_field(run: RunFS) -> None:
    bad = pa.table({"id": ["a"], "value": [["not", "an", "int"]], "tags": [["t"]]})
    _raw_parquet(run, "s/toy/part-00000.parquet", bad)
    with pytest.raises(ArtifactError, match=r"part-00000\.parquet.*'value'"):
        read_table(run, "s/toy/part-00000.parquet", TOY)


def test_newer_schema_version_is_refused(run: RunFS) -> None:
    table = pa.table({"id": ["a"]}).replace_schema_metadata(
        {b"reactbench.artifact": b"toy", b"reactbench.version": b"9"}
    )
    _raw_parquet(run, "s/toy/part-00000.parquet", table)
    with pytest.raises(ArtifactError, match="v9"):
        read_table(run, "s/toy/part-00000.parquet", TOY)


def test_missing_nullable_field_reads_as_null(run: RunFS) -> None:
    _raw_parquet(run, "s/toy/part-00000.parquet", pa.table({"id": ["a"]}))
    assert read_table(run, "s/toy/part-00000.parquet", TOY).to_pylist() == [{"id": "a", "value": None, "tags": None}]


def test_stage_store_markers_summary_and_fingerprint(run: RunFS) -> None:
    store = StageStore(run, "toystage", {"toy": TOY})
    for i in range(3):
        res = ShardResult(outputs={"toy": [{"id": f"r{i}", "value": i, "tags": []}]}, rows_in=2)
        res.rejects.append(reject(f"bad{i}", "toystage", "malformed_entry", "field x"))
        store.write_shard(i, "key1", res)
    assert store.marker(1)["key"] == "key1"
    summary = store.summarize("key1")
    assert summary["completed_shards"] == [0, 1, 2]
    assert summary["rows_out"] == {"toy": 3} and summary["rejected"] == 3 and summary["rows_in"] == 6
    assert summary["reject_reasons"] == {"malformed_entry": 3}
    assert [r["id"] for r in store.reader("toy").iter_rows()] == ["r0", "r1", "r2"]
    assert store.reader("rejects").count() == 3
    fp = store.output_fingerprint()
    assert fp == store.output_fingerprint()
    store.prune_shards(2)
    assert store.reader("toy").count() == 2 and store.marker(2) is None
    assert store.output_fingerprint() != fp
    store.reset()
    assert not store.reader("toy").exists()


def test_markers_name_their_files_and_one_listing_finds_what_changed(run: RunFS) -> None:
    """Each marker records its files' sizes and sha256; ``damage`` compares them with one listing
    of the stage (missing, other size, a stray shard file) and, when asked, with the contents."""
    store = StageStore(run, "toystage", {"toy": TOY})
    for i in range(2):
        store.write_shard(
            i, "k", ShardResult(outputs={"toy": [{"id": f"r{i}", "value": i, "tags": ["a"] * (i + 1)}]}, rows_in=1)
        )
    files = {rel: rec for m in store.markers() for rel, rec in store.marker_files(m).items()}
    assert sorted(files) == [f"toystage/{a}/part-0000{i}.parquet" for a in ("rejects", "toy") for i in range(2)]
    sizes = run.file_sizes("toystage")
    assert all(sizes[rel] == rec["bytes"] == len(run.read_bytes(rel)) for rel, rec in files.items())
    assert store.damage(files, sizes, checksums=True, whole=True) == []
    data = bytearray(run.read_bytes("toystage/toy/part-00000.parquet"))
    data[len(data) // 2] ^= 0x01
    run.fs.pipe_file(run.path("toystage/toy/part-00000.parquet"), bytes(data))  # same name, same size
    assert store.damage(files, run.file_sizes("toystage"), whole=True) == []  # a listing cannot see it...
    assert store.damage(files, run.file_sizes("toystage"), checksums=True) == [
        "toystage/toy/part-00000.parquet was changed (its sha256 is not the one written)"
    ]
    run.fs.pipe_file(
        run.path("toystage/toy/part-00001.parquet"), run.read_bytes("toystage/toy/part-00001.parquet")[:-10]
    )  # cut short
    run.fs.pipe_file(run.path("toystage/toy/part-00002.parquet"), b"a stray")
    run.rm("toystage/rejects/part-00001.parquet")
    assert store.damage(files, run.file_sizes("toystage"), whole=True) == [
        "toystage/rejects/part-00001.parquet is missing",
        f"toystage/toy/part-00001.parquet has {files['toystage/toy/part-00001.parquet']['bytes'] - 10:,} bytes where {files['toystage/toy/part-00001.parquet']['bytes']:,} were written",
        "toystage/toy/part-00002.parquet is a shard file that no marker names",
    ]
    store.prune_shards(2)
    assert not run.exists("toystage/toy/part-00002.parquet")


def test_reader_of_missing_artifact_is_empty_with_schema(run: RunFS) -> None:
    table = ArtifactReader(run, "nothing/toy", TOY).read()
    assert table.num_rows == 0 and table.schema.names == ["id", "value", "tags"]


def test_image_store_is_content_addressed(run: RunFS) -> None:
    store = ImageStore(run)
    img = np.zeros((8, 10, 3), np.uint8)
    img[2:4, 3:5] = 200
    a, b = store.put_array(img), store.put_array(img.copy())
    assert a == b and a.startswith("images/") and a.endswith(".png")
    assert np.array_equal(store.get_array(a), img)
    other = store.put_array(255 - img)
    assert other != a
    for bad in ["../etc/passwd", "images/../../x.png", "images/zz/zz.png", "/etc/passwd", "images/ab/cd.png"]:
        assert not store.exists(bad)
        with pytest.raises(ValueError):
            store.get_bytes(bad)


def test_reject_reason_must_be_a_code() -> None:
    row = reject("x", "mine", "box_outside_image", "box [1,2,3,4] leaves 10x10", {"box": [1, 2, 3, 4]})
    assert row["reason"] == "box_outside_image" and '"box"' in row["payload_json"]
    assert REJECTS.schema.names == list(row)
    with pytest.raises(ValueError):
        reject("x", "mine", "Not A Code")


def test_stable_id_is_order_and_type_sensitive() -> None:
    assert stable_id("a", 1) == stable_id("a", 1)
    assert stable_id("a", 1) != stable_id(1, "a") != stable_id("a", "1")


def test_remove_temporaries_cleans_what_a_killed_writer_left(run: RunFS) -> None:
    run.write_text_atomic("stage/a/part-00000.parquet", "x")
    with run.fs.open(run.path("stage/a/.tmp-dead-part-00001.parquet"), "wb") as f:
        f.write(b"half")
    assert run.remove_temporaries("stage") == 1
    assert run.listdir("stage/a") == ["part-00000.parquet"]
