"""Time budgets: one pathological item becomes an ``editor_timeout`` reject, the batch goes on,
and the classical mask step bounds its own cost (flat regions, large images)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
from edit_helpers import instruction_row, write_instructions

from editors.base import EditFailure, Editor, EditRequest, EditResult
from editors.budget import EditTimeout, check_deadline, with_budget
from editors.masks import grabcut_mask, object_mask
from editors.registry import clear_cache, create_editor, register
from editors.runtime import run_batch
from flows.config import config_from_dict
from storage.fs import RunFS
from storage.stage_store import read_artifact
from tasks.engine.base import RunContext
from tasks.engine.runner import run_stage
from tasks.stages.edit import EditStage


def _req(
    i: int, text: str, image: np.ndarray | None = None, box=(1, 1, 4, 4), edit_type: str = "remove"
) -> EditRequest:
    img = image if image is not None else np.full((8, 8, 3), 40 + i, np.uint8)
    return EditRequest(str(i), img, text, "t", edit_type, i, box)


@register
class Sluggish(Editor):
    """Sleeps on items whose instruction says "slow"; "stuck" loops until its deadline stops it."""

    name = "test-sluggish"
    stopped: list[str] = []

    def edit_batch(self, requests):
        out = []
        for r in requests:
            if r.instruction == "slow":
                time.sleep(3.0)
            if r.instruction == "stuck":
                try:
                    while True:
                        check_deadline("stuck loop")
                        time.sleep(0.01)
                except EditTimeout:
                    Sluggish.stopped.append(r.id)
                    raise
            out.append(EditResult(255 - r.image))
        return out


def test_uniform_800x600_image_with_300x200_box_needs_no_grabcut():
    """GrabCut took 78 s on exactly this input; a flat box has nothing it could separate."""
    image = np.full((600, 800, 3), 128, np.uint8)
    started = time.perf_counter()
    mask, how = object_mask(image, (250, 200, 300, 200), seed=0)
    assert time.perf_counter() - started < 2.0
    assert how == "ellipse" and mask[300, 400] and not mask[0, 0]


def test_classical_editor_on_a_uniform_image_finishes_within_its_budget():
    image = np.full((600, 800, 3), 128, np.uint8)
    editor = with_budget(create_editor("classical"), 20.0)
    requests = [_req(i, "make it blue", image, (250, 200, 300, 200), "attribute") for i in range(2)]
    for r in requests:
        r.fields["new_attribute"] = "blue"
    started = time.perf_counter()
    out = run_batch(editor, requests)
    assert time.perf_counter() - started < 10.0
    assert len(out) == 2 and not any(isinstance(o, EditFailure) and o.reason == "editor_timeout" for o in out), out


def test_grabcut_on_a_large_image_works_on_a_downscaled_crop():
    rng = np.random.default_rng(0)
    image = rng.integers(0, 256, (2400, 3200, 3), dtype=np.uint8)
    image[800:1600, 1000:2200] = (200, 30, 30)  # the object: a red block on noise
    started = time.perf_counter()
    fg = grabcut_mask(image, (900, 700, 1400, 1000), seed=1)
    assert time.perf_counter() - started < 10.0
    assert fg is not None and fg.shape == image.shape[:2]
    inside = fg[800:1600, 1000:2200].mean()
    outside_box = fg.copy()
    outside_box[700:1700, 900:2300] = False
    assert inside > 0.9 and not outside_box.any()  # the mask stays inside the box and finds the block


def test_an_item_over_its_budget_is_an_editor_timeout_and_the_batch_goes_on():
    editor = with_budget(Sluggish(), 0.5)
    started = time.perf_counter()
    out = run_batch(editor, [_req(0, "fast"), _req(1, "slow"), _req(2, "fast")])
    elapsed = time.perf_counter() - started
    assert isinstance(out[0], EditResult) and isinstance(out[2], EditResult)
    assert isinstance(out[1], EditFailure) and out[1].reason == "editor_timeout" and "0.5" in out[1].detail
    assert elapsed < 2.9  # nobody waited for the 3 s item


def test_the_deadline_stops_an_abandoned_call_that_checks_it():
    Sluggish.stopped.clear()
    out = run_batch(with_budget(Sluggish(), 0.3), [_req(7, "stuck")])
    assert isinstance(out[0], EditFailure) and out[0].reason == "editor_timeout"
    for _ in range(100):
        if Sluggish.stopped:
            break
        time.sleep(0.02)
    assert Sluggish.stopped == ["7"]


def test_without_a_budget_the_call_is_not_bounded():
    out = run_batch(Sluggish(), [_req(0, "fast")])
    assert isinstance(out[0], EditResult)
    assert not hasattr(Sluggish(), "time_budget_s")


def test_edit_stage_records_editor_timeout_rejects(
    tmp_path: Path, scene_objects: list[dict[str, Any]], sample_dir: Path
):
    objs = scene_objects[:3]
    rows = [
        instruction_row(o, sample_dir, "remove", "slow" if i == 1 else "fast", task="relational_erasure")
        for i, o in enumerate(objs)
    ]
    write_instructions(tmp_path, rows)
    cfg = config_from_dict(
        {
            "run": {"seed": 0, "shard_size": 8, "workers": 1},
            "editors": [{"name": "test-sluggish", "time_budget_s": 0.5}],
        }
    )
    clear_cache()
    summary = run_stage(EditStage(), RunContext(RunFS.open(str(tmp_path)), cfg))
    assert summary.reject_reasons == {"editor_timeout": 1}
    rejects = read_artifact(RunFS.open(str(tmp_path)), "edit", "rejects").to_pylist()
    timeouts = [r for r in rejects if r["reason"] == "editor_timeout"]
    assert (
        len(timeouts) == 1
        and "time_budget_s" in timeouts[0]["detail"]
        and rows[1]["id"] in timeouts[0]["payload_json"]
    )
    assert summary.rows_out["edits"] == 2


def test_a_rerun_with_a_raised_budget_computes_only_the_items_that_ran_out(
    tmp_path: Path, scene_objects: list[dict[str, Any]], sample_dir: Path
):
    """editor_timeout is a transient reject (orchestration.rerun_reject_reasons): the budget is
    not part of the stage key, so raising it keeps the finished edits and reruns the timed-out one."""
    rows = [
        instruction_row(o, sample_dir, "remove", "slow" if i == 1 else "fast", task="relational_erasure")
        for i, o in enumerate(scene_objects[:3])
    ]
    write_instructions(tmp_path, rows)
    run = RunFS.open(str(tmp_path))

    def build(budget: float):
        cfg = config_from_dict(
            {
                "run": {"seed": 0, "shard_size": 8, "workers": 1},
                "editors": [{"name": "test-sluggish", "time_budget_s": budget}],
            }
        )
        assert "editor_timeout" in cfg.orchestration.rerun_reject_reasons
        clear_cache()
        return run_stage(EditStage(), RunContext(run, cfg), requeue_reasons=cfg.orchestration.rerun_reject_reasons)

    first = build(0.5)
    assert first.reject_reasons == {"editor_timeout": 1} and first.items_computed == 3
    second = build(10.0)
    assert second.shards_run == 1 and second.reject_reasons == {}
    assert (second.items_reused, second.items_computed) == (2, 1), "only the item that ran out of time is edited again"
    assert sorted(r["instruction_id"] for r in read_artifact(run, "edit", "edits").to_pylist()) == sorted(
        r["id"] for r in rows
    )
