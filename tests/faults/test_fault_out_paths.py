"""Fault probes: `reactbench export` and `report` pointed at a run directory, through the real CLI.

Issue 31.3, each case as a user typed it: ``--out runs/X/../X --replace`` and ``--out /base//runs/X``
replaced the whole run (config, stage outputs, images, the review queue) by the release;
``runs/X/release``, ``runs/X/reports/rel`` and ``file://.../runs/X/rel2`` wrote into it;
``runs/X/mine/candidates --replace`` swapped a stage's output for the release (the next build then
emptied the benchmark); ``runs/X/. --replace`` ended in ``OSError: [Errno 16]``. Now every one is
refused with one line and exit 2, and the run directory is byte for byte what it was.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from storage.fs import RunFS
from tasks.release.export.seal import verify_release

ROOT = Path(__file__).resolve().parents[2]
CLI = str(Path(sys.executable).with_name("reactbench"))

pytestmark = pytest.mark.slow


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env.update(PYTHONPATH=str(ROOT), HF_DATASETS_OFFLINE="1")
    return env


def snapshot(folder: Path) -> dict[str, str]:
    """Every file's sha256 and every folder below ``folder``, by relative path."""
    out = {}
    for top, dirs, files in os.walk(folder):  # symlinks are recorded, not followed
        for name in dirs + files:
            p = Path(top) / name
            rel = str(p.relative_to(folder))
            if p.is_symlink():
                out[rel] = f"link to {os.readlink(p)}"
            else:
                out[rel] = "folder" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@pytest.fixture
def place(demo_run: Path, tmp_path: Path) -> Path:
    """A working folder holding ``runs/X`` (a finished demo build), ``runs/Y`` (another run
    directory: its config and a stage manifest), ``link`` -> ``runs/X`` and ``notes/`` (a user's folder)."""
    shutil.copytree(demo_run, tmp_path / "runs" / "X")
    other = tmp_path / "runs" / "Y"
    (other / "mine").mkdir(parents=True)
    (other / "config.yaml").write_text("version: 1\n")
    (other / "mine" / "_manifest.json").write_text('{"status": "complete"}')
    os.symlink(tmp_path / "runs" / "X", tmp_path / "link")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("keep me")
    return tmp_path


def reactbench(place: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([CLI, *args], capture_output=True, text=True, env=_env(), cwd=place, timeout=300)


EXPORTS = {
    "dotdot-replace": (["--out", "runs/X/../X", "--replace"], "(= {base}/runs/X) is the run directory {base}/runs/X;"),
    "double-slash-replace": (
        ["--out", "{base}//runs/X", "--replace"],
        "(= {base}/runs/X) is the run directory {base}/runs/X;",
    ),
    "into-the-run": (["--out", "runs/X/release"], "is inside the run directory {base}/runs/X;"),
    "into-reports": (["--out", "runs/X/reports/rel"], "is inside the run directory {base}/runs/X;"),
    "file-url": (["--out", "file://{base}/runs/X/rel2"], "is inside the run directory {base}/runs/X;"),
    "stage-folder-replace": (
        ["--out", "runs/X/mine/candidates", "--replace"],
        "is inside the run directory {base}/runs/X;",
    ),
    "dot-replace": (["--out", "runs/X/.", "--replace"], "(= {base}/runs/X) is the run directory {base}/runs/X;"),
    "above-the-run-replace": (["--out", "runs", "--replace"], "holds the run directory {base}/runs/X;"),
    "symlink-into-the-run": (
        ["--out", "link/rel"],
        "(= {base}/runs/X/rel) is inside the run directory {base}/runs/X;",
    ),
    "another-run": (["--out", "runs/Y/rel", "--replace"], "is inside the run directory {base}/runs/Y;"),
    "not-a-release-replace": (["--out", "notes", "--replace"], "holds no release_manifest.json (found todo.txt)"),
}


@pytest.mark.parametrize("case", sorted(EXPORTS))
def test_export_into_or_over_a_run_directory_is_refused(place: Path, case: str) -> None:
    args, line = EXPORTS[case]
    base = str(place)
    before = snapshot(place)
    proc = reactbench(place, "export", "--run-dir", "runs/X", "--unverified", *[a.format(base=base) for a in args])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --out ") and line.format(base=base) in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert snapshot(place) == before, "a refused export changed the run directory, another run or a user's folder"


def test_export_to_a_folder_of_its_own_and_replace_of_a_sealed_release_still_work(place: Path) -> None:
    first = reactbench(place, "export", "--run-dir", "runs/X", "--unverified", "--out", "releases/./demo")
    assert first.returncode == 0, first.stderr
    again = reactbench(
        place, "export", "--run-dir", "link", "--unverified", "--out", f"file://{place}/releases//demo", "--replace"
    )
    assert again.returncode == 0, again.stderr
    assert verify_release(RunFS.open(str(place / "releases" / "demo")))["counts"]
    assert sorted(p.name for p in (place / "releases").iterdir()) == [
        "demo"
    ]  # no lease, no temporary folder left beside it


REPORTS = {
    "over-a-stage-file": ("runs/X/mine/candidates/part-00000.parquet", "is inside the run directory {base}/runs/X;"),
    "over-the-config": (
        "runs/X/reports/../config.yaml",
        "(= {base}/runs/X/config.yaml) is inside the run directory {base}/runs/X;",
    ),
    "into-another-run": ("runs/Y/reports/build.html", "is inside the run directory {base}/runs/Y;"),
    "over-the-run-itself": ("runs/X/.", "is a folder"),
}


@pytest.mark.parametrize("case", sorted(REPORTS))
def test_report_over_or_into_a_run_directory_is_refused(place: Path, case: str) -> None:
    out, line = REPORTS[case]
    base = str(place)
    before = snapshot(place)
    proc = reactbench(place, "report", "build", "--run-dir", "runs/X", "--out", out)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and line.format(base=base) in lines[0], proc.stderr
    assert snapshot(place) == before


def test_report_into_its_own_reports_folder_or_outside_is_written(place: Path) -> None:
    inside = reactbench(place, "report", "build", "--run-dir", "runs/X", "--out", "link/reports/mine.html")
    assert inside.returncode == 0, inside.stderr
    assert "<html" in (place / "runs" / "X" / "reports" / "mine.html").read_text().lower()
    outside = reactbench(place, "report", "build", "--run-dir", "runs/X", "--out", "html//build.html")
    assert outside.returncode == 0, outside.stderr
    assert (place / "html" / "build.html").exists()
