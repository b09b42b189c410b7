"""Which CLI commands take the run directory's lock: every writer is refused while another
process holds it (exit 3, holder named); readers run regardless."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flows.cli import app
from flows.cli_lock import LOCKED_EXIT, WRITERS
from storage.fs import RunFS
from storage.run_lock import LEASE_FILE, RunLock

WRITING = [
    ["build"], ["mine"], ["instruct"], ["edit"], ["qa"], ["review"],
    ["review", "export"], ["review", "import-labelstudio", "tasks.json"],
    ["eval", "--model", "rules:rules-v1", "--unverified"],
]


def test_every_writer_is_listed_here():
    listed = {(c[0], c[1]) if c[0] == "review" and len(c) > 1 else (("review", None) if c == ["review"] else ("", c[0])) for c in WRITING}
    assert listed == WRITERS


@pytest.mark.parametrize("argv", WRITING, ids=lambda a: " ".join(a[:2]))
def test_writer_refused_while_the_run_is_locked(tmp_path: Path, argv: list[str]):
    run_dir = tmp_path / "run"
    with RunLock(RunFS.open(str(run_dir)), "reactbench build"):
        res = CliRunner().invoke(app, [*argv, "--run-dir", str(run_dir)])
        assert (run_dir / LEASE_FILE).exists()
    assert res.exit_code == LOCKED_EXIT, res.output
    assert "`reactbench build`" in res.output and f"pid {os.getpid()}" in res.output


@pytest.mark.parametrize("argv", [["status"], ["report", "build"]], ids=lambda a: " ".join(a))
def test_readers_need_no_lock(tmp_path: Path, argv: list[str]):
    run_dir = tmp_path / "run"
    with RunLock(RunFS.open(str(run_dir)), "reactbench build"):
        res = CliRunner().invoke(app, [*argv, "--run-dir", str(run_dir)])
    assert res.exit_code != LOCKED_EXIT and "is being written by" not in res.output, res.output
