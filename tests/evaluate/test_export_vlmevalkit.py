"""VLMEvalKit forms: one TSV per question type, circular MC grouped, each image stored once.

VLMEvalKit itself is not installed here; the checks read the TSVs the way its
``ImageBaseDataset`` does (an ``image`` of at most 64 characters is another row's index; a
JSON list is a multi-image row) and its circular MCQ convention (``g_index = index % 1e6``).
"""

from __future__ import annotations

import base64
import csv
import io
import json
from collections import defaultdict

import pytest

from storage.fs import RunFS
from storage.parquet_io import ArtifactReader
from tasks.export.export import export_benchmark
from tasks.export.vlmevalkit import CIRCULAR_STRIDE
from eval_helpers import write_run

csv.field_size_limit(1 << 30)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    root = tmp_path_factory.mktemp("vlmeval")
    run = write_run(root / "run")
    out = RunFS.open(str(root / "release"))
    export_benchmark(run, out, vlmevalkit=True)
    questions = ArtifactReader(run, "review/verified_questions", "verified_questions").rows()
    return run, out, questions


def _read(out, name):
    rows = list(csv.DictReader(io.StringIO(out.read_text(f"vlmevalkit/{name}")), delimiter="\t"))
    return rows


def _resolve(rows):
    """VLMEvalKit's image resolution: short strings are indices of rows that carry the image."""
    image_map = {r["index"]: r["image"] for r in rows}
    out = {}
    for k, v in image_map.items():
        if len(v) <= 64:
            assert v in image_map and len(image_map[v]) > 64, f"row {k} references {v}, which holds no image"
            v = image_map[v]
        out[k] = json.loads(v) if v.startswith("[") else [v]
    return out


@pytest.mark.parametrize("name,qtype", [("reactbench_MCQ.tsv", "MC"), ("reactbench_Y_N.tsv", "YN"), ("reactbench_VQA.tsv", "SA")])
def test_one_tsv_per_type_with_every_image_resolvable(exported, name, qtype):
    run, out, questions = exported
    rows = _read(out, name)
    mine = {q["id"]: q for q in questions if q["qtype"] == qtype}
    assert {r["id"] for r in rows} == set(mine)
    images = _resolve(rows)
    for r in rows:
        q = mine[r["id"]]
        got = [base64.b64decode(b) for b in images[r["index"]]]
        assert got == [run.read_bytes(p) for p in q["images"]]
        assert r["answer"] == q["gold"]
    if qtype == "YN":
        assert {r["answer"] for r in rows} <= {"Yes", "No"}
    if qtype == "MC":
        assert all(r["answer"] in "ABCDE" and r[r["answer"]] for r in rows)
    # each distinct image (or pair) is carried by exactly one row of the file
    carried = [r["image"] for r in rows if len(r["image"]) > 64]
    assert len(carried) == len(set(carried)) == len({tuple(q["images"]) for q in mine.values()})


def test_circular_mc_is_grouped_by_index(exported):
    _, out, questions = exported
    rows = _read(out, "reactbench_MCQ.tsv")
    groups = defaultdict(list)
    for r in rows:
        groups[int(r["index"]) % CIRCULAR_STRIDE].append(r)
    rotated = [g for g in groups.values() if len(g) > 1]
    assert rotated, "the hand run has a cyclic MC question"
    for g in rotated:
        assert len({r["qid"] for r in g}) == 1
        assert sorted(int(r["rotation"]) for r in g) == list(range(len(g)))
        assert all(int(r["index"]) // CIRCULAR_STRIDE == int(r["rotation"]) for r in g)
        # the same options in every presentation, the gold following the right option
        right = {r[r["answer"]] for r in g}
        assert len(right) == 1
    assert len(groups) == len({(q["edit_id"], q["qid"]) for q in questions if q["qtype"] == "MC"})


def test_tsv_bytes_within_one_and_a_half_times_distinct_images_plus_text(exported):
    _, out, _ = exported
    for name in ("reactbench_MCQ.tsv", "reactbench_Y_N.tsv", "reactbench_VQA.tsv"):
        text = out.read_text(f"vlmevalkit/{name}")
        rows = _read(out, name)
        image_bytes = sum(len(r["image"]) for r in rows if len(r["image"]) > 64)
        inline = sum(len(json.dumps(_resolve(rows)[r["index"]])) for r in rows)  # what inlining every row would cost
        other = len(text.encode()) - sum(len(r["image"]) for r in rows)
        assert len(text.encode()) <= 1.5 * (image_bytes + other), name
        assert len(text.encode()) < other + inline, name
