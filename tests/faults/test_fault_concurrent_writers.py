"""Fault injection: concurrent writers on one run directory, as real `reactbench` processes.

Without a lock two builds on one run directory both did all the work, and with different
configs `config.yaml` ended up describing the other build's artifacts. Now the second writer
exits at once naming the holder, a `kill -9`-ed holder's lease is taken over, and two builds
with different configs started together leave one consistent run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CLI = str(Path(sys.executable).with_name("reactbench"))
LOCKED_EXIT = 3
STAGES = ("mine", "instruct", "edit", "qa", "review")

pytestmark = pytest.mark.slow


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env.update(PYTHONUNBUFFERED="1", PYTHONPATH=str(ROOT))
    return env


def _config(tmp_path: Path, sample_dir: Path, name: str, **changes: object) -> Path:
    cfg = yaml.safe_load((ROOT / "configs" / "demo.yaml").read_text())
    cfg["sources"] = {"visual_genome": str(sample_dir / "visual_genome"), "fsc147": str(sample_dir / "fsc147")}
    for dotted, value in changes.items():
        node = cfg
        *parents, leaf = dotted.split("__")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _build(config: Path | None, run_dir: Path) -> list[str]:
    return [
        CLI,
        "build",
        *(["--config", str(config)] if config else []),
        "--run-dir",
        str(run_dir),
        "--orchestrator",
        "local",
    ]


def _wait_for_lease(run_dir: Path, pid: int, timeout: float = 60.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            lease = json.loads((run_dir / ".reactbench-lock.json").read_text())
            if lease["pid"] == pid:
                return lease
        except (FileNotFoundError, ValueError, KeyError):
            pass
        time.sleep(0.05)
    raise AssertionError(f"no lease of pid {pid} in {run_dir} after {timeout} s")


def test_second_build_fails_at_once_and_a_killed_holder_is_taken_over(tmp_path: Path, sample_dir: Path):
    config, run_dir = _config(tmp_path, sample_dir, "demo"), tmp_path / "run"
    first = subprocess.Popen(
        _build(config, run_dir), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env(), cwd=tmp_path
    )
    try:
        _wait_for_lease(run_dir, first.pid)
        started = time.perf_counter()
        second = subprocess.run(
            _build(config, run_dir), capture_output=True, text=True, env=_env(), cwd=tmp_path, timeout=120
        )
        waited = time.perf_counter() - started
        assert second.returncode == LOCKED_EXIT, second.stderr
        assert "`reactbench build`" in second.stderr and f"pid {first.pid}" in second.stderr, second.stderr
        # refused by the executable before the CLI loads (flows/entry.py): interpreter start-up only
        assert waited < 2.0, f"the refused build took {waited:.1f} s while the first build ran"
        assert "Traceback" not in second.stderr
        assert first.poll() is None, (
            "the first build finished before it could be killed: the takeover below would prove nothing"
        )
        os.kill(first.pid, signal.SIGKILL)
        first.wait()
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    third = subprocess.run(
        _build(config, run_dir), capture_output=True, text=True, env=_env(), cwd=tmp_path, timeout=600
    )
    assert third.returncode == 0, third.stderr[-3000:]
    assert "Taking over the stale lock" in third.stderr and f"pid {first.pid}" in third.stderr
    for stage in STAGES:
        assert json.loads((run_dir / stage / "_manifest.json").read_text())["status"] == "complete", stage
    assert not (run_dir / ".reactbench-lock.json").exists()


def test_builds_with_different_configs_started_together_leave_one_consistent_run(tmp_path: Path, sample_dir: Path):
    run_dir = tmp_path / "run"
    configs = {
        0: _config(tmp_path, sample_dir, "seed0", run__seed=0, qa__beaf=True),
        1: _config(tmp_path, sample_dir, "seed1", run__seed=1, qa__beaf=False),
    }
    procs = {
        seed: subprocess.Popen(
            _build(cfg, run_dir), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(), cwd=tmp_path
        )
        for seed, cfg in configs.items()
    }
    outs = {seed: p.communicate(timeout=600) for seed, p in procs.items()}
    codes = {seed: p.returncode for seed, p in procs.items()}
    assert sorted(codes.values()) == [0, LOCKED_EXIT], {s: (codes[s], outs[s][1][-2000:]) for s in codes}
    winner = next(s for s, c in codes.items() if c == 0)
    loser = 1 - winner
    assert f"pid {procs[winner].pid}" in outs[loser][1]
    saved = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert saved["run"]["seed"] == winner and saved["qa"]["beaf"] is (winner == 0)
    # config.yaml describes the artifacts: a later command without --config has nothing to recompute
    again = subprocess.run(
        _build(None, run_dir), capture_output=True, text=True, env=_env(), cwd=tmp_path, timeout=600
    )
    assert again.returncode == 0, again.stderr[-3000:]
    assert "Nothing to do" in again.stderr, again.stderr[-3000:]
    # every stored image is referenced by the edits (the refused build left none behind)
    import pyarrow.parquet as pq

    edits = pq.read_table(run_dir / "edit" / "edits").to_pylist()
    referenced = {r[k] for r in edits for k in ("original_image", "edited_image", "mask_image") if r[k]}
    stored = {str(p.relative_to(run_dir)) for p in (run_dir / "images").rglob("*") if p.is_file()}
    assert stored and stored <= {str(Path(r)) for r in referenced} | {f"images/{r}" for r in referenced}
