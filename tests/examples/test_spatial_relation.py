"""The worked task plugin (`examples/spatial_relation`), built end to end as a user runs it:
`reactbench build` with its config queues spatial_relation items, `audit` finds every gold answer
true of the sample's drawn truth, and `export` / `eval` include the task. `make test` installs the
plugin, so this never skips there."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
TASK = "spatial_relation"

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("reactbench_spatial_relation") is None,
    reason="the example plugin is not installed: uv pip install -e examples/spatial_relation (make test does)",
)


def _cli(*args: str, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    proc = subprocess.run([sys.executable, "-m", "flows.entry", *args], capture_output=True, text=True, env=env,
                          timeout=timeout, cwd=ROOT, check=False)
    assert proc.returncode == 0, f"reactbench {' '.join(args)}:\n{proc.stdout}\n{proc.stderr}"
    return proc


@pytest.fixture(scope="module")
def built(sample_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example config on the session's sample, built to the review queue."""
    data = yaml.safe_load((ROOT / "examples" / "spatial_relation" / "config.yaml").read_text())
    data["sources"] = {"visual_genome": str(sample_dir / "visual_genome")}
    tmp = tmp_path_factory.mktemp("spatial")
    config = tmp / "config.yaml"
    config.write_text(yaml.safe_dump(data))
    _cli("build", "--config", str(config), "--run-dir", str(tmp / "run"))
    return tmp / "run"


def _rows(run_dir: Path, name: str) -> list[dict[str, Any]]:
    from storage import addresses
    from storage.fs import RunFS

    return getattr(addresses, name).reader(RunFS.open(str(run_dir))).rows()


def test_the_plugin_registers_a_fifth_task() -> None:
    from storage.task_spec import task_ids, task_spec

    spec = task_spec(TASK)
    assert task_ids()[-1] == TASK and spec.short == "SR" and spec.edits_image
    assert spec.params is not None and spec.miner("visual_genome") is not None


def test_build_queues_spatial_relation_items_with_verified_moves(built: Path) -> None:
    from tasks.review.queue import count_queue_items

    candidates = [c for c in _rows(built, "CANDIDATES") if c["task"] == TASK]
    assert len(candidates) >= 20
    edits = [e for e in _rows(built, "EDITS") if e["task"] == TASK]
    assert edits and {e["edit_type"] for e in edits} == {"move"}
    ok = [e for e in edits if e["status"] == "ok"]
    assert len(ok) >= 20, Counter(e["status"] for e in edits)
    questions = [q for q in _rows(built, "QUESTIONS") if q["task"] == TASK]
    assert Counter(q["qtype"] for q in questions).keys() == {"YN", "MC", "SA"}
    queue = _rows(built, "REVIEW_QUEUE") if hasattr(__import__("storage.addresses").addresses, "REVIEW_QUEUE") else None
    queued = {q["edit_id"] for q in queue} if queue else None
    assert count_queue_items(str(built)) > 0
    if queued is not None:
        assert len({e["id"] for e in ok} & queued) >= 20


def test_audit_finds_every_gold_answer_true_of_the_drawn_truth(built: Path) -> None:
    out = json.loads(_cli("audit", "--run-dir", str(built)).stdout.strip().splitlines()[-1])
    sr = out["per_task"][TASK]
    assert sr["items"] >= 20 and sr["consistent"] == sr["items"], out
    assert out["fraction"] == 1.0


def test_export_and_eval_include_the_task(built: Path, tmp_path: Path) -> None:
    release = tmp_path / "release"
    _cli("export", "--run-dir", str(built), "--out", str(release), "--unverified", "--lmms-eval", "--vlmevalkit")
    files = [p.relative_to(release).as_posix() for p in release.rglob("*") if p.is_file()]
    assert any(TASK in f for f in files), files  # the HF config of the task
    lmms = [p for p in release.rglob("*.yaml") if TASK in p.name or "_sr" in p.name.lower()]
    assert lmms, [f for f in files if f.endswith(".yaml")]
    tsvs = list(release.rglob("*.tsv"))
    assert tsvs and any(TASK in p.read_text() for p in tsvs)

    _cli("eval", "--run-dir", str(built), "--model", "rules:rules-v1", "--unverified")
    [metrics] = list(built.glob("eval/*/metrics.json"))
    doc = json.loads(metrics.read_text())
    assert TASK in json.dumps(doc)
    reports = list(built.glob("reports/*.html"))
    assert reports and any("Spatial relation" in p.read_text() or "SR" in p.read_text() for p in reports)
