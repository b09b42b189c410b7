"""A whole `reactbench build` with its run directory on S3 (a real S3 API: moto, tests/s3_server.py),
as a user runs it: real `reactbench` processes reaching the store through `AWS_ENDPOINT_URL`.

Instruct, edit (with images), qa, review fill, then eval, export and report, a rerun that skips
every shard, a second run directory served whole from the shared reuse store on S3 (byte for
byte the first), and issue 24's done-when: two builds started at the same instant on one
`s3://` run directory, exactly one runs and the other exits 3 naming it, in every trial.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml
from PIL import Image
from s3_server import S3Server

from storage.fs import RunFS
from storage.parquet_io import ArtifactReader
from storage.run_lock import LEASE_FILE
from storage.stage_store import StageStore

ROOT = Path(__file__).resolve().parents[2]
CLI = str(Path(sys.executable).with_name("reactbench"))
STAGES = ("mine", "instruct", "edit", "qa", "review")
RACE_TRIALS = 10

pytestmark = pytest.mark.slow


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env.update(PYTHONUNBUFFERED="1", PYTHONPATH=str(ROOT))
    return env


def reactbench(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([CLI, *args], capture_output=True, text=True, env=_env(), cwd=cwd, timeout=600)


@pytest.fixture(scope="module")
def bucket(s3_server: S3Server) -> str:
    return s3_server.bucket()


@pytest.fixture(scope="module")
def config(sample_dir: Path, bucket: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two tasks (relational erasure edits images, dense counting does not), small shards, the
    reuse store shared on S3, the review queue in a local SQLite file (it cannot live on S3)."""
    tmp = tmp_path_factory.mktemp("s3cfg")
    cfg = yaml.safe_load((ROOT / "configs" / "demo.yaml").read_text())
    cfg["sources"] = {"visual_genome": str(sample_dir / "visual_genome"), "fsc147": str(sample_dir / "fsc147")}
    cfg["run"].update(shard_size=8, reuse_dir=f"s3://{bucket}/reuse")
    cfg["mine"]["tasks"] = ["relational_erasure", "dense_counting"]
    cfg["mine"]["relational_erasure"]["images_per_pair"] = 2
    cfg["mine"]["dense_counting"]["per_bin"] = 1
    cfg["review"] = {"db_url": f"sqlite:///{tmp / 'queue.sqlite'}"}
    path = tmp / "s3.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


@pytest.fixture(scope="module")
def s3_run(config: Path, bucket: str) -> dict[str, Any]:
    url = f"s3://{bucket}/run"
    proc = reactbench("build", "--config", str(config), "--run-dir", url, "--orchestrator", "local", cwd=config.parent)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return {
        "url": url,
        "output": proc.stdout + proc.stderr,
        "db_url": yaml.safe_load(config.read_text())["review"]["db_url"],
    }


def _items(run: RunFS, stage: str) -> dict[str, int]:
    """Items reused from the store / computed, summed over the stage's shard markers."""
    totals = {"reused": 0, "computed": 0}
    for marker in StageStore(run, stage, {}).markers():
        for k, v in (marker.get("items") or {}).items():
            totals[k] = totals.get(k, 0) + v
    return totals


def _parquet_files(run: RunFS) -> dict[str, bytes]:
    return {
        p.removeprefix(run.root + "/"): run.fs.cat_file(p)
        for s in STAGES[:4]
        for p in run.walk_files(s)
        if p.endswith(".parquet")
    }


def test_a_whole_build_on_s3_leaves_every_artifact(s3_run: dict[str, Any], bucket: str, s3_server: S3Server) -> None:
    run = RunFS.open(s3_run["url"])
    for stage in STAGES:
        manifest = json.loads(run.read_text(stage, "_manifest.json"))
        assert manifest["status"] == "complete" and manifest["completed_shards"], (stage, manifest)
    assert yaml.safe_load(run.read_text("config.yaml"))["run"]["reuse_dir"] == f"s3://{bucket}/reuse"
    edits = ArtifactReader(run, "edit/edits", "edits").rows()
    edited = [e for e in edits if e["editor"] == "classical"]
    assert edited and any(e["editor"] == "none" for e in edits)
    for e in edited[:5]:  # the edited images are on S3, decode, and differ from their originals
        original, changed = run.read_bytes(e["original_image"]), run.read_bytes(e["edited_image"])
        assert original != changed
        with Image.open(io.BytesIO(original)) as a, Image.open(io.BytesIO(changed)) as b:
            assert a.size == b.size
    assert ArtifactReader(run, "qa/questions", "questions").count() > 0
    from tasks.review.queue import count_queue_items

    assert count_queue_items(s3_run["url"], s3_run["db_url"]) > 0
    assert not run.exists(LEASE_FILE)
    keys = s3_server.filesystem().find(bucket)
    assert not [k for k in keys if "/.tmp-" in k], "a write on S3 went through a temporary key (copy + delete)"
    assert any(k.startswith(f"{bucket}/reuse/") for k in keys), "nothing in the shared reuse store"


def test_eval_export_and_report_on_s3(s3_run: dict[str, Any], bucket: str, config: Path) -> None:
    url, cwd = s3_run["url"], config.parent
    ev = reactbench("eval", "--run-dir", url, "--model", "rules:rules-v1", "--unverified", cwd=cwd)
    assert ev.returncode == 0, ev.stdout + ev.stderr
    assert f"{url}/eval/rules-rules-v1-unverified" in " ".join((ev.stdout + ev.stderr).split()), (
        ev.stderr
    )  # the URL, not a bare bucket path
    run = RunFS.open(url)
    metrics = json.loads(run.read_text("eval", "rules-rules-v1-unverified", "metrics.json"))
    assert metrics
    out = f"s3://{bucket}/release"
    ex = reactbench("export", "--run-dir", url, "--out", out, "--unverified", cwd=cwd)
    assert ex.returncode == 0, ex.stdout + ex.stderr
    release = RunFS.open(out)
    files = [p for p in release.walk_files("data") if p.endswith(".parquet")]
    rows = sum(pq.read_metadata(io.BytesIO(release.fs.cat_file(p))).num_rows for p in files)
    assert {p.split("/")[-2] for p in files} == {"relational_erasure", "dense_counting"} and rows > 0
    assert "dataset" in release.read_text("README.md").lower()
    rep = reactbench("report", "eval", "--run-dir", url, cwd=cwd)
    assert rep.returncode == 0, rep.stdout + rep.stderr
    assert f"{url}/reports/eval.html" in " ".join((rep.stdout + rep.stderr).split()), rep.stderr
    assert "<html" in run.read_text("reports", "eval.html").lower()


def test_review_export_on_s3(s3_run: dict[str, Any], config: Path) -> None:
    """``reactbench review export`` writes its set to the run's final keys, sealed by the manifest,
    and a reader on S3 accepts it (s3fs's folder moves had made it fail with NoSuchKey)."""
    from tasks.review.export_set import require_export_set

    url = s3_run["url"]
    proc = reactbench("review", "export", "--run-dir", url, "--db", s3_run["db_url"], cwd=config.parent)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    manifest = require_export_set(RunFS.open(url), ("verified_edits", "verified_questions", "decisions"))
    assert manifest["files"]["decisions"]["rows"] == 0  # nobody has reviewed yet: an empty, complete set
    assert not RunFS.open(url).exists(LEASE_FILE)


def test_a_rerun_on_s3_skips_every_shard(s3_run: dict[str, Any], config: Path) -> None:
    proc = reactbench(
        "build", "--config", str(config), "--run-dir", s3_run["url"], "--orchestrator", "local", cwd=config.parent
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    output = proc.stdout + proc.stderr
    assert "Nothing to do: all" in output and "shard(s) were skipped (already complete)" in output, output


def test_a_second_run_dir_is_served_by_the_shared_reuse_store_byte_for_byte(
    s3_run: dict[str, Any], bucket: str, config: Path
) -> None:
    url = f"s3://{bucket}/run2"
    proc = reactbench("build", "--config", str(config), "--run-dir", url, "--orchestrator", "local", cwd=config.parent)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    first, second = RunFS.open(s3_run["url"]), RunFS.open(url)
    for stage in ("instruct", "edit", "qa"):
        items = _items(second, stage)
        assert items["computed"] == 0 and items["reused"] > 0, (stage, items)
    a, b = _parquet_files(first), _parquet_files(second)
    assert a and a == b


def test_two_builds_started_together_on_s3_one_runs_the_other_exits_3(config: Path, bucket: str) -> None:
    """Issue 24's done-when, every trial: both processes reach the lease within moments of each
    other (the CLI start-up is the same for both), the store's conditional write decides. A tiny
    build (mining the counting task only) keeps the ten trials short."""
    tiny = yaml.safe_load(config.read_text())
    tiny["mine"]["tasks"] = ["dense_counting"]
    race_config = config.with_name("race.yaml")
    race_config.write_text(yaml.safe_dump(tiny))
    for trial in range(RACE_TRIALS):
        url = f"s3://{bucket}/race-{trial}"
        argv = [
            CLI,
            "build",
            "--config",
            str(race_config),
            "--run-dir",
            url,
            "--orchestrator",
            "local",
            "--stages",
            "mine",
        ]
        procs = [
            subprocess.Popen(
                argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(), cwd=config.parent
            )
            for _ in range(2)
        ]
        results = [(p.pid, *p.communicate(timeout=300), p.returncode) for p in procs]
        codes = sorted(r[3] for r in results)
        assert codes == [0, 3], f"trial {trial}: exit statuses {codes}\n" + "\n".join(r[2] for r in results)
        (winner, *_), (_, _, refusal, _) = sorted(results, key=lambda r: r[3])
        assert f"pid {winner}" in refusal and "`reactbench build`" in refusal and "Traceback" not in refusal, refusal
