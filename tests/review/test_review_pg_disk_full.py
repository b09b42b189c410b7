"""A full disk under a PostgreSQL review queue (issue 42.10): one line from the CLI, a 507 with one
line from the review app, never a traceback.

Produced for real: the queue's database lives in a tablespace on a small tmpfs (the cluster's own
files and its WAL stay on the big disk, as a team's server keeps them apart), filled to the last
byte once its accounts are written. PostgreSQL then refuses any write that needs a new page with
SQLSTATE 53100 ("could not extend file ...: No space left on device"). Before, that was a psycopg
``DiskFull`` traceback from the CLI and a bare 500 with a traceback in the server's log.
"""

from __future__ import annotations

import logging
import os
import pwd
import re
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from tasks.review.accounts import add_user
from tasks.review.app import create_app
from tasks.review.queue import ReviewQueue

CLI = str(Path(sys.executable).with_name("reactbench"))


def _csrf(html: str) -> str:
    return re.search(r'name="csrf_token" value="([^"]+)"', html).group(1)


def test_a_full_postgres_disk_is_one_line_in_the_cli_and_a_507_in_the_app(
    postgres_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import psycopg

    if os.geteuid() != 0:
        pytest.skip("mounting a size-limited tmpfs for the tablespace needs root")
    pg = pwd.getpwnam("postgres")
    disk = Path(tempfile.mkdtemp(prefix="rb-pgdisk-"))  # not below pytest's root-only folders: the server enters it
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size=32m,uid={pg.pw_uid},gid={pg.pw_gid},mode=700", "tmpfs", str(disk)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"mounting a size-limited tmpfs needs CAP_SYS_ADMIN: {mounted.stderr.strip()}")
    name = f"rbfull_{uuid.uuid4().hex[:8]}"
    base = postgres_url.rsplit("/", 1)[0]
    admin = psycopg.connect(postgres_url, autocommit=True)
    queue = None
    try:
        admin.execute(f"CREATE TABLESPACE {name} LOCATION '{disk}'")
        admin.execute(f"CREATE DATABASE {name}_app TABLESPACE {name}")
        admin.execute(f"CREATE DATABASE {name}_cli TABLESPACE {name}")
        queue = ReviewQueue.open(f"{base}/{name}_app")  # the schema and one account, then the disk fills
        secret = add_user(queue.engine, "ann", "annotator")
        st = os.statvfs(disk)
        with open(disk / "filler", "wb") as f:
            try:
                f.write(b"\0" * (st.f_bavail * st.f_frsize))
            except OSError:  # full before the last byte: what the test wants
                pass

        run = tmp_path / "run"
        run.mkdir()
        proc = subprocess.run(
            [CLI, "review", "add-user", "bob", "--run-dir", str(run), "--db", f"{base}/{name}_cli"],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        )
        said = [ln for ln in proc.stderr.splitlines() if "no space left on device" in ln]
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
        assert len(said) == 1 and "the PostgreSQL database postgresql+psycopg://rb@" in said[0], proc.stderr[-3000:]
        assert f"/{name}_cli (the server said: " in said[0], said[0]  # its first connection cannot write its cache

        caplog.set_level(logging.INFO)
        client = TestClient(create_app(str(run), queue), raise_server_exceptions=True)
        r = client.post(
            "/login", data={"secret": secret, "csrf_token": _csrf(client.get("/login").text)}, follow_redirects=False
        )  # a new login session is a row in an empty table: it needs a page
        assert r.status_code == 507, (r.status_code, r.text[:2000])
        assert "no space left on device writing the PostgreSQL database" in r.text and "nothing was saved" in r.text
        logged = [rec for rec in caplog.records if "no space left on device" in rec.getMessage()]
        assert len(logged) == 1 and logged[0].exc_info is None and "\n" not in logged[0].getMessage()
    finally:
        if queue is not None:
            queue.engine.dispose()
        (disk / "filler").unlink(missing_ok=True)
        admin.execute(f"DROP DATABASE IF EXISTS {name}_app WITH (FORCE)")
        admin.execute(f"DROP DATABASE IF EXISTS {name}_cli WITH (FORCE)")
        admin.execute(f"DROP TABLESPACE IF EXISTS {name}")
        admin.close()
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)
        disk.rmdir()
