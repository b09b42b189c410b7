"""An ablation build on the sample: two editors on the same instructions, through every stage."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import yaml

from flows.config import CONFIG_DIR, config_from_dict
from flows.runtime import run_pipeline
from storage.fs import RunFS
from storage.stage_store import read_artifact
from tasks.stages.edit import needs_edit, passes_through


def test_two_editors_yield_edits_qa_and_queue_rows_for_both(sample_dir: Path, tmp_path: Path):
    data = yaml.safe_load((CONFIG_DIR / "demo.yaml").read_text())
    data["sources"] = {"visual_genome": str(sample_dir / "visual_genome"), "fsc147": str(sample_dir / "fsc147")}
    data["editors"] = [
        {"name": "classical"},
        {"name": "classical", "label": "classical-ns", "params": {"inpaint_method": "ns"}},
    ]
    run_pipeline(config_from_dict(data), str(tmp_path / "run"), orchestrator="local")
    run = RunFS.open(str(tmp_path / "run"))
    instructions = [r for r in read_artifact(run, "instruct", "instructions").to_pylist() if needs_edit(r)]
    all_edits = read_artifact(run, "edit", "edits").to_pylist()
    edits = [r for r in all_edits if r["editor"] != "none"]
    unedited = [r for r in all_edits if r["editor"] == "none"]
    # dense counting edits nothing: one pass-through row per instruction, not one per editor
    counting = [r for r in read_artifact(run, "instruct", "instructions").to_pylist() if passes_through(r)]
    assert counting and sorted(r["instruction_id"] for r in unedited) == sorted(r["id"] for r in counting)
    assert all(r["edited_image"] == r["original_image"] and r["status"] == "ok" for r in unedited)
    rejects = read_artifact(run, "edit", "rejects").to_pylist()
    assert instructions and len(edits) > len(rejects)
    # every (instruction, editor) pair is an edit row or a reject, never both, never missing
    done = Counter((r["instruction_id"], r["editor"]) for r in edits)
    done.update(
        (json.loads(r["payload_json"])["instruction_id"], json.loads(r["payload_json"])["editor"]) for r in rejects
    )
    assert done == Counter({(i["id"], e): 1 for i in instructions for e in ("classical", "classical-ns")})
    assert set(Counter(r["editor"] for r in edits)) == {"classical", "classical-ns"}
    questions = read_artifact(run, "qa", "questions").to_pylist()
    assert {"classical", "classical-ns"} <= set(Counter(q["editor"] for q in questions))  # (+ "none": dense counting)
    queue = read_artifact(run, "review", "queue", "review_queue").to_pylist()
    assert {"classical", "classical-ns"} <= {q["editor"] for q in queue if q["stage"] == "edit"}
    # both editors' edits of one instruction share the original image and the seed
    by_inst: dict[str, list[dict]] = {}
    for r in edits:
        by_inst.setdefault(r["instruction_id"], []).append(r)
    pair = next(v for v in by_inst.values() if v[0]["edit_type"] == "remove" and len(v) == 2)  # inpainting differs
    assert pair[0]["original_image"] == pair[1]["original_image"] and pair[0]["seed"] == pair[1]["seed"]
    assert pair[0]["edited_image"] != pair[1]["edited_image"]


def test_ablation_report_counts_unsupported_verified_and_failed_per_editor(
    tmp_path, scene_objects, sample_dir, tiny_sam, tiny_lama
):
    """classical + sam-lama (tiny random models): sam-lama refuses everything but removals, classical
    refuses a material it cannot draw; every performed edit carries a verdict, counted in the report."""
    from edit_helpers import instruction_row, write_instructions

    from flows.config import config_from_dict
    from tasks.engine.base import RunContext
    from tasks.engine.runner import run_stage
    from tasks.release.report.ablation import editor_rows, render_ablation_report
    from tasks.release.report.ablation_figures import edit_rejects_per_editor, seconds_per_editor
    from tasks.stages.edit import EditStage

    objs = scene_objects[:4]
    rows = [
        instruction_row(objs[0], sample_dir, "remove", f"remove the {objs[0]['name']}", task="relational_erasure"),
        instruction_row(
            objs[1],
            sample_dir,
            "attribute",
            f"make the {objs[1]['name']} purple",
            task="counterfactual_attribute",
            new_attribute="purple",
        ),
        instruction_row(
            objs[2],
            sample_dir,
            "attribute",
            f"make the {objs[2]['name']} out of clear glass",
            task="counterfactual_attribute",
            new_attribute="clear glass",
        ),
        instruction_row(objs[3], sample_dir, "delete", f"delete the {objs[3]['name']}"),
    ]
    write_instructions(tmp_path, rows)
    editors = [
        {"name": "classical"},
        {
            "name": "sam-lama",
            "params": {
                "sam_checkpoint": str(tiny_sam[0]),
                "sam_model_type": tiny_sam[1],
                "lama_model": str(tiny_lama),
            },
        },
    ]
    ctx = RunContext(
        RunFS.open(str(tmp_path)),
        config_from_dict({"run": {"seed": 2, "shard_size": 4, "workers": 1}, "editors": editors}),
    )
    run_stage(EditStage(), ctx)
    edits = read_artifact(ctx.run, "edit", "edits").to_pylist()
    unsupported, other = edit_rejects_per_editor(ctx.run)
    assert unsupported == {"classical": 1, "sam-lama": 2}
    per = {r["editor"]: r for r in editor_rows(edits, None, unsupported, other)}
    assert per["classical"]["edits"] == 3 and per["sam-lama"]["edits"] == 2
    for ed, r in per.items():
        assert r["verified"] + r["failed_verification"] == r["edits"]
        assert r["supported"] == r["edits"] + sum(other.get(ed, {}).values())
    verdicts = [json.loads(e["qc_json"])["verification"] for e in edits]
    assert all("passed" in v and "checks" in v for v in verdicts)
    seconds = seconds_per_editor(ctx.run)  # record_timings is off: the manifest's timing record fills "s / image"
    assert set(seconds) == {"classical", "sam-lama"} and all(v > 0 for v in seconds.values())
    assert all(e["edit_seconds"] is None for e in edits)
    assert editor_rows(edits, None, unsupported, other, seconds)[0]["seconds_per_image"] == seconds["classical"]
    html = render_ablation_report(ctx.run)
    assert "failed verification" in html and "Verification gallery" in html and "unsupported" in html
