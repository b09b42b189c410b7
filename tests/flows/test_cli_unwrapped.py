"""Errors and suggested commands are never hard-wrapped: a user (or a log reader) copies the
suggested command back and it runs, whatever the terminal width or the path length."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

CLI = str(Path(sys.executable).with_name("reactbench"))


def _run(args: list[str], cwd: Path, columns: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env["COLUMNS"] = columns
    return subprocess.run(args, capture_output=True, text=True, env=env, timeout=300, cwd=cwd)


def test_suggested_command_survives_a_long_path_and_narrow_columns(tmp_path: Path, sample_dir: Path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "sample").symlink_to(sample_dir, target_is_directory=True)
    # long enough to wrap anywhere, and with what a shell would split or expand unless quoted
    run_dir = tmp_path.joinpath(*[f"a-rather-long-folder-name-{i:02d}" for i in range(8)], "my run (v2) $HOME")
    assert len(str(run_dir)) > 240
    run_dir.mkdir(parents=True)  # a run directory that does not exist is refused before any stage hint
    proc = _run([CLI, "instruct", "--run-dir", str(run_dir), "--orchestrator", "local"], tmp_path, "30")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if "`reactbench mine" in ln]
    assert lines, proc.stderr
    suggested = re.search(r"`(reactbench mine [^`]*)`", lines[0])
    assert suggested, f"the suggested command is broken across lines:\n{proc.stderr}"
    argv = shlex.split(suggested.group(1))
    assert argv[argv.index("--run-dir") + 1] == str(run_dir)
    again = _run([CLI, *argv[1:], "--orchestrator", "local"], tmp_path, "30")
    assert again.returncode == 0, again.stderr[-2000:]
    assert (run_dir / "mine" / "_manifest.json").exists()


def test_lock_refusal_names_the_holder_on_one_line(tmp_path: Path):
    from storage.fs import RunFS
    from storage.run_lock import RunLock

    run_dir = tmp_path.joinpath(*[f"another-long-folder-name-{i:02d}" for i in range(6)], "run")
    with RunLock(RunFS.open(str(run_dir)), "reactbench build"):
        proc = _run([CLI, "edit", "--run-dir", str(run_dir), "--orchestrator", "local"], tmp_path, "30")
    assert proc.returncode == 3
    lines = [ln for ln in proc.stderr.splitlines() if "is being written by" in ln]
    assert lines and str(run_dir) in lines[0] and f"pid {os.getpid()}" in lines[0], proc.stderr


def test_usage_errors_are_whole_lines_at_any_width(tmp_path: Path):
    """Typer would draw a usage error in a terminal-wide panel, breaking the option's name."""
    bogus = "--an-option-name-that-does-not-exist-anywhere"
    proc = _run([CLI, "build", bogus, "--run-dir", str(tmp_path / "run")], tmp_path, "30")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert f"Error: No such option: {bogus}" in lines, proc.stderr
    assert "Try 'reactbench build --help' for help." in lines and lines[0].startswith("Usage: reactbench build")
    missing = _run([CLI, "eval", "--run-dir", str(tmp_path / "run")], tmp_path, "30")
    assert missing.returncode == 2 and "Error: Missing option '--model' / '-m'." in missing.stderr.splitlines(), (
        missing.stderr
    )
    bare = _run([CLI], tmp_path, "30")  # no command: the help, as Typer prints it, and click's exit status
    assert bare.returncode == 2 and "Usage:" in bare.stdout + bare.stderr and "Error:" not in bare.stderr


def test_a_broken_saved_config_is_one_message_for_any_command(tmp_path: Path):
    """Commands that read the run's config.yaml without catching config errors themselves
    (here `reuse stats`) report it as the build does: the file named, exit 2, no traceback."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "config.yaml").write_text("run:\n  seed: [unclosed\n")
    proc = _run([CLI, "reuse", "stats", "--run-dir", str(run_dir)], tmp_path, "30")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"{run_dir}/config.yaml: not valid YAML" in proc.stderr
