"""A throwaway PostgreSQL server (initdb + pg_ctl from the Debian package) on 127.0.0.1, for
the review tests and ``benchmarks/review_load.py --db postgresql``."""

from __future__ import annotations

import glob
import os
import shlex
import shutil
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/short_paths.py, also from benchmarks/
from short_paths import socket_safe_tmpdir  # noqa: E402

MISSING = "PostgreSQL is not installed: run `sh scripts/system-deps.sh` (Debian package postgresql)"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def throwaway_postgres(max_connections: int = 100) -> Iterator[str]:
    """Start a fresh cluster in a temp folder, yield its URL, stop and delete it."""
    bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not bins:
        raise RuntimeError(MISSING)
    bindir = Path(bins[-1]).parent
    root = socket_safe_tmpdir("rb-pg-")  # the server's unix socket lives here too
    data = root / "data"
    prefix: list[str] = []
    if os.geteuid() == 0:  # initdb refuses to run as root: run the server as the package's postgres user
        shutil.chown(root, "postgres", "postgres")
        os.chmod(root, 0o700)
        prefix = ["runuser", "-u", "postgres", "--"]
    port = _free_port()
    subprocess.run(
        [*prefix, str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "rb", "-E", "UTF8", "--no-sync"],
        check=True,
        capture_output=True,
    )
    opts = f"-p {port} -k {shlex.quote(str(root))} -c listen_addresses=127.0.0.1 -F -c max_connections={max_connections}"  # pg_ctl runs it through sh
    subprocess.run(
        [
            *prefix,
            str(bindir / "pg_ctl"),
            "-D",
            str(data),
            "-o",
            opts,
            "-l",
            str(root / "log"),
            "-w",
            "-t",
            "30",
            "start",
        ],
        check=True,
        capture_output=True,
    )
    try:
        yield f"postgresql://rb@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            [*prefix, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"], capture_output=True
        )
        shutil.rmtree(root, ignore_errors=True)


def fresh_database(base_url: str) -> str:
    """A new, empty database on the server of ``base_url``; returns its URL."""
    import psycopg

    name = "rb_" + uuid.uuid4().hex[:10]
    with psycopg.connect(base_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return base_url.rsplit("/", 1)[0] + "/" + name
