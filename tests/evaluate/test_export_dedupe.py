"""Issue 30: a release stores each image once, and loads back exactly the rows it always held.

The demo-size build (the bundled sample, ``configs/demo.yaml``: 1,658 questions asking about
~150 images, ~11 questions per image) is exported; the Parquet files must hold at most 1.3x the
distinct images plus the text, where embedding every row's images (the layout before) cost
~15x. ``datasets.load_dataset`` must give the features of :func:`rows.features` and, row by row,
what the straightforward construction gives: each question's release row with its image bytes
read from the run's store for that row alone.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from flows.config import resolve_run_config
from storage.fs import RunFS
from storage.parquet_io import ArtifactReader
from tasks.release.export.export import ExportOptions, export_benchmark
from tasks.release.export.hf import row_groups
from tasks.release.export.rows import features, release_row
from tasks.release.items import edit_annotations


@pytest.fixture(scope="module")
def demo_export(demo_run: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The demo build (rules backend, classical editor: the session's, tests/conftest.py), copied
    (an export records its rejects in the run), exported unverified."""
    root = tmp_path_factory.mktemp("dedupe")
    shutil.copytree(demo_run, root / "run")
    run, out = RunFS.open(str(root / "run")), RunFS.open(str(root / "release"))
    summary = export_benchmark(run, out, resolve_run_config(run_dir=run.url), ExportOptions(unverified=True))
    return {"run": run, "out": out, "root": root, "summary": summary}


def _straightforward_rows(run: RunFS) -> dict[str, dict]:
    """Every question's release row with its images' bytes read for that row, by id."""
    questions = ArtifactReader(run, "qa/questions", "questions").rows()
    edits = {e["id"]: e for e in ArtifactReader(run, "edit/edits", "edits").rows()}
    annotations = edit_annotations(questions, edits)
    out = {}
    for q in questions:
        row = release_row(q, edits.get(q["edit_id"]), False, list(annotations[q["edit_id"]]["prior_terms"]))
        row["images"] = [{"bytes": run.read_bytes(rel), "path": rel.rsplit("/", 1)[-1]} for rel in q["images"]]
        out[q["id"]] = row
    return out


def test_each_image_stored_once(demo_export):
    run, out = demo_export["run"], demo_export["out"]
    rows = _straightforward_rows(run)
    distinct = {im["path"]: len(im["bytes"]) for r in rows.values() for im in r["images"]}
    unique = sum(distinct.values())
    text = sum(
        len(json.dumps({k: v for k, v in r.items() if k != "images"}, ensure_ascii=False).encode())
        for r in rows.values()
    )
    inline = sum(len(im["bytes"]) for r in rows.values() for im in r["images"])
    files = sorted(Path(out.root, "data").glob("*/*.parquet"))
    data = sum(f.stat().st_size for f in files)
    assert len(rows) > 1000 and inline > 5 * unique  # the images are shared: every row's own copy would cost > 5x
    assert data <= 1.3 * (unique + text), (
        f"release data {data / 1e6:.1f} MB for {unique / 1e6:.1f} MB of images and {text / 1e6:.1f} MB of text"
    )
    for f in files:  # why: each image lies in one row group, in its dictionary, not in every row
        meta = pq.ParquetFile(f).metadata
        seen: dict[str, int] = {}
        for g in range(meta.num_row_groups):
            column = (
                pq.ParquetFile(f).read_row_group(g, columns=["images.list.element.path"]).column("images").to_pylist()
            )
            for name in {im["path"] for images in column for im in images}:
                assert seen.setdefault(name, g) == g, (
                    f"{f.parent.name}: image {name} in row groups {seen[name]} and {g}"
                )
            chunk = next(
                meta.row_group(g).column(i)
                for i in range(meta.num_columns)
                if meta.row_group(g).column(i).path_in_schema.endswith(".bytes")
            )
            assert "RLE_DICTIONARY" in chunk.encodings


def test_loads_back_the_rows_and_features_of_before(demo_export, tmp_path, monkeypatch):
    import datasets

    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    run, out, summary = demo_export["run"], demo_export["out"], demo_export["summary"]
    want = _straightforward_rows(run)
    ds = datasets.load_dataset(out.root, split="test", cache_dir=str(tmp_path / "hf"))
    assert ds.features == features() and len(ds) == len(want) == sum(summary.counts.values())
    first = ds[0]["images"][0]
    assert isinstance(first, __import__("PIL.Image", fromlist=["Image"]).Image)
    raw = ds.cast_column("images", datasets.List(datasets.Image(decode=False)))
    got = {r["id"]: r for r in raw}
    assert got.keys() == want.keys()
    for qid, row in want.items():
        assert got[qid] == {k: row[k] for k in got[qid]}, qid
    task = sorted(summary.counts)[0]
    one = datasets.load_dataset(out.root, task, split="test", cache_dir=str(tmp_path / "hf"))
    assert one.features == features() and set(one["task"]) == {task} and len(one) == summary.counts[task]


def test_release_is_byte_identical_for_the_same_inputs(demo_export):
    run, root = demo_export["run"], demo_export["root"]
    again = RunFS.open(str(root / "again"))
    export_benchmark(run, again, resolve_run_config(run_dir=run.url), ExportOptions(unverified=True))
    for f in sorted(Path(demo_export["out"].root).rglob("*")):
        if f.is_file():
            assert (Path(again.root) / f.relative_to(demo_export["out"].root)).read_bytes() == f.read_bytes(), f


def _row(qid: str, *images: str) -> dict:
    return {"id": qid, "images": [{"path": rel.rsplit("/", 1)[-1], "rel": rel} for rel in images]}


def test_row_groups_keep_rows_sharing_an_image_together():
    sizes = {"a": 30, "b": 30, "c": 40, "d": 10, "e": 10}
    rows = [
        _row("q5", "c"),
        _row("q1", "a"),
        _row("q4", "b"),
        _row("q2", "a", "b"),
        _row("q3", "d"),
        _row("q6", "e"),
        _row("q7", "d"),
    ]
    groups = row_groups(rows, sizes, limit=100)
    ids = [[r["id"] for r in g] for g in groups]
    # {q1, q2, q4} share a and b (q2 is a before/after pair): 120 bytes, over the limit on its own,
    # so it is cut (in image order: a, a+b, b); the other sets go in whole, by their smallest id
    assert ids == [["q1", "q2"], ["q4", "q3", "q7", "q5", "q6"]]
    assert row_groups(list(reversed(rows)), sizes, limit=100) == groups  # the inputs' order does not matter
    assert [[r["id"] for r in g] for g in row_groups(rows, sizes, limit=60)] == [
        ["q1"],
        ["q2"],
        ["q4", "q3", "q7"],
        ["q5", "q6"],
    ]
    assert [[r["id"] for r in g] for g in row_groups(rows, sizes)] == [["q1", "q2", "q4", "q3", "q7", "q5", "q6"]]
