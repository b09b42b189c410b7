"""Fault probes: Parquet files of finished stages deleted, changed or added behind the pipeline's
back, met through the real CLI (issue 31.4).

Before, a completion marker was trusted without looking at the files it stood for: with the
candidates deleted, `reactbench status` still said "candidates 177" and the next build exited 0
with an empty benchmark, retiring every review-queue item. Now markers and manifests record each
file's size and sha256: `status` shows the stage as ``damaged`` naming the file, the next build
recomputes exactly the damaged shards (the same bytes as before, so nothing downstream changes),
and a command that reads the stage on its own refuses it instead of reading it as empty.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rebuild_helpers import artifacts, assert_same_build, copy_run, queue_rows

ROOT = Path(__file__).resolve().parents[2]
CLI = str(Path(sys.executable).with_name("reactbench"))

pytestmark = pytest.mark.slow


def reactbench(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env.update(PYTHONPATH=str(ROOT), HF_DATASETS_OFFLINE="1")
    return subprocess.run([CLI, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=600)


def stage_states(status_output: str) -> dict[str, str]:
    """The status column of `reactbench status`'s table, by stage."""
    return dict(re.findall(r"│ (mine|instruct|edit|qa|review)\s+│ (\S+)", status_output))


def test_deleted_candidates_are_reported_by_status_and_recomputed_by_the_next_build(
    demo_run: Path, tmp_path: Path
) -> None:
    run = copy_run(demo_run, tmp_path / "run")
    deleted = sorted((run / "mine" / "candidates").glob("*.parquet"))
    assert deleted
    for path in deleted:
        path.unlink()
    status = reactbench("status", "--run-dir", str(run), cwd=tmp_path)
    assert status.returncode == 5, status.stderr  # a damaged stage: a script sees it too
    assert stage_states(status.stderr) == {
        "mine": "damaged",
        "instruct": "complete",
        "edit": "complete",
        "qa": "complete",
        "review": "complete",
    }
    assert f"damaged: mine: mine/candidates/{deleted[0].name} is missing" in status.stderr, status.stderr

    build = reactbench("build", "--run-dir", str(run), cwd=tmp_path)
    assert build.returncode == 0, build.stdout + build.stderr
    said = " ".join(build.stderr.split())
    assert re.search(
        rf"mine: recomputed {len(deleted)} finished shard\(s\) whose files did not match their markers: mine/candidates/{deleted[0].name} is missing",
        said,
    ), said
    assert_same_build(run, demo_run)  # byte for byte, and the review queue as it was: nothing retired
    assert "damaged" not in reactbench("status", "--run-dir", str(run), cwd=tmp_path).stderr


def test_changed_and_stray_files_are_recomputed_and_removed(demo_run: Path, tmp_path: Path) -> None:
    run = copy_run(demo_run, tmp_path / "run")
    questions = sorted((run / "qa" / "questions").glob("part-*.parquet"))
    assert len(questions) >= 2
    edits = sorted((run / "edit" / "edits").glob("part-*.parquet"))
    same_size = bytearray(edits[-1].read_bytes())
    same_size[len(same_size) // 2] ^= 0x01  # only its sha256 tells
    edits[-1].write_bytes(bytes(same_size))
    questions[1].write_bytes(questions[0].read_bytes())  # another shard's rows under this name
    (run / "qa" / "questions" / "part-00000 (copy).parquet").write_bytes(questions[0].read_bytes())
    status = reactbench("status", "--run-dir", str(run), cwd=tmp_path)
    assert stage_states(status.stderr)["qa"] == "damaged", status.stderr
    said = " ".join(status.stderr.split())
    assert f"qa/questions/{questions[1].name} has" in said and "were written" in said and "(and 1 more)" in said, said

    build = reactbench("build", "--run-dir", str(run), cwd=tmp_path)
    assert build.returncode == 0, build.stdout + build.stderr
    said = " ".join(build.stderr.split())
    assert (
        f"edit: recomputed 1 finished shard(s) whose files did not match their markers: edit/edits/{edits[-1].name} was changed"
        in said
    ), said
    assert "qa: recomputed 1 finished shard(s)" in said and "part-00000 (copy).parquet is a shard file" not in said, (
        said
    )
    assert not (run / "qa" / "questions" / "part-00000 (copy).parquet").exists()
    assert_same_build(run, demo_run)


def test_commands_reading_a_damaged_stage_alone_refuse_it(demo_run: Path, tmp_path: Path) -> None:
    """`reactbench qa` (its upstream is edit), and `export` / `eval` with --unverified (they read
    qa and edit directly) stop with one line naming the file instead of reading fewer rows."""
    run = copy_run(demo_run, tmp_path / "run")
    victim = sorted((run / "edit" / "edits").glob("part-*.parquet"))[0]
    victim.unlink()
    before = artifacts(run), queue_rows(run)

    qa = reactbench("qa", "--run-dir", str(run), cwd=tmp_path)
    assert qa.returncode == 1, qa.stdout + qa.stderr
    said = " ".join(qa.stderr.split())
    assert (
        f"stage 'qa' reads 'edit', whose finished output is damaged in {run}: edit/edits/{victim.name} is missing; run `reactbench edit --run-dir {run}`"
        in said
    ), said

    for args in (["export", "--out", str(tmp_path / "releases" / "demo")], ["eval", "--model", "rules:rules-v1"]):
        proc = reactbench(*args, "--run-dir", str(run), "--unverified", cwd=tmp_path)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        said = " ".join(proc.stderr.split())
        assert (
            f"the edit stage's output is damaged in {run}: edit/edits/{victim.name} is missing; run `reactbench build --run-dir {run}`"
            in said
        ), said
    assert not (tmp_path / "releases").exists() and not (run / "eval").exists()  # not even an empty folder
    assert (artifacts(run), queue_rows(run)) == before
