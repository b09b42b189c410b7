"""The edit stage end to end on sample scenes: ablation rows, auto-QC status, rejects, determinism."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from edit_helpers import instruction_row, write_instructions

from editors.base import EditFailure, Editor, EditRequest, EditResult
from editors.registry import clear_cache, register
from flows.config import config_from_dict
from storage.fs import RunFS
from storage.image_store import ImageStore
from storage.stage_store import StageStore, read_artifact
from tasks.engine.base import RunContext
from tasks.engine.runner import run_stage
from tasks.stages.edit import EditStage, item_seed


def _rows(scene_objects: list[dict[str, Any]], sample_dir: Path) -> list[dict[str, Any]]:
    objs = scene_objects[:4]
    rows = [
        instruction_row(objs[0], sample_dir, "remove", f"remove the {objs[0]['name']}", task="relational_erasure"),
        instruction_row(
            objs[1],
            sample_dir,
            "attribute",
            f"make the {objs[1]['name']} blue",
            task="counterfactual_attribute",
            new_attribute="blue",
        ),
        instruction_row(objs[2], sample_dir, "move", f"move the {objs[2]['name']}"),
        instruction_row(objs[3], sample_dir, "delete", f"delete the {objs[3]['name']}"),
    ]
    missing = dict(
        rows[0], id="missing-image", image_path=str(sample_dir / "visual_genome/VG_100K/does-not-exist.jpg")
    )
    skipped = dict(rows[1], id="not-applicable", status="not_applicable")
    wrong_size = dict(rows[2], id="wrong-size", width=rows[2]["width"] + 7)
    return rows + [missing, skipped, wrong_size]


def _ctx(root: Path, editors: list[dict[str, Any]], **edit: Any) -> RunContext:
    cfg = config_from_dict({"run": {"seed": 3, "shard_size": 3, "workers": 2}, "editors": editors, "edit": edit})
    return RunContext(RunFS.open(str(root)), cfg)


ABLATION = [
    {"name": "classical"},
    {"name": "classical", "label": "classical-ns", "params": {"inpaint_method": "ns", "dilation_px": 9}},
]


@pytest.fixture(scope="module")
def ablation_run(tmp_path_factory, scene_objects, sample_dir) -> tuple[RunContext, Any]:
    root = tmp_path_factory.mktemp("edit-run")
    corrupt = root / "corrupt.jpg"
    corrupt.write_bytes(b"\xff\xd8\xff\xe0 not really a jpeg")
    rows = _rows(scene_objects, sample_dir)
    write_instructions(root, rows + [dict(rows[0], id="corrupt-image", image_path=str(corrupt))])
    ctx = _ctx(root, ABLATION)
    return ctx, run_stage(EditStage(), ctx)


def test_ablation_writes_one_row_per_instruction_and_editor(ablation_run):
    ctx, summary = ablation_run
    edits = read_artifact(ctx.run, "edit", "edits").to_pylist()
    keys = {(r["instruction_id"], r["editor"]) for r in edits}
    assert len(keys) == len(edits) == 8  # 4 good instructions x 2 editors
    assert {e for _, e in keys} == {"classical", "classical-ns"}
    for r in edits:
        assert r["status"] in ("ok", "auto_rejected")
        params = json.loads(r["editor_params_json"])
        assert params["name"] == "classical" and "inpaint_method" in params["params"]
        assert r["seed"] == item_seed(3, r["instruction_id"])  # same seed for both editors
        images = ImageStore(ctx.run)
        assert images.exists(r["original_image"]) and images.exists(r["edited_image"])
        assert r["edited_image"].endswith(".png") and r["original_image"].endswith(".jpg")
        qc = json.loads(r["qc_json"])
        assert set(qc["metrics"]) >= {"change_inside", "psnr_outside", "ssim_outside"}
        assert r["edit_seconds"] is None  # timings off by default: artifacts stay byte-identical
        edited = images.get_array(r["edited_image"])
        assert edited.shape == (r["height"], r["width"], 3)
    ns = [r for r in edits if r["editor"] == "classical-ns"]
    assert all(json.loads(r["editor_params_json"])["params"]["dilation_px"] == 9 for r in ns)
    assert summary.extra["per_editor"]["classical"]["ok"] >= 3


def test_bad_items_become_rejects_and_the_rest_goes_on(ablation_run):
    ctx, summary = ablation_run
    rejects = read_artifact(ctx.run, "edit", "rejects").to_pylist()
    reasons = sorted(r["reason"] for r in rejects)
    assert reasons == [
        "image_missing",
        "image_missing",
        "image_size_mismatch",
        "image_size_mismatch",
        "image_unreadable",
        "image_unreadable",
    ]
    assert all("instruction " in r["detail"] for r in rejects)
    assert any("does-not-exist.jpg" in r["detail"] for r in rejects)
    assert summary.rows_in == 14  # 7 applicable x 2 editors; the not_applicable row is not edit work


def test_rerun_is_byte_identical_with_or_without_overlap_and_skips_finished_shards(
    ablation_run, tmp_path, scene_objects, sample_dir
):
    ctx, _ = ablation_run
    again = run_stage(EditStage(), ctx)
    assert again.all_skipped
    other = tmp_path / "other"
    rows = _rows(scene_objects, sample_dir)
    write_instructions(other, rows + [dict(rows[0], id="corrupt-image", image_path=str(ctx.run.path("corrupt.jpg")))])
    ctx2 = _ctx(other, ABLATION, overlap_io=False)  # serial I/O: the same bytes
    run_stage(EditStage(), ctx2)
    a, b = StageStore(ctx.run, "edit", EditStage.outputs), StageStore(ctx2.run, "edit", EditStage.outputs)
    assert a.output_fingerprint() == b.output_fingerprint()


def test_qc_failures_are_kept_as_auto_rejected_with_metrics(tmp_path, scene_objects, sample_dir):
    root = tmp_path / "strict"
    write_instructions(root, _rows(scene_objects, sample_dir)[:2])
    ctx = _ctx(root, [{"name": "classical"}], qc={"min_change_inside": 250.0})
    run_stage(EditStage(), ctx)
    edits = read_artifact(ctx.run, "edit", "edits").to_pylist()
    assert len(edits) == 2 and all(r["status"] == "auto_rejected" for r in edits)
    for r in edits:
        qc = json.loads(r["qc_json"])
        assert qc["passed"] is False and "no_change_inside" in qc["failures"] and qc["metrics"]["change_inside"] > 0


class HungryEditor(Editor):
    """Runs out of memory on batches larger than ``limit`` and on one poisoned instruction."""

    name = "test-hungry"
    uses_model = True
    calls: list[int] = []

    def load(self) -> None:  # a model editor with nothing to load; torch is imported for inference_mode
        import torch  # noqa: F401

    def edit_batch(self, requests: list[EditRequest]) -> list[EditResult | EditFailure]:
        import torch

        HungryEditor.calls.append(len(requests))
        if len(requests) > 1 or "poison" in requests[0].instruction:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB")
        return [EditResult(np.ascontiguousarray(255 - r.image)) for r in requests]


def test_out_of_memory_halves_the_batch_then_rejects_the_item(tmp_path, scene_objects, sample_dir):
    register(HungryEditor)
    clear_cache()
    rows = _rows(scene_objects, sample_dir)[:4]
    rows[2] = dict(rows[2], instruction="poison pill")
    root = tmp_path / "oom"
    write_instructions(root, rows)
    HungryEditor.calls.clear()
    ctx = _ctx(root, [{"name": "test-hungry"}], batch_size=4)
    ctx = RunContext(
        ctx.run, ctx.config.model_copy(update={"run": ctx.config.run.model_copy(update={"shard_size": 10})})
    )
    run_stage(EditStage(), ctx)
    assert HungryEditor.calls[0] == 4 and 2 in HungryEditor.calls and 1 in HungryEditor.calls
    edits = read_artifact(ctx.run, "edit", "edits").to_pylist()
    rejects = read_artifact(ctx.run, "edit", "rejects").to_pylist()
    assert len(edits) == 3
    assert [r["reason"] for r in rejects] == ["out_of_memory"]
    assert json.loads(rejects[0]["payload_json"])["instruction_id"] == rows[2]["id"]


def test_duplicate_editor_keys_are_refused_when_the_config_loads():
    from flows.config import ConfigError, config_from_dict

    with pytest.raises(ConfigError, match=r"editors: .*editors\[0\] and editors\[1\] .*distinct `label`"):
        config_from_dict(
            {"editors": [{"name": "classical"}, {"name": "classical", "params": {"inpaint_method": "ns"}}]}
        )
    with pytest.raises(ConfigError, match="reserved"):
        config_from_dict({"editors": [{"name": "classical", "label": "none"}]})
    assert (
        len(config_from_dict({"editors": [{"name": "classical"}, {"name": "classical", "label": "ns"}]}).editors) == 2
    )


def test_model_editors_in_one_ablation_build(tmp_path, scene_objects, sample_dir, tiny_qwen_edit, tiny_sam, tiny_lama):
    root = tmp_path / "models"
    write_instructions(root, _rows(scene_objects, sample_dir)[:4])
    editors = [
        {"name": "classical"},
        {
            "name": "qwen-image-edit",
            "params": {"model": str(tiny_qwen_edit), "steps": 2, "process_area": 64 * 64, "batch_size": 2},
        },
        {
            "name": "sam-lama",
            "params": {
                "sam_checkpoint": str(tiny_sam[0]),
                "sam_model_type": tiny_sam[1],
                "lama_model": str(tiny_lama),
            },
        },
    ]
    ctx = _ctx(root, editors, batch_size=2, keep_loaded=1)
    summary = run_stage(EditStage(), ctx)
    edits = read_artifact(ctx.run, "edit", "edits").to_pylist()
    by_editor: dict[str, int] = {}
    for r in edits:
        by_editor[r["editor"]] = by_editor.get(r["editor"], 0) + 1
    assert by_editor == {"classical": 4, "qwen-image-edit": 4, "sam-lama": 2}  # sam-lama only removes
    rejects = read_artifact(ctx.run, "edit", "rejects").to_pylist()
    assert sorted(r["reason"] for r in rejects) == ["unsupported_edit_type", "unsupported_edit_type"]
    qwen = [r for r in edits if r["editor"] == "qwen-image-edit"]
    for r in qwen:
        qc = json.loads(r["qc_json"])
        assert qc["metrics"]["raw_size"] != [r["width"], r["height"]]  # ran at the working size, came back
        assert json.loads(r["editor_params_json"])["params"]["process_area"] == 64 * 64
    assert summary.rows_out["edits"] == 10


def test_a_placed_device_reaches_the_editor_but_not_the_rows(tmp_path, scene_objects, sample_dir, tiny_qwen_edit):
    from dataclasses import replace

    from editors.registry import _CACHE

    rows = _rows(scene_objects, sample_dir)[:1]
    params = {"model": str(tiny_qwen_edit), "steps": 1, "process_area": 64 * 64}
    outs = []
    for name, options in (("plain", {}), ("placed", {"device": "cpu"})):
        root = tmp_path / name
        write_instructions(root, rows)
        ctx = replace(_ctx(root, [{"name": "qwen-image-edit", "params": params}]), options=options)
        run_stage(EditStage(), ctx)
        outs.append(read_artifact(ctx.run, "edit", "edits").to_pylist()[0])
    assert any(json.loads(k)[1].get("device") == "cpu" for k in _CACHE)  # the placed instance
    assert outs[0]["id"] == outs[1]["id"] and outs[0]["editor_params_json"] == outs[1]["editor_params_json"]
    assert json.loads(outs[0]["editor_params_json"])["params"]["device"] == "auto"
