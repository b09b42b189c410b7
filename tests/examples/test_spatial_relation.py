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
    proc = subprocess.run(
        [sys.executable, "-m", "flows.entry", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        cwd=ROOT,
        check=False,
    )
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
    from storage.fs import RunFS
    from tasks.review.stage import QUEUE

    candidates = [c for c in _rows(built, "CANDIDATES") if c["task"] == TASK]
    assert len(candidates) >= 20
    edits = [e for e in _rows(built, "EDITS") if e["task"] == TASK]
    assert {e["edit_type"] for e in edits} == {"move"} and {e["editor"] for e in edits} == {"classical"}
    ok = {e["id"] for e in edits if e["status"] == "ok"}
    assert len(ok) >= 20, Counter(e["status"] for e in edits)
    questions = [q for q in _rows(built, "QUESTIONS") if q["task"] == TASK]
    assert Counter(q["qtype"] for q in questions).keys() == {"YN", "MC", "SA"}
    assert {q["image_role"] for q in questions} == {"edited"}
    queued = {r["edit_id"] for r in QUEUE.reader(RunFS.open(str(built))).rows() if r["task"] == TASK}
    assert len(queued) >= 20 and queued <= ok


def test_audit_finds_every_gold_answer_true_of_the_drawn_truth(built: Path) -> None:
    out = json.loads(_cli("audit", "--run-dir", str(built)).stdout.strip().splitlines()[-1])
    sr = out["per_task"][TASK]
    assert sr["items"] >= 20 and sr["consistent"] == sr["items"], out
    assert out["fraction"] == 1.0


def test_export_and_eval_include_the_task(built: Path, tmp_path: Path) -> None:
    release = tmp_path / "release"
    _cli("export", "--run-dir", str(built), "--out", str(release), "--unverified", "--lmms-eval", "--vlmevalkit")
    assert list((release / "data" / TASK).glob("*.parquet"))  # the task's HF config
    assert f"config_name: {TASK}" in (release / "README.md").read_text()
    assert (release / "lmms_eval" / f"reactbench_{TASK}.yaml").is_file()
    for kind in ("Y_N", "MCQ", "VQA"):
        assert TASK in (release / "vlmevalkit" / f"reactbench_{kind}.tsv").read_text()

    _cli("eval", "--run-dir", str(built), "--model", "rules:rules-v1", "--unverified")
    [metrics] = list(built.glob("eval/*/metrics.json"))
    doc = json.loads(metrics.read_text())
    assert TASK in doc["react"]["per_task"] and doc["react"]["complete"]
    # the annotation-only baseline reports the usual relation: every prior question falls back on it
    sr = [r for r in doc["hallu_rate"]["qid"] if r["task"] == TASK]
    assert sr and all(r["hallu_rate"] == 100.0 for r in sr)
    _cli("report", "eval", "--run-dir", str(built))
    assert "SR" in (built / "reports" / "eval.html").read_text()


def test_audit_check_catches_a_gold_answer_the_truth_contradicts() -> None:
    """The truth check is not vacuous: a gold that puts the cup back on the table is caught."""
    from reactbench_spatial_relation.audit import check

    cup, table = {"name": "cup", "box": [150, 80, 20, 30]}, {"name": "table", "box": [100, 110, 200, 80]}
    fields = {"relation": "on", "object": "table"}
    meta = {"operation": "move", "destination_box": [40, 110, 20, 30]}  # left of the table, apart
    right = [
        {"qid": "Q1", "qtype": "YN", "text": "Is the cup on the table?", "gold": "No"},
        {"qid": "Q3", "qtype": "YN", "text": "Is the cup to the left of the table?", "gold": "Yes"},
        {
            "qid": "Q7",
            "qtype": "MC",
            "text": "Where is the cup?",
            "gold": "B",
            "options": ["on the table", "to the left of the table", "to the right of the table", "above the table"],
        },
    ]
    assert check(cup, table, fields, meta, right) == []
    wrong = [dict(right[0], gold="Yes"), dict(right[2], gold="A")]
    assert len(check(cup, table, fields, meta, wrong)) == 3  # Q1, and option A / option B of Q7
    stayed = {"operation": "move", "destination_box": [180, 80, 20, 30]}  # still on the table
    assert any("still on" in p for p in check(cup, table, fields, stayed, right))


def test_theta_keeps_only_pairs_with_a_dominant_relation(tmp_path: Path) -> None:
    """P(relation | pair) over the pair's spatial relationships, the inverse wording folded in:
    cup-table says "on" 3 times of 4 (once as "table under cup"), plate-table "on" and "next to"
    twice each. The bundled sample writes one spatial relation per pair (P = 1), so only this
    folder exercises the filter."""
    sys.path.insert(0, str(ROOT / "tests" / "miners"))
    try:
        from mining_helpers import image, obj, rel, write_vg
    finally:
        sys.path.remove(str(ROOT / "tests" / "miners"))
    from miners.mine import mine_visual_genome
    from tasks.engine.mine_config import MineConfig

    said = [
        ("cup", "on"),
        ("cup", "on"),
        ("cup", "under"),
        ("cup", "next to"),
        ("plate", "on"),
        ("plate", "on"),
        ("plate", "beside"),
        ("plate", "next to"),
    ]
    images, objects, relationships = [], [], []
    for iid, (thing, predicate) in enumerate(said, start=1):
        mover, table = obj(10 * iid, thing, 90, 60, 20, 20), obj(10 * iid + 1, "table", 40, 80, 120, 60)
        images.append(image(iid, 200, 200))
        objects.append({"image_id": iid, "objects": [mover, table]})
        s, o = (table, mover) if predicate == "under" else (mover, table)  # "table under cup" states "cup on table"
        relationships.append({"image_id": iid, "relationships": [rel(100 + iid, s, predicate, o)]})
    root = write_vg(tmp_path / "vg", images, objects, relationships)

    def mined(**params: Any) -> tuple[int, set[str]]:
        cfg = MineConfig.model_validate({"tasks": [TASK], TASK: {"n_min": 1, "area_range": [0.001, 0.5], **params}})
        result = mine_visual_genome(root, cfg, seed=0)
        return result.summary["spatial_pairs_kept"], {
            f"{c['target_name']} {c['predicate']} {c['partner_name']}" for c in result.candidates
        }

    assert mined(theta=0.6) == (1, {"cup on table"})  # 3/4 = 0.75 >= 0.6; plate: 2/4 = 0.5 < 0.6
    assert mined(theta=0.75) == (1, {"cup on table"})
    assert mined(theta=0.8) == (0, set())
    assert mined(theta=0.5) == (2, {"cup on table", "plate next to table"})  # a tie: the alphabetically first relation
    assert mined(theta=0.5, n_min=5) == (0, set())  # N = 4 per pair
