"""The instruct stage through the stage runner: all four tasks with the rules backend, rows,
statuses, provenance, dedup rejects, determinism and reruns; bad candidates become rejects."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dummy_server import DummyServer, Reply
from image_bombs import png_header
from mllm_helpers import (
    at_candidate,
    build_config,
    ca_candidate,
    crowded_points,
    dc_candidate,
    re_candidate,
    spread_points,
    write_mine_stage,
)

from storage.fs import RunFS
from storage.parquet_io import ArtifactReader
from tasks.engine.base import RunContext
from tasks.engine.runner import run_stage
from tasks.stages.instruct import InstructStage, plan_shards


def candidates(img: str) -> list[dict]:
    return [
        re_candidate(img),
        ca_candidate(img),
        ca_candidate(img, object_id=5, name="tree", attribute="green"),
        # the same object name twice more: the rules answers repeat values -> dedup has work
        *[ca_candidate(img, object_id=100 + i, name="tree", attribute="green", image_id=f"t{i}") for i in range(6)],
        at_candidate(img, "delete", same=1),
        at_candidate(img, "replace", same=3, image_id="at2"),
        dc_candidate(img, spread_points(20)),
        dc_candidate(img, crowded_points(20), image_id="dc2"),
    ]


def run_instruct(run_dir: Path, rows: list[dict], **cfg: object) -> tuple[list[dict], list[dict], object]:
    run = RunFS.open(str(run_dir))
    write_mine_stage(run, rows)
    ctx = RunContext(run, build_config(run={"shard_size": 4, "workers": 2}, **cfg))
    summary = run_stage(InstructStage(), ctx)
    out = ArtifactReader(run, "instruct/instructions", "instructions").rows()
    rej = ArtifactReader(run, "instruct/rejects", "rejects").rows()
    return out, rej, summary


def test_rules_backend_all_tasks(image_dir: Path, tmp_path: Path) -> None:
    img = str(image_dir / "scene.png")
    cands = candidates(img)
    # an open-set editor in the config: the rules backend uses every CA direction (the limited
    # classical-only case is test_limited_editors_get_only_renderable_edits)
    rows, rejects, summary = run_instruct(tmp_path / "run", cands, editors=[{"name": "instruct-pix2pix"}])
    by_task: dict[str, list[dict]] = {}
    for r in rows:
        by_task.setdefault(r["task"], []).append(r)
    re_row = by_task["relational_erasure"][0]
    assert re_row["status"] == "applicable" and re_row["edit_type"] == "remove"
    assert re_row["target_name"] == "wheel" and re_row["target_box"] == [12.0, 36.0, 6.0, 4.0]
    assert "wheel" in re_row["instruction"] and "skateboard" in re_row["instruction"]
    # CA: two instructions per candidate, two different directions, duplicates dropped as rejects
    ca = by_task["counterfactual_attribute"]
    dups = [r for r in rejects if r["reason"] == "duplicate_counterfactual"]
    assert len(ca) + len(dups) == 2 * 8 and dups, "the repeated tree candidates must produce duplicates"
    kept_tree = [json.loads(r["fields_json"])["new_attribute"] for r in ca if r["target_name"] == "tree"]
    assert len(kept_tree) == len(set(kept_tree))
    for d in dups:
        detail = json.loads(d["payload_json"])
        assert detail["kept_id"] in {r["id"] for r in ca} and detail["how"] == "text"
    for cid in {r["candidate_id"] for r in ca}:
        dirs = [json.loads(r["fields_json"])["direction"] for r in ca if r["candidate_id"] == cid]
        assert len(dirs) == len(set(dirs))
    # AT: the assigned type is honoured unless impossible (delete with one instance -> fallback)
    at = {json.loads(r["candidate_json"])["edit_type"]: r for r in by_task["alteration_tracing"]}
    assert at["delete"]["edit_type"] == "add" and at["replace"]["edit_type"] == "replace"
    fields = json.loads(at["replace"]["fields_json"])
    for key in ("A", "B", "C", "A_prime", "B_prime", "C_prime", "overall_distractors", "c_prime_objects"):
        assert fields[key]
    # DC: the filter keeps the spread-out image and drops the crowded one
    dc = {r["image_id"]: r["status"] for r in by_task["dense_counting"]}
    assert set(dc.values()) == {"applicable", "not_applicable"}
    # provenance on every row
    for r in rows:
        assert (
            r["prompt_name"] and r["prompt_version"] == "1" and r["backend"] == "rules" and r["model_id"] == "rules-v1"
        )
        assert r["raw_response"]
    assert summary.rows_in == len(cands)


def test_deterministic_and_rerun_skips(image_dir: Path, tmp_path: Path) -> None:
    cands = candidates(str(image_dir / "scene.png"))
    run_instruct(tmp_path / "a", cands)
    run_instruct(tmp_path / "b", list(reversed(cands)))
    for name in ("instructions", "rejects"):
        fa = sorted((tmp_path / "a" / "instruct" / name).glob("*.parquet"))
        fb = sorted((tmp_path / "b" / "instruct" / name).glob("*.parquet"))
        assert [p.read_bytes() for p in fa] == [p.read_bytes() for p in fb]
    run = RunFS.open(str(tmp_path / "a"))
    summary = run_stage(InstructStage(), RunContext(run, build_config(run={"shard_size": 4, "workers": 2})))
    assert summary.all_skipped
    manifest = json.loads((tmp_path / "a" / "instruct" / "_manifest.json").read_text())
    assert manifest["extra"]["status_by_task"]["dense_counting"] == {"applicable": 1, "not_applicable": 1}


def test_ca_groups_stay_in_one_shard() -> None:
    rows = [
        {"id": f"{i:02d}", "task": "counterfactual_attribute", "target_name": "tree" if i % 2 else "bench"}
        for i in range(10)
    ]
    rows += [{"id": f"r{i}", "task": "relational_erasure"} for i in range(3)]
    shards = plan_shards(rows, 3)
    for name in ("tree", "bench"):
        holding = [i for i, s in enumerate(shards) if any(r.get("target_name") == name for r in s)]
        assert len(holding) == 1
    assert sum(len(s) for s in shards) == 13


def test_bad_inputs_become_rejects_with_openai_backend(image_dir: Path, tmp_path: Path) -> None:
    """Missing and corrupt images and a malformed context are rejects naming the candidate; the rest goes on."""
    ok = re_candidate(str(image_dir / "scene.png"))
    missing = re_candidate(str(image_dir / "nope.png"), image_id="missing")
    broken = re_candidate(str(image_dir / "broken.png"), image_id="broken")
    bad_ctx = re_candidate(str(image_dir / "scene.png"), image_id="badctx", context_json="{not json")
    (tmp_path / "huge.png").write_bytes(png_header(9000, 6000))  # 54 MP: above the one limit of source images
    huge = re_candidate(str(tmp_path / "huge.png"), image_id="huge")
    answer = "remove: wheel\nkeep: skateboard\ninstruction: Remove the wheel; preserve the skateboard and do not alter the background."
    with DummyServer(lambda body: Reply(answer)) as url:
        rows, rejects, _ = run_instruct(
            tmp_path / "run",
            [ok, missing, broken, bad_ctx, huge],
            mllm={"backend": "openai", "model": "m", "base_url": url, "timeout_s": 5, "max_retries": 0},
        )
    reasons = {r["id"]: r["reason"] for r in rejects}
    assert reasons == {
        missing["id"]: "image_missing",
        broken["id"]: "image_unreadable",
        bad_ctx["id"]: "bad_candidate",
        huge["id"]: "image_too_large",
    }
    assert "50,000,000-pixel limit" in next(r["detail"] for r in rejects if r["id"] == huge["id"])
    assert "nope.png" in next(r["detail"] for r in rejects if r["id"] == missing["id"])
    status = {r["candidate_id"]: r["status"] for r in rows}
    assert status == {
        ok["id"]: "applicable",
        missing["id"]: "failed",
        broken["id"]: "failed",
        bad_ctx["id"]: "failed",
        huge["id"]: "failed",
    }
    assert (tmp_path / "run" / "cache" / "mllm").exists()


def test_unknown_backend_names_the_key() -> None:
    from prompts.clients.factory import make_client
    from prompts.config import MLLMConfig

    with pytest.raises(Exception, match="backend"):
        make_client(MLLMConfig.model_validate({"backend": "nope"}), None)


def test_limited_editors_get_only_renderable_edits(image_dir: Path, tmp_path: Path) -> None:
    """classical alone: CA asks only for named colours far from a colour original; AT moves/adds carry
    a free destination_box named in C, replacements an annotated donor of the named class."""
    from editors.registry import limits_for
    from storage.annotation.colours import NAMED_COLOURS, colours_apart

    assert limits_for(["classical"]).limited and not limits_for(["classical", "qwen-image-edit"]).limited
    img = str(image_dir / "scene.png")
    rows, rejects, _ = run_instruct(tmp_path / "run", candidates(img), editors=[{"name": "classical"}])
    ca = [r for r in rows if r["task"] == "counterfactual_attribute" and r["status"] == "applicable"]
    assert ca
    for r in ca:
        f = json.loads(r["fields_json"])
        assert f["direction"] == "colour" and f["new_attribute"] in NAMED_COLOURS
        assert colours_apart(f["new_attribute"], f["original_attribute"])
    for r in [r for r in rows if r["task"] == "alteration_tracing" and r["status"] == "applicable"]:
        f = json.loads(r["fields_json"])
        if f["edit_type"] in ("move", "add"):
            side = "left" if f["destination_box"][0] < r["target_box"][0] else "right"
            assert side in f["C"] and side in r["instruction"]
        if f["edit_type"] == "replace":
            assert f["replacement"] in f["C"] and f["donor_box"]


def test_llm_answers_outside_the_editors_limits_are_sent_back() -> None:
    """Limited editors: a CA value or an AT edit type they cannot render fails validation, so the
    prompt runner asks the model again with the reason (and finally rejects it as unparseable)."""
    import pytest
    from pydantic import ValidationError

    from tasks.builtin_tasks.counterfactual_attribute.prompts import CAInstructions

    limits = {"limited": True, "attribute_values": {"colour": ["purple", "teal"]}, "kinds": ["attribute", "remove"]}
    ctx = {"attribute": "red", "editor_limits": limits}
    keep = "Preserve the table, and other surrounding objects in the image unchanged; do not alter the background of the image."
    ok = {
        "direction_a": "colour",
        "new_attribute_a": "purple",
        "instruction_a": f"Make it purple. {keep}",
        "direction_b": "colour",
        "new_attribute_b": "teal",
        "instruction_b": f"Make it teal. {keep}",
    }
    assert CAInstructions.model_validate(ok, context=ctx).new_attribute_b == "teal"
    with pytest.raises(ValidationError, match="can render only"):
        CAInstructions.model_validate(dict(ok, direction_b="material", new_attribute_b="clear glass"), context=ctx)
    with pytest.raises(ValidationError, match="different directions"):  # unlimited editors: two directions, as before
        CAInstructions.model_validate(ok, context={"attribute": "red"})
