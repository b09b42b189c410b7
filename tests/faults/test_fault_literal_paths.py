"""Fault probes of issue 42 cases 4-7: odd paths and read-only runs, through the real CLI.

4. ``export --out file://localhost/abs/path`` wrote to ``./localhost/abs/path``; ``--out
   'dir::file:///...'`` exited 2 but left empty folders behind.
5. ``export --out`` naming an existing file: a 45-line ``NotADirectoryError`` traceback.
6. A run directory named with glob characters (``runs/r*[ab]``) could not be resumed (fsspec
   read its marker paths as a glob) and ``status`` printed ``[ab]`` as markup (dropped).
7. A read-only run directory (a published run mounted read-only): every writer printed a
   traceback on the lock file. Now reading commands work without a lease (``eval --out`` writes
   its answers into another folder) and writers refuse in one line, the run unchanged.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_fault_out_paths import reactbench, snapshot

pytestmark = pytest.mark.slow


@pytest.fixture
def place(demo_run: Path, tmp_path: Path) -> Path:
    """A working folder holding ``runs/X``, a copy of the finished demo build."""
    shutil.copytree(demo_run, tmp_path / "runs" / "X")
    return tmp_path


def one_line(proc: subprocess.CompletedProcess) -> str:
    lines = [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]
    assert len(lines) == 1, proc.stdout + proc.stderr
    assert "Traceback" not in lines[0]
    return lines[0]


@pytest.mark.parametrize(
    "out, says",
    [
        ("dir::file://{base}/cmp", "a chained fsspec URL (`::`) is not accepted here"),
        ("file://elsewhere.example{base}/rel", "names the host 'elsewhere.example', not this machine"),
        ("{base}/notes.txt", "--out {base}/notes.txt is an existing file; a release is a folder"),
    ],
    ids=["chained-url", "file-url-of-another-host", "an-existing-file"],
)
def test_export_out_refused_in_one_line_before_anything_is_made(place: Path, out: str, says: str) -> None:
    (place / "notes.txt").write_text("keep me")
    before = snapshot(place)
    run = place / "runs" / "X"
    proc = reactbench(run, "export", "--run-dir", ".", "--unverified", "--out", out.format(base=place))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert says.format(base=place) in one_line(proc)
    assert snapshot(place) == before, "a refused --out created or changed something"


def test_run_dir_with_glob_characters_resumes_and_shows_its_name(place: Path) -> None:
    name = "runs/r*[ab]"  # as a glob it matches neither itself nor anything else here
    (place / "runs" / "X").rename(place / name)
    artifacts = {p: p.read_bytes() for p in (place / name).rglob("*.parquet")}
    proc = reactbench(place, "build", "--run-dir", name)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Nothing to do: all 42 shard(s) were skipped" in proc.stdout + proc.stderr
    assert {p: p.read_bytes() for p in (place / name).rglob("*.parquet")} == artifacts
    status = reactbench(place, "status", "--run-dir", name)
    assert status.returncode == 0 and f"reactbench: {name}\n" in status.stdout + status.stderr, status.stdout


@pytest.fixture
def read_only_run(place: Path) -> Iterator[Path]:
    """``runs/X`` mounted read-only (a bind mount, as root: root ignores file modes) or, for
    another user, with its write permissions taken away; put back afterwards."""
    run = place / "runs" / "X"
    if os.geteuid() != 0:
        subprocess.run(["chmod", "-R", "a-w", str(run)], check=True)
        yield run
        subprocess.run(["chmod", "-R", "u+w", str(run)], check=True)
        return
    ro = place / "ro"
    ro.mkdir()
    subprocess.run(["mount", "--bind", str(run), str(ro)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(ro)], check=True)
        assert not os.access(ro, os.W_OK), "the bind mount is still writable"
        yield ro
    finally:
        subprocess.run(["umount", str(ro)], check=True)
        ro.rmdir()


def test_a_read_only_run_is_read_without_a_lease_and_writers_refuse(place: Path, read_only_run: Path) -> None:
    """Also case 4: the release goes to ``file://localhost/<abs>``, which is that absolute path."""
    run = str(read_only_run)
    before = snapshot(place / "runs" / "X")
    status = reactbench(place, "status", "--run-dir", run)
    assert status.returncode == 0, status.stdout + status.stderr
    out = place / "releases" / "demo"
    export = reactbench(place, "export", "--run-dir", run, "--unverified", "--out", f"file://localhost{out}")
    assert export.returncode == 0, export.stderr
    assert (out / "release_manifest.json").is_file()
    assert not (place / "localhost").exists(), "file://localhost/... was read as the relative path localhost/..."
    report = reactbench(place, "report", "build", "--run-dir", run, "--out", "reports/build.html")
    assert report.returncode == 0 and (place / "reports" / "build.html").is_file(), report.stderr
    # an evaluation of the read-only run lands in another folder, its report drawn from there
    model = ["--unverified", "--model", "prior:blind-v1"]
    evaluated = reactbench(place, "eval", "--run-dir", run, *model, "--out", "results/X")
    assert evaluated.returncode == 0, evaluated.stdout + evaluated.stderr
    metrics = place / "results" / "X" / "eval" / "prior-blind-v1-unverified" / "metrics.json"
    assert json.loads(metrics.read_text())["n_answers"] > 0
    drawn = reactbench(place, "report", "eval", "--run-dir", "results/X", "--out", "reports/eval.html")
    assert drawn.returncode == 0 and "prior" in (place / "reports" / "eval.html").read_text(), drawn.stderr
    inside = reactbench(place, "eval", "--run-dir", run, *model, "--out", f"{run}/eval-copy")
    assert inside.returncode == 2 and "unless --out lies outside it" in one_line(inside)
    (place / "notes.txt").write_text("keep me")
    on_file = reactbench(place, "eval", "--run-dir", run, *model, "--out", "notes.txt")
    assert on_file.returncode == 2 and "notes.txt is a file" in one_line(on_file), on_file.stderr
    for args in (["build"], ["eval", "--unverified", "--model", "rules:rules-v1"]):
        proc = reactbench(place, *args, "--run-dir", run)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        line = one_line(proc)
        assert line.startswith(f"{run}: the run directory is ") and "nothing was written" in line, line
    assert snapshot(place / "runs" / "X") == before
