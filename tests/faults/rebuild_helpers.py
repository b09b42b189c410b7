"""Builds of the demo config on the sample, and everything a build leaves, for the tests that
change a run (settings, tampered stores, bad images) and compare it with a fresh build."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import yaml

from flows.config import BuildConfig, config_from_dict
from flows.runtime import run_pipeline

ROOT = Path(__file__).resolve().parents[2]
STAGES = ["mine", "instruct", "edit", "qa", "review"]


def demo_config(sample_dir: Path, sections: dict[str, dict[str, Any]] | None = None, **run: Any) -> BuildConfig:
    """``configs/demo.yaml`` on the session's sample, with ``run`` settings (and other sections' keys) changed."""
    data = yaml.safe_load((ROOT / "configs" / "demo.yaml").read_text())
    data["sources"] = {"visual_genome": str(sample_dir / "visual_genome"), "fsc147": str(sample_dir / "fsc147")}
    data["run"].update(run)
    for name, values in (sections or {}).items():
        data.setdefault(name, {}).update(values)
    return config_from_dict(data)


def build(cfg: BuildConfig, run_dir: Path) -> dict[str, Any]:
    """Every stage, in this process (local orchestration); the stage summaries by name."""
    return {s.stage: s for s in run_pipeline(cfg, str(run_dir), STAGES, orchestrator="local").summaries}


def copy_run(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest)
    return dest


def artifacts(run_dir: Path, stages: list[str] = STAGES) -> dict[str, bytes]:
    """Every Parquet file the stages wrote (outputs and rejects), by run-relative path."""
    return {
        str(p.relative_to(run_dir)): p.read_bytes() for s in stages for p in sorted((run_dir / s).rglob("*.parquet"))
    }


def queue_rows(run_dir: Path) -> dict[str, Any]:
    """The review queue as an annotator meets it: its items and their state (retired ones included)."""
    with sqlite3.connect(run_dir / "review" / "queue.sqlite") as db:
        items = db.execute(
            "SELECT i.id, i.stage, i.edit_id, i.parent_id, i.task, i.variant, i.editor, i.seq, i.payload_json, s.outcome, s.available "
            "FROM review_items i LEFT JOIN review_item_state s ON s.item_id = i.id ORDER BY i.id"
        ).fetchall()
        events = db.execute("SELECT item_id, kind FROM review_events ORDER BY item_id, kind").fetchall()
    return {"items": items, "events": events}


def assert_same_build(run_dir: Path, fresh: Path) -> None:
    """Row for row (byte for byte) the artifacts and the review queue of a fresh build."""
    got, want = artifacts(run_dir), artifacts(fresh)
    assert sorted(got) == sorted(want), (
        f"shard files differ: extra {sorted(set(got) - set(want))}, missing {sorted(set(want) - set(got))}"
    )
    differ = sorted(k for k in want if got[k] != want[k])
    assert not differ, f"artifacts differ from a fresh build: {differ}"
    assert queue_rows(run_dir) == queue_rows(fresh)
