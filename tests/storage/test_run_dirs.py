"""Output paths are resolved before they are compared, and what a run directory is (storage/run_dirs.py).

Issue 31.3: ``--out runs/X/../X``, ``/base//runs/X``, ``file://.../runs/X/rel2`` and ``runs/X/.``
were compared as written, so an export replaced or wrote into the run. The CLI cases, with the run
checked byte for byte, are in ``tests/faults/test_fault_out_paths.py``; here the rules themselves,
on a local disk and on an object store (fsspec's ``memory://``; the keys are folded the same way
on S3).
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from storage.fs import RunFS
from storage.run_dirs import (
    InsideRunDir,
    enclosing_run_dir,
    is_run_dir,
    refuse_release_target,
    refuse_report_target,
    resolved,
)
from storage.run_lock import LEASE_FILE


def _run_dir(root: Path) -> Path:
    """A folder that is a run directory: config.yaml and one stage manifest."""
    (root / "mine").mkdir(parents=True)
    (root / "config.yaml").write_text("version: 1\n")
    (root / "mine" / "_manifest.json").write_text("{}")
    return root


def test_what_counts_as_a_run_directory(tmp_path: Path) -> None:
    configs = tmp_path / "configs"
    configs.mkdir()
    (configs / "config.yaml").write_text("version: 1\n")
    assert not is_run_dir(RunFS.open(str(configs)))  # a folder of configs is not a run
    (configs / "notes").mkdir()
    (configs / "notes" / "readme.txt").write_text("x")
    assert not is_run_dir(RunFS.open(str(configs)))
    assert is_run_dir(RunFS.open(str(_run_dir(tmp_path / "run"))))
    starting = tmp_path / "starting"  # a build that took the lease and has written nothing else yet
    starting.mkdir()
    (starting / LEASE_FILE).write_text("{}")
    assert is_run_dir(RunFS.open(str(starting)))


def test_local_paths_are_resolved_before_the_check(tmp_path: Path) -> None:
    run = _run_dir(tmp_path / "runs" / "X")
    os.symlink(run, tmp_path / "link")
    base = str(tmp_path)
    same = [f"{base}/runs/X/../X", f"{base}//runs/X", f"{base}/runs/X/.", f"file://{base}/runs/X", f"{base}/link"]
    for written in same:
        assert resolved(RunFS.open(written)).root == str(run), written
        with pytest.raises(InsideRunDir, match=f"is the run directory {run}; choose a folder outside"):
            refuse_release_target(RunFS.open(written), RunFS.open(str(run)))
    inside = [
        f"{base}/runs/X/release",
        f"{base}/runs/X/reports/rel",
        f"file://{base}/runs/X/rel2",
        f"{base}/runs/X/mine/candidates",
        f"{base}/link/rel",
    ]
    for written in inside:
        with pytest.raises(InsideRunDir, match=f"is inside the run directory {run};"):
            refuse_release_target(RunFS.open(written), RunFS.open(str(run)))
    with pytest.raises(InsideRunDir, match=f"holds the run directory {run};"):
        refuse_release_target(RunFS.open(f"{base}/runs/X/.."), RunFS.open(str(run)))
    other = _run_dir(tmp_path / "runs" / "Y")  # any run directory, not only the one exported
    with pytest.raises(InsideRunDir, match=f"is inside the run directory {other};"):
        refuse_release_target(RunFS.open(f"{other}/rel"), RunFS.open(str(run)))
    ok = refuse_release_target(RunFS.open(f"{base}/releases/./demo"), RunFS.open(f"{base}/link"))
    assert ok.root == f"{base}/releases/demo" and not (tmp_path / "releases").exists()  # checking creates nothing


def test_object_store_keys_are_folded_before_the_check() -> None:
    bucket = f"memory://rb-run-dirs-{uuid.uuid4().hex[:8]}"
    run = RunFS.open(f"{bucket}/runs/X")
    run.write_text_atomic("config.yaml", "version: 1\n")
    run.write_text_atomic("qa/_manifest.json", "{}")
    assert is_run_dir(run) and enclosing_run_dir(RunFS.open(f"{bucket}/runs/X/qa/questions")).root == run.root
    for written in (f"{bucket}/runs/X/../X", f"{bucket}/runs//X", f"{bucket}/runs/X/."):
        with pytest.raises(InsideRunDir, match="is the run directory"):
            refuse_release_target(RunFS.open(written), run)
    with pytest.raises(InsideRunDir, match="is inside the run directory"):
        refuse_release_target(RunFS.open(f"{bucket}/runs/X/../X/release"), run)
    assert (
        refuse_release_target(RunFS.open(f"{bucket}/runs/X/../rel"), run).root == RunFS.open(f"{bucket}/runs/rel").root
    )


def test_a_report_goes_below_its_own_runs_reports_or_outside_every_run(tmp_path: Path) -> None:
    run = RunFS.open(str(_run_dir(tmp_path / "runs" / "X")))
    other = _run_dir(tmp_path / "runs" / "Y")
    assert (
        refuse_report_target(RunFS.open(f"{run.root}/reports/../reports/b.html"), run, "reports").root
        == f"{run.root}/reports/b.html"
    )
    assert refuse_report_target(RunFS.open(f"{tmp_path}/out//b.html"), run, "reports").root == f"{tmp_path}/out/b.html"
    for bad, why in [
        (f"{run.root}/mine/candidates/part-00000.parquet", f"is inside the run directory {run.root};"),
        (f"{run.root}/reports/../config.yaml", f"is inside the run directory {run.root};"),
        (f"{other}/reports/b.html", f"is inside the run directory {other};"),
        (run.root, "is a folder"),
    ]:
        with pytest.raises(InsideRunDir, match=why):
            refuse_report_target(RunFS.open(bad), run, "reports")
