"""The rules backend over the bundled sample data: every task's analysis and full question sets.

Mining and instructions run for real on the generated sample; the edit stage is stood in for
by edit rows whose "edited" image is the source image (the rules backend reads annotations,
not pixels), which keeps this test fast. The qa stage itself runs unchanged.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

import pytest

from flows.config import config_from_dict
from storage import schemas
from storage.fs import RunFS
from storage.hashing import stable_id
from storage.parquet_io import ArtifactReader
from storage.stage_store import ShardResult, StageStore
from tasks.engine.base import RunContext
from tasks.engine.runner import run_stage
from tasks.stages.instruct import InstructStage
from tasks.stages.mine import MineStage
from tasks.stages.qa import QAStage

TASKS = ["relational_erasure", "counterfactual_attribute", "alteration_tracing", "dense_counting"]
SET_SIZE = {"relational_erasure": 12, "counterfactual_attribute": 12, "alteration_tracing": 18, "dense_counting": 8}


def stand_in_edits(ctx: RunContext) -> None:
    """One ``ok`` edit row per applicable instruction (the source image on both sides); dense
    counting rows are shaped as the edit stage passes them through (editor and edit type ``none``)."""
    rows = []
    for r in ArtifactReader(ctx.run, "instruct/instructions", schemas.INSTRUCTIONS).rows():
        if r["status"] != "applicable":
            continue
        dc = r["task"] == "dense_counting"
        image = ctx.images.put_bytes(
            Path(r["image_path"]).read_bytes(), Path(r["image_path"]).suffix.lstrip(".") or "jpg"
        )
        rows.append(
            {
                "id": stable_id(r["id"], "stand-in"),
                "instruction_id": r["id"],
                **{f.name: r[f.name] for f in schemas.ITEM_FIELDS},
                "instruction": r["instruction"],
                "edit_type": "none" if dc else r["edit_type"],
                "target_name": r["target_name"],
                "target_box": r["target_box"],
                "instruction_fields_json": r["fields_json"],
                "editor": "none" if dc else "stand-in",
                "editor_params_json": "{}",
                "seed": 0,
                "status": "ok",
                "original_image": image,
                "edited_image": image,
            }
        )
    store = StageStore(ctx.run, "edit", {"edits": "edits"})
    store.write_shard(0, "k", ShardResult(outputs={"edits": rows}, rows_in=len(rows)))
    store.write_manifest(
        {"stage": "edit", "status": "complete", "key": "k", "output_fingerprint": store.output_fingerprint()}
    )


@pytest.fixture(scope="module")
def sample_run(sample_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> RunContext:
    cfg = config_from_dict(
        {
            "run": {"shard_size": 32, "workers": 2},
            "sources": {"visual_genome": str(sample_dir / "visual_genome"), "fsc147": str(sample_dir / "fsc147")},
            "mine": {"tasks": TASKS, "relational_erasure": {"n_min": 10, "theta": 0.2, "images_per_pair": 12}},
            "qa": {"beaf": True},
        }
    )
    ctx = RunContext(RunFS.open(str(tmp_path_factory.mktemp("qa-sample"))), cfg)
    run_stage(MineStage(), ctx)
    run_stage(InstructStage(), ctx)
    stand_in_edits(ctx)
    run_stage(QAStage(), ctx)
    return ctx


def test_rules_backend_yields_full_sets_for_every_task(sample_run: RunContext) -> None:
    analysis = ArtifactReader(sample_run.run, "qa/analysis", schemas.ANALYSIS).rows()
    questions = ArtifactReader(sample_run.run, "qa/questions", schemas.QUESTIONS).rows()
    rejects = ArtifactReader(sample_run.run, "qa/rejects", schemas.REJECTS).rows()
    ok = {a["edit_id"]: a["task"] for a in analysis if a["status"] == "ok"}
    assert set(Counter(ok.values())) == set(TASKS), Counter(a["task"] for a in analysis)
    assert not [a for a in analysis if a["status"] == "failed"]
    per_edit: dict[str, int] = defaultdict(int)
    for q in questions:
        if q["question_set"] != "beaf":
            per_edit[q["edit_id"]] += 1
    for edit_id, task in ok.items():
        assert per_edit[edit_id] == SET_SIZE[task], (task, edit_id)
    # the only refusals: discards with the rules backend's reason, and BEAF probes that would be wrong
    assert {r["reason"] for r in rejects} <= {"analysis_discarded", "beaf_removed_object_still_present"}
    assert all(r["detail"] for r in rejects)
    assert any(q["question_set"] == "beaf" for q in questions)
