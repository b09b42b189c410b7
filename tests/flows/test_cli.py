"""The CLI as a user meets it: clear errors and exit codes, no traceback for bad input."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CLI = str(Path(sys.executable).with_name("reactbench"))


def _run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    return subprocess.run([CLI, *args], capture_output=True, text=True, env=env, timeout=120, cwd=cwd)


def test_bad_config_exits_2_naming_the_key(tmp_path: Path) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("mine:\n  relational_erasure:\n    theta: lots\n  colour: red\n")
    proc = _run("mine", "--config", str(cfg), "--run-dir", str(tmp_path / "run"))
    assert proc.returncode == 2
    assert "mine.relational_erasure.theta" in proc.stderr and "mine.colour" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_stage_before_its_upstream_says_what_to_run(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    proc = _run("instruct", "--run-dir", str(tmp_path / "run"), "--orchestrator", "local")
    assert proc.returncode == 1
    assert "reactbench mine" in proc.stderr and "Traceback" not in proc.stderr


def test_help_lists_every_stage() -> None:
    proc = _run("--help")
    for cmd in ("build", "mine", "instruct", "edit", "qa", "review", "sample-data"):
        assert cmd in proc.stdout


def test_missing_sources_name_the_files_and_the_fix(tmp_path: Path) -> None:
    """A refused config (issue 42.9): exit 2, one line, and no run directory (it was exit 1 from
    the mine stage, leaving a run directory holding only config.yaml)."""
    proc = _run("mine", "--run-dir", str(tmp_path / "run"), "--orchestrator", "local", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "data/sample/visual_genome/image_data.json" in proc.stderr and "reactbench sample-data" in proc.stderr
    assert not (tmp_path / "run").exists()


def test_misspelt_editor_fails_when_the_config_loads_before_mine_runs(tmp_path: Path) -> None:
    cfg = tmp_path / "typo.yaml"
    cfg.write_text("editors:\n  - name: clasical\n")
    run_dir = tmp_path / "run"
    proc = _run("build", "--config", str(cfg), "--run-dir", str(run_dir), "--orchestrator", "local")
    text = " ".join(proc.stderr.split())  # the console may wrap long lines
    assert proc.returncode == 2, proc.stderr
    assert "editors[0].name: unknown editor 'clasical'" in text and "valid choices: classical," in text
    assert "Traceback" not in proc.stderr
    assert not (run_dir / "mine").exists(), "nothing ran: the config failed before the first stage"
