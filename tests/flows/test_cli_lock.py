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
    ["build"],
    ["mine"],
    ["instruct"],
    ["edit"],
    ["qa"],
    ["review"],
    ["review", "export"],
    ["review", "import-labelstudio", "tasks.json"],
    ["eval", "--model", "rules:rules-v1", "--unverified"],
    # issue 24.5: export writes <run>/export/rejects, report <run>/reports/, prune deletes from the store
    ["export", "--out", "{tmp}/release"],
    ["report", "build"],
    ["reuse", "prune", "--keep-days", "0"],
]
GROUPS = ("review", "reuse")


def test_every_writer_is_listed_here():
    listed = {
        (c[0], c[1]) if c[0] in GROUPS and len(c) > 1 else ((c[0], None) if c[0] in GROUPS else ("", c[0]))
        for c in WRITING
    }
    assert listed == WRITERS


@pytest.mark.parametrize("argv", WRITING, ids=lambda a: " ".join(a[:2]))
def test_writer_refused_while_the_run_is_locked(tmp_path: Path, argv: list[str]):
    run_dir = tmp_path / "run"
    with RunLock(RunFS.open(str(run_dir)), "reactbench build"):
        res = CliRunner().invoke(app, [*[a.replace("{tmp}", str(tmp_path)) for a in argv], "--run-dir", str(run_dir)])
        assert (run_dir / LEASE_FILE).exists()
    assert res.exit_code == LOCKED_EXIT, res.output
    assert (
        not (tmp_path / "release").exists()
        and not (run_dir / "reports").exists()
        and not (run_dir / "export").exists()
    )
    assert "`reactbench build`" in res.output and f"pid {os.getpid()}" in res.output


def test_eval_out_folder_is_leased_by_the_same_wrapper(tmp_path: Path):
    """``eval --out``: the folder that receives the answers is leased as a run is (``WRITES_OUT``):
    a second evaluation into it is refused (exit 3, holder named), the run's own lease given back."""
    run_dir, out = tmp_path / "run", tmp_path / "results"
    run_dir.mkdir()
    with RunLock(RunFS.open(str(out)), "reactbench eval"):
        res = CliRunner().invoke(
            app, ["eval", "--model", "rules:rules-v1", "--run-dir", str(run_dir), "--out", str(out)]
        )
    assert res.exit_code == LOCKED_EXIT, res.output
    assert "`reactbench eval`" in res.output and f"pid {os.getpid()}" in res.output and str(out) in res.output
    assert not (run_dir / LEASE_FILE).exists() and not (out / "eval").exists()


@pytest.mark.parametrize("argv", [["status"], ["reuse", "stats"]], ids=lambda a: " ".join(a))
def test_readers_need_no_lock(tmp_path: Path, argv: list[str]):
    run_dir = tmp_path / "run"
    with RunLock(RunFS.open(str(run_dir)), "reactbench build"):
        res = CliRunner().invoke(app, [*argv, "--run-dir", str(run_dir)])
    assert res.exit_code != LOCKED_EXIT and "is being written by" not in res.output, res.output


@pytest.mark.parametrize(
    "argv, refused",
    [
        (["build", "--run-dir", "{run}"], True),
        (["edit", "-r", "{run}", "--force"], True),
        (["qa", "--run-dir={run}"], True),
        (
            ["mine", "--config", "x.yaml", "--run-dir", "elsewhere", "--run-dir", "{run}"],
            True,
        ),  # the last one wins, as in Typer
        (["build", "--run-dir", "{run}", "--help"], False),  # help is always shown
        (["status", "--run-dir", "{run}"], False),  # a reader
        (["review", "export", "--run-dir", "{run}"], False),  # groups: the full CLI checks them
        (["build", "--run-dir", "{run}-other"], False),
        ([], False),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else str(v),
)
def test_early_refusal_reads_the_writer_and_its_run_dir(tmp_path: Path, argv: list[str], refused: bool):
    from flows.cli_lock import early_refusal

    run_dir = tmp_path / "run"
    with RunLock(RunFS.open(str(run_dir)), "reactbench build"):
        message = early_refusal([a.replace("{run}", str(run_dir)) for a in argv])
    assert (message is not None) is refused
    if refused:
        assert "`reactbench build`" in message and f"pid {os.getpid()}" in message


def test_the_executable_refuses_before_importing_the_cli(tmp_path: Path):
    """A refused writer exits 3 naming the holder without loading Typer, pydantic or numpy: the
    refusal costs the interpreter's start-up, not the CLI's (which is seconds on a busy node)."""
    import subprocess
    import sys

    run_dir = tmp_path / "run"
    code = (
        "import sys\n"
        f"sys.argv = ['reactbench', 'build', '--run-dir', {str(run_dir)!r}]\n"
        "from flows.entry import main\n"
        "try:\n    main()\n"
        "except SystemExit as exc:\n"
        "    heavy = sorted(m for m in ('typer', 'pydantic', 'numpy', 'fsspec', 'flows.cli', 'flows.config') if m in sys.modules)\n"
        "    print(exc.code, heavy)\n"
    )
    root = Path(__file__).resolve().parents[2]
    with RunLock(RunFS.open(str(run_dir)), "reactbench build"):
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, timeout=60)
    assert proc.stdout.strip() == f"{LOCKED_EXIT} []", proc.stdout + proc.stderr
    assert "`reactbench build`" in proc.stderr and f"pid {os.getpid()}" in proc.stderr


def test_run_dir_urls_reach_commands_unchanged():
    """--run-dir is a string: a Path would fold ``memory://bucket/run`` into ``memory:/bucket/run``."""
    res = CliRunner().invoke(app, ["status", "--run-dir", "memory://rb-cli-url/absent"])
    assert "memory://rb-cli-url/absent" in res.output and "memory:/rb" not in res.output.replace("memory://rb", ""), (
        res.output
    )


_TWO_SIGNALS = """
import os, signal, sys
from flows.cli_lock import locked
from flows.cli_signals import Interrupted

def command(run_dir: str) -> None:
    try:
        os.kill(os.getpid(), signal.SIGTERM)  # the first stop: Interrupted in this thread
    except Interrupted:
        pass  # shards still finishing: the lease is still held when the second stop lands
    assert os.path.exists(os.path.join(run_dir, sys.argv[2]))
    os.kill(os.getpid(), signal.SIGTERM)
    sys.exit("not reached: the second SIGTERM exits at once")

locked("build", command)(run_dir=sys.argv[1])
"""


def test_a_second_stop_signal_removes_the_lease_it_abandons(tmp_path: Path) -> None:
    """The second SIGTERM exits at once (143) without waiting for the lease's release, yet the
    lease file goes with it. It used to stay whenever the release had not finished by then: the
    handler looked for an attribute the lock does not have (the e2e signal test failed 1 in 4)."""
    import subprocess
    import sys

    run_dir = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-c", _TWO_SIGNALS, str(run_dir), LEASE_FILE],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert proc.returncode == 143, proc.stderr
    assert "SIGTERM again: abandoning the running shards" in proc.stderr
    assert run_dir.is_dir() and not (run_dir / LEASE_FILE).exists()
