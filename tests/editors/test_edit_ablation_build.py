"""An ablation build on the sample: two editors on the same instructions, through every stage."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import yaml

from flows.config import CONFIG_DIR, config_from_dict
from flows.runtime import run_pipeline
from storage.fs import RunFS
from storage.stage_store import read_artifact


def test_two_editors_yield_edits_qa_and_queue_rows_for_both(sample_dir: Path, tmp_path: Path):
    data = yaml.safe_load((CONFIG_DIR / "demo.yaml").read_text())
    data["sources"] = {"visual_genome": str(sample_dir / "visual_genome"), "fsc147": str(sample_dir / "fsc147")}
    data["editors"] = [{"name": "classical"}, {"name": "classical", "label": "classical-ns", "params": {"inpaint_method": "ns"}}]
    run_pipeline(config_from_dict(data), str(tmp_path / "run"), orchestrator="local")
    run = RunFS.open(str(tmp_path / "run"))
    instructions = [r for r in read_artifact(run, "instruct", "instructions").to_pylist() if r["status"] == "applicable"]
    edits = read_artifact(run, "edit", "edits").to_pylist()
    assert instructions
    per_editor = Counter(r["editor"] for r in edits)
    assert per_editor == {"classical": len(instructions), "classical-ns": len(instructions)}
    assert {(r["instruction_id"], r["editor"]) for r in edits} == {
        (i["id"], e) for i in instructions for e in ("classical", "classical-ns")
    }
    questions = read_artifact(run, "qa", "questions").to_pylist()
    assert set(Counter(q["editor"] for q in questions)) == {"classical", "classical-ns"}
    queue = read_artifact(run, "review", "queue", "review_queue").to_pylist()
    assert {q["editor"] for q in queue if q["stage"] == "edit"} == {"classical", "classical-ns"}
    # both editors' edits of one instruction share the original image and the seed
    by_inst: dict[str, list[dict]] = {}
    for r in edits:
        by_inst.setdefault(r["instruction_id"], []).append(r)
    pair = next(iter(by_inst.values()))
    assert pair[0]["original_image"] == pair[1]["original_image"] and pair[0]["seed"] == pair[1]["seed"]
    assert pair[0]["edited_image"] != pair[1]["edited_image"]
