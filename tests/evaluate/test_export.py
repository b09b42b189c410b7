"""The exported folder loads with ``datasets.load_dataset`` offline and every row has its images."""

from __future__ import annotations

import csv
import io
import json

import pytest
from eval_helpers import write_run

from flows.config import resolve_run_config
from storage.fs import RunFS
from storage.parquet_io import ArtifactReader
from tasks.release.export.export import ExportOptions, export_benchmark


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    root = tmp_path_factory.mktemp("export")
    run = write_run(root / "run")
    out = RunFS.open(str(root / "release"))
    summary = export_benchmark(
        run, out, resolve_run_config(run_dir=run.url), ExportOptions(vlmevalkit=True, lmms_eval=True)
    )
    return run, out, summary


def test_load_dataset_offline_with_images(exported, monkeypatch, tmp_path):
    import datasets
    from PIL import Image

    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    run, out, summary = exported
    questions = ArtifactReader(run, "review/verified_questions", "verified_questions").rows()
    ds = datasets.load_dataset(out.root, split="test", cache_dir=str(tmp_path / "hf-cache"))  # nothing under ~
    assert len(ds) == len(questions) == sum(summary.counts.values())
    want = {q["id"]: len(q["images"]) for q in questions}
    for row in ds:
        assert len(row["images"]) == want[row["id"]] >= 1
        assert all(isinstance(im, Image.Image) and im.size == (32, 24) for im in row["images"])
        assert row["verified"] is True
    dc = datasets.load_dataset(out.root, "dense_counting", split="test", cache_dir=str(tmp_path / "hf-cache"))
    assert set(dc["task"]) == {"dense_counting"} and len(dc) == summary.counts["dense_counting"]
    mc = next(r for r in ds if r["qtype"] == "MC" and r["task"] == "counterfactual_attribute")
    assert mc["answer"] == "A" and mc["answer_text"] == "blue"


def test_card_and_extras(exported):
    import yaml

    run, out, summary = exported
    card = out.read_text("README.md")
    header = yaml.safe_load(card.split("---")[1])
    names = [c["config_name"] for c in header["configs"]]
    assert names[0] == "all" and set(names[1:]) == set(summary.counts)
    assert "UNVERIFIED" not in card and "CC BY 4.0" in card and "| classical |" in card
    # one TSV per question type (issue 13): together they hold every row once
    tsvs = {
        q: list(csv.reader(io.StringIO(out.read_text(f"vlmevalkit/reactbench_{q}.tsv")), delimiter="\t"))
        for q in ("MCQ_circular", "Y_N", "VQA")
    }
    assert all(rows[0][:2] == ["index", "image"] and "question" in rows[0] for rows in tsvs.values())
    assert sum(len(rows) - 1 for rows in tsvs.values()) == sum(summary.counts.values())
    rows = tsvs["Y_N"]
    pair = next(r for r in rows[1:] if r[rows[0].index("category")] == "alteration_tracing")
    assert len(json.loads(pair[1])) == 2
    y = out.read_text("lmms_eval/reactbench_dense_counting.yaml")
    assert "dataset_name: dense_counting" in y and "!function utils.doc_to_visual" in y
    compile(out.read_text("lmms_eval/utils.py"), "utils.py", "exec")


def test_unverified_export_is_labelled_and_deterministic(tmp_path):
    run = write_run(tmp_path / "run", verified=False)
    a = export_benchmark(
        run, RunFS.open(str(tmp_path / "a")), resolve_run_config(run_dir=run.url), ExportOptions(unverified=True)
    )
    export_benchmark(
        run, RunFS.open(str(tmp_path / "b")), resolve_run_config(run_dir=run.url), ExportOptions(unverified=True)
    )
    card = (tmp_path / "a" / "README.md").read_text()
    assert "UNVERIFIED BUILD" in card and "not reviewed" in card
    for f in a.files:
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes(), f


def test_missing_image_becomes_reject(tmp_path):
    run = write_run(tmp_path / "run", verified=False)
    q = ArtifactReader(run, "qa/questions", "questions").rows()
    dc_img = next(x for x in q if x["task"] == "dense_counting")["images"][0]
    run.rm(dc_img)
    s = export_benchmark(
        run, RunFS.open(str(tmp_path / "out")), resolve_run_config(run_dir=run.url), ExportOptions(unverified=True)
    )
    rej = ArtifactReader(run, "export/rejects", "rejects").rows()
    assert s.rejected == len(rej) > 0 and {r["reason"] for r in rej} == {"image_missing"}
    assert "dense_counting" not in s.counts or s.counts["dense_counting"] < sum(
        1 for x in q if x["task"] == "dense_counting"
    )
