"""`reactbench build` on configs/coco-sample.yaml, as a user runs it: RE / AT / DC mined from the
sample's COCO 2017-format file go through instruct, edit, qa and review to queued items."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import yaml

from miners.sample_data import COCO_ANNOTATIONS, COCO_DIR
from storage.fs import RunFS
from storage.parquet_io import ArtifactReader

ROOT = Path(__file__).resolve().parents[2]
CLI = str(Path(sys.executable).with_name("reactbench"))


def test_coco_sample_builds_to_queued_items_of_each_task(sample_dir: Path, tmp_path: Path) -> None:
    data = yaml.safe_load((ROOT / "configs" / "coco-sample.yaml").read_text())
    data["sources"] = {"coco": str(sample_dir / COCO_DIR / COCO_ANNOTATIONS)}
    config = tmp_path / "coco.yaml"
    config.write_text(yaml.safe_dump(data))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    proc = subprocess.run(
        [CLI, "build", "--config", str(config), "--run-dir", str(tmp_path / "run")],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        cwd=ROOT,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run = RunFS.open(str(tmp_path / "run"))
    tasks = {"relational_erasure", "alteration_tracing", "dense_counting"}
    candidates = ArtifactReader(run, "mine/candidates", "candidates").rows()
    assert {c["task"] for c in candidates} == tasks and {c["source"] for c in candidates} == {"coco"}
    edits = ArtifactReader(run, "edit/edits", "edits").rows()
    assert {"relational_erasure", "alteration_tracing"} <= {e["task"] for e in edits if e["status"] == "ok"}
    questions = Counter(q["task"] for q in ArtifactReader(run, "qa/questions", "questions").rows())
    assert set(questions) == tasks
    from tasks.review.queue import count_queue_items

    assert count_queue_items(str(tmp_path / "run")) > 0
