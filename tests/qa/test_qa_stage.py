"""The ``qa`` stage end to end on a real run directory: edits in, analysis + questions + rejects out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from qa_helpers import make_edit

from flows.config import config_from_dict
from prompts.clients.base import MLLMRequest, MLLMResponse
from storage.fs import RunFS
from storage.parquet_io import ArtifactReader
from storage.stage_store import ShardResult, StageStore
from tasks.engine.base import RunContext
from tasks.engine.runner import run_stage
from tasks.stages.qa import QAStage, qa_edits


def lay_down_edits(root: Path, src_dir: Path) -> list[dict[str, Any]]:
    """A completed ``edit`` stage with real images in the store, one edit per case under test."""
    run = RunFS.open(str(root))
    ctx = RunContext(run, config_from_dict({}))
    rng = np.random.default_rng(0)
    original = ctx.images.put_array(rng.integers(0, 255, (200, 300, 3), dtype=np.uint8))
    edited = ctx.images.put_array(rng.integers(0, 255, (200, 300, 3), dtype=np.uint8))
    imgs = {"original_image": original, "edited_image": edited}
    no_new = json.dumps({"slot": "a", "direction": "colour", "original_attribute": "brown"})
    rows = [
        make_edit("relational_erasure", id="e-re", **imgs),
        make_edit("relational_erasure", id="e-re-bad-qc", status="auto_rejected", **imgs),
        make_edit("counterfactual_attribute", id="e-ca", **imgs),
        make_edit("counterfactual_attribute", id="e-ca-unknown-new", instruction_fields_json=no_new, **imgs),
        make_edit("alteration_tracing", id="e-at", **imgs),
        make_edit("alteration_tracing", id="e-at-no-plan", instruction_fields_json=None, **imgs),
        make_edit("alteration_tracing", id="e-at-delete", edit_type="delete", **imgs),
        make_edit("dense_counting", id="e-dc", editor="none", edit_type="none", **imgs),
    ]
    store = StageStore(run, "edit", {"edits": "edits"})
    store.write_shard(0, "k", ShardResult(outputs={"edits": rows}, rows_in=len(rows)))
    store.write_manifest(
        {"stage": "edit", "status": "complete", "key": "k", "output_fingerprint": store.output_fingerprint()}
    )
    return rows


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root, src = tmp_path_factory.mktemp("qa-run"), tmp_path_factory.mktemp("qa-src")
    lay_down_edits(root, src)
    run = RunFS.open(str(root))
    ctx = RunContext(run, config_from_dict({"run": {"shard_size": 3, "workers": 1}, "qa": {"beaf": True}}))
    summary = run_stage(QAStage(), ctx)
    return {"root": root, "src": src, "run": run, "ctx": ctx, "summary": summary}


def rows(run: RunFS, artifact: str) -> list[dict[str, Any]]:
    return ArtifactReader(run, f"qa/{artifact}", artifact).rows()


def test_analysis_rows_one_per_edit_with_status(built: dict[str, Any]) -> None:
    status = {r["edit_id"]: r["status"] for r in rows(built["run"], "analysis")}
    assert status == {
        "e-re": "ok",
        "e-ca": "ok",
        "e-ca-unknown-new": "discarded",
        "e-at": "ok",
        "e-at-no-plan": "failed",
        "e-at-delete": "ok",
        "e-dc": "ok",
    }  # the auto-rejected RE edit is skipped; DC comes as the edit stage's pass-through row
    by = {r["edit_id"]: r for r in rows(built["run"], "analysis")}
    assert (
        by["e-re"]["prompt_name"] == "re_analysis" and by["e-re"]["backend"] == "rules" and by["e-re"]["raw_response"]
    )
    assert json.loads(by["e-dc"]["fields_json"]) == {"count": 20, "class_name": "cupcake"}
    assert by["e-dc"]["editor"] == "none" and by["e-dc"]["original_image"].startswith("images/")


def test_full_question_sets_and_rejects(built: dict[str, Any]) -> None:
    qs = rows(built["run"], "questions")
    per: dict[tuple[str, str], int] = {}
    for q in qs:
        per[(q["edit_id"], q["question_set"])] = per.get((q["edit_id"], q["question_set"]), 0) + 1
    dc = [q for q in qs if q["task"] == "dense_counting"]
    assert per[("e-re", "main")] == 12 and per[("e-ca", "main")] == 12 and per[("e-dc", "main")] == 8
    assert len(dc) == 8 and {q["editor"] for q in dc} == {"none"}
    assert per[("e-at", "main")] == 12 and per[("e-at", "control")] == 6
    assert per[("e-re", "beaf")] == 2 * 7  # removed + 3 present + 3 absent, each on original and edited
    assert ("e-at", "beaf") not in per and per[("e-at-delete", "beaf")] > 0  # BEAF only for removals
    for q in qs:
        assert q["images"] and all(p.startswith("images/") for p in q["images"])
        if q["qtype"] == "MC":
            assert q["gold"] in "ABCDE" and q["rubric_json"]
    rej = rows(built["run"], "rejects")
    reasons = {(r["id"], r["reason"]) for r in rej}
    assert ("e-ca-unknown-new", "analysis_discarded") in reasons
    assert ("e-at-no-plan", "bad_edit_row") in reasons
    detail = next(r["detail"] for r in rej if r["id"] == "e-ca-unknown-new")
    assert "the original or the new attribute is unknown" in detail  # the model's own reason
    manifest = StageStore(built["run"], "qa", {}).read_manifest()
    assert manifest["status"] == "complete" and manifest["counts"]["questions"] == len(qs)
    assert manifest["extra"]["questions_by_task"]["dense_counting"] == {"main": 8}


def test_beaf_pairs(built: dict[str, Any]) -> None:
    beaf = [q for q in rows(built["run"], "questions") if q["edit_id"] == "e-re" and q["question_set"] == "beaf"]
    pairs: dict[str, dict[str, dict[str, Any]]] = {}
    for q in beaf:
        pairs.setdefault(q["qid"], {})[q["image_role"]] = q
    for qid, pair in pairs.items():
        assert set(pair) == {"original", "edited"} and pair["original"]["text"] == pair["edited"]["text"]
        dim = pair["original"]["dimension"]
        want = {"removed": ("Yes", "No"), "present": ("Yes", "Yes"), "absent": ("No", "No")}[dim]
        assert (pair["original"]["gold"], pair["edited"]["gold"]) == want
    removed = [p for p in pairs.values() if p["original"]["dimension"] == "removed"]
    assert len(removed) == 1 and removed[0]["original"]["text"] == "Is there a wheel in this image?"
    present = {p["original"]["text"] for p in pairs.values() if p["original"]["dimension"] == "present"}
    assert (
        present <= {f"Is there {x} in this image?" for x in ("a skateboard", "a carpet", "a lamp", "a boy")}
        and len(present) == 3
    )
    absent = {p["original"]["text"] for p in pairs.values() if p["original"]["dimension"] == "absent"}
    assert len(absent) == 3 and not absent & present


def test_rerun_is_byte_identical(built: dict[str, Any], tmp_path: Path) -> None:
    lay_down_edits(tmp_path, built["src"])
    run = RunFS.open(str(tmp_path))
    run_stage(QAStage(), RunContext(run, built["ctx"].config))
    for artifact in ("analysis", "questions", "rejects"):
        a = sorted((built["root"] / "qa" / artifact).glob("*.parquet"))
        b = sorted((tmp_path / "qa" / artifact).glob("*.parquet"))
        assert [p.name for p in a] == [p.name for p in b] and a
        assert all(x.read_bytes() == y.read_bytes() for x, y in zip(a, b)), artifact
    again = run_stage(QAStage(), RunContext(run, built["ctx"].config))
    assert again.all_skipped


def test_cyclic_config_emits_rotations(tmp_path: Path) -> None:
    lay_down_edits(tmp_path, tmp_path / "src")
    run = RunFS.open(str(tmp_path))
    run_stage(QAStage(), RunContext(run, config_from_dict({"qa": {"mc_mode": "cyclic", "control_questions": False}})))
    qs = [q for q in rows(run, "questions") if q["edit_id"] == "e-dc" and q["qid"] == "Q7"]
    assert sorted(q["rotation"] for q in qs) == [0, 1, 2, 3, 4]
    assert not [q for q in rows(run, "questions") if q["question_set"] == "control"]


class ScriptedClient:
    """A deterministic stand-in MLLM that answers from a script (the thing under test is the stage)."""

    backend = "scripted"
    model_id = "scripted-1"
    uses_images = True

    def __init__(self, answers: dict[str, str]):
        self.answers = answers
        self.seen: list[MLLMRequest] = []

    def complete(self, requests: list[MLLMRequest]) -> list[MLLMResponse]:
        self.seen.extend(requests)
        return [MLLMResponse(self.answers[r.context["edit_id"]], self.model_id, self.backend) for r in requests]


def test_model_failures_and_discards_become_rejects_with_the_reason(tmp_path: Path) -> None:
    edits = lay_down_edits(tmp_path, tmp_path / "src")
    run = RunFS.open(str(tmp_path))
    ctx = RunContext(run, config_from_dict({}))
    picked = [e for e in edits if e["id"] in ("e-re", "e-ca")]
    client = ScriptedClient(
        {
            "e-re": "I cannot help with that.",
            "e-ca": "verification_status: fail\nverification_issues: rope still brown\ndiscard: yes\ndiscard_reason: the colour change is not visible",
        }
    )
    result = qa_edits(client, picked, ctx)
    assert {r["reason"] for r in result.rejects} == {"llm_unparseable", "analysis_discarded"}
    by = {r["id"]: r for r in result.rejects}
    assert "the colour change is not visible" in by["e-ca"]["detail"]
    assert json.loads(by["e-re"]["payload_json"])["raw"] == "I cannot help with that."
    assert result.outputs["questions"] == []
    # both images went to the model, original first
    parts = client.seen[0].messages[0]["content"]
    assert [p["type"] for p in parts] == ["image", "image", "text"]
    assert parts[0]["data"] == ctx.images.get_bytes(edits[0]["original_image"])
