"""Fixtures of the review tests: run directories with a filled queue, a real PostgreSQL server
(Debian package, started in a temp dir), and a headless Debian Chromium for Playwright."""

from __future__ import annotations

import glob
import os
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Iterator

import pytest

from review_helpers import fill_queue, free_port, make_run
from short_paths import socket_safe_tmpdir

# The session-wide `chromium` fixture is in tests/conftest.py (one Playwright per process).


class Clock:
    """A settable clock so lease expiry is tested without sleeping."""

    def __init__(self, t: float = 1_800_000_000.0):
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def filled_run(tmp_path: Path):
    """A run with 6 queued edits (2 tasks x 2 editors) and their questions."""
    run, edits, questions = make_run(tmp_path / "run", 6)
    summary = fill_queue(run)
    return run, summary.extra["queue_db"], edits, questions


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A throwaway PostgreSQL server on 127.0.0.1 (initdb + pg_ctl from the Debian package)."""
    bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not bins:
        pytest.fail("PostgreSQL is not installed: run `sh scripts/system-deps.sh` (Debian package postgresql)")
    bindir = Path(bins[-1]).parent
    root = socket_safe_tmpdir("rb-pg-")  # the server's unix socket lives here too
    data = root / "data"
    as_root = os.geteuid() == 0
    prefix: list[str] = []
    if as_root:  # initdb refuses to run as root: run the server as the package's postgres user
        shutil.chown(root, "postgres", "postgres")
        os.chmod(root, 0o700)
        prefix = ["runuser", "-u", "postgres", "--"]
    port = free_port()
    subprocess.run([*prefix, str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "rb", "-E", "UTF8", "--no-sync"], check=True, capture_output=True)
    opts = f"-p {port} -k {shlex.quote(str(root))} -c listen_addresses=127.0.0.1 -F -c max_connections=100"  # pg_ctl runs it through sh
    subprocess.run([*prefix, str(bindir / "pg_ctl"), "-D", str(data), "-o", opts, "-l", str(root / "log"), "-w", "-t", "30", "start"], check=True, capture_output=True)
    try:
        yield f"postgresql://rb@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*prefix, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"], capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def shots_dir(artifacts_dir: Path) -> Path:
    out = artifacts_dir / "review"
    out.mkdir(parents=True, exist_ok=True)
    return out
