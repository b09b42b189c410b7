"""instruct-pix2pix with a tiny random-weight pipeline (locally trained CLIP tokenizer) from a local folder."""

from __future__ import annotations

import numpy as np

from editors.base import EditRequest, EditResult
from editors.instruct_pix2pix import InstructPix2PixEditor, working_size


def test_batches_by_size_and_returns_source_sizes(tiny_pix2pix):
    ed = InstructPix2PixEditor({"model": str(tiny_pix2pix), "steps": 2, "max_side": 64, "batch_size": 2})
    ed.ensure_loaded()
    rng = np.random.default_rng(0)
    shapes = [(75, 100), (75, 100), (90, 60), (75, 100)]
    reqs = [
        EditRequest(str(i), rng.integers(0, 255, (*s, 3), dtype=np.uint8), "make it blue", "t", "attribute", i)
        for i, s in enumerate(shapes)
    ]
    out = ed.edit_batch(reqs)
    for r, res in zip(reqs, out):
        assert isinstance(res, EditResult) and res.image.shape == r.image.shape
        assert res.meta["working_size"] == list(working_size(r.image.shape[1], r.image.shape[0], 64))
    # per-item generators: an item's output does not depend on its batch neighbours
    alone = ed.edit_batch([reqs[3]])[0]
    assert np.abs(alone.image.astype(int) - out[3].image.astype(int)).max() <= 2


def test_runs_through_the_edit_stage(tmp_path, scene_objects, sample_dir, tiny_pix2pix):
    """Rows, QC, stored images and the recorded params of instruct-pix2pix in a real stage run."""
    import json

    from edit_helpers import instruction_row, write_instructions

    from flows.config import config_from_dict
    from storage.fs import RunFS
    from storage.image_store import ImageStore
    from storage.stage_store import read_artifact
    from tasks.engine.base import RunContext
    from tasks.engine.runner import run_stage
    from tasks.stages.edit import EditStage

    objs = scene_objects[:3]
    rows = [
        instruction_row(o, sample_dir, k, f"{k} the {o['name']}")
        for o, k in zip(objs, ["attribute", "remove", "replace"])
    ]
    write_instructions(tmp_path, rows)
    params = {"model": str(tiny_pix2pix), "steps": 2, "max_side": 64, "batch_size": 2}
    cfg = config_from_dict(
        {
            "run": {"seed": 2, "shard_size": 2, "workers": 1},
            "editors": [{"name": "instruct-pix2pix", "params": params}],
        }
    )
    ctx = RunContext(RunFS.open(str(tmp_path)), cfg)
    summary = run_stage(EditStage(), ctx)
    edits = read_artifact(ctx.run, "edit", "edits").to_pylist()
    assert summary.rows_out["edits"] == 3 and summary.rejected == 0
    assert {r["instruction_id"] for r in edits} == {r["id"] for r in rows}
    images = ImageStore(ctx.run)
    for r in edits:
        assert r["editor"] == "instruct-pix2pix" and r["status"] in ("ok", "auto_rejected")
        recorded = json.loads(r["editor_params_json"])
        assert (
            recorded["name"] == "instruct-pix2pix"
            and recorded["params"]["max_side"] == 64
            and recorded["params"]["guidance_scale"] == 7.5
        )
        qc = json.loads(r["qc_json"])
        assert qc["editor_meta"]["working_size"] == list(working_size(r["width"], r["height"], 64))
        edited, original = images.get_array(r["edited_image"]), images.get_array(r["original_image"])
        assert edited.shape == original.shape == (r["height"], r["width"], 3)
        assert not np.array_equal(edited, original)


def test_a_call_over_its_budget_stops_at_the_next_denoising_step(tiny_pix2pix):
    import pytest

    from editors.budget import EditTimeout, set_deadline

    ed = InstructPix2PixEditor({"model": str(tiny_pix2pix), "steps": 4, "max_side": 64, "batch_size": 1})
    req = EditRequest("0", np.zeros((64, 64, 3), np.uint8), "make it blue", "t", "attribute", 0)
    ed.ensure_loaded()
    set_deadline(-1.0)  # the item's budget is already spent when denoising starts
    try:
        with pytest.raises(EditTimeout, match="denoising step 1"):
            ed.edit_batch([req])
    finally:
        set_deadline(None)
