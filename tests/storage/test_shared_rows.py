"""``ArtifactReader.iter_shared_rows``: the rows ``rows()`` gives, one shard at a time, with each
repeated string one object, for callers that keep every row (eval metrics, the eval plan, reports)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from storage.fs import RunFS
from storage.parquet_io import ArtifactReader, table_from_rows, write_table
from storage.schemas import ArtifactSchema

TOY = ArtifactSchema(
    "shared_toy",
    1,
    pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("kind", pa.string()),
            pa.field("n", pa.int64()),
            pa.field("tags", pa.list_(pa.string())),
        ]
    ),
)


def _run(tmp_path: Path) -> ArtifactReader:
    run = RunFS.open(str(tmp_path / "run"))
    for shard in range(3):
        rows = [
            {
                "id": f"s{shard}-{i}",
                "kind": "".join(["edi", "ted" if i % 2 else "tor"]),
                "n": i,
                "tags": ["".join(["a", "b"]), f"t{i % 2}"],
            }
            for i in range(6)
        ]
        rows.append({"id": f"s{shard}-x", "kind": None, "n": None, "tags": None})
        write_table(run, f"st/toy/part-{shard:05d}.parquet", table_from_rows(TOY, rows))
    return ArtifactReader(run, "st/toy", TOY)


def test_same_rows_as_read_with_repeated_strings_shared(tmp_path: Path) -> None:
    reader = _run(tmp_path)
    pool: dict = {}
    rows = list(reader.iter_shared_rows(pool=pool))
    assert rows == reader.rows() and len(rows) == 21
    edited = [r["kind"] for r in rows if r["kind"] == "edited"]
    assert len(edited) == 9 and all(k is edited[0] for k in edited)  # one object across the three shards
    ab = [r["tags"][0] for r in rows if r["tags"]]
    assert all(t is ab[0] for t in ab)
    assert all(r["id"] not in pool for r in rows)  # a column of distinct values is left as read
    rows[0]["tags"].append("mine")
    assert rows[1]["tags"] == ["ab", "t1"]  # each row keeps its own list


def test_columns_are_projected(tmp_path: Path) -> None:
    reader = _run(tmp_path)
    assert list(reader.iter_shared_rows(["kind", "n"]))[:2] == [{"kind": "editor", "n": 0}, {"kind": "edited", "n": 1}]
    assert list(ArtifactReader(reader.run, "st/none", TOY).iter_shared_rows()) == []


def test_progress_counts_the_shards_read(tmp_path: Path) -> None:
    seen: list[tuple[int, int]] = []
    rows = ArtifactReader(_run(tmp_path).run, "st/toy", TOY).iter_shared_rows(
        ["n"], progress=lambda done, total: seen.append((done, total))
    )
    assert next(rows) == {"n": 0} and seen == []  # told after a shard is read through
    assert len(list(rows)) == 20 and seen == [(1, 3), (2, 3), (3, 3)]
