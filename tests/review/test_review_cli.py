"""``reactbench review`` subcommands: add-user, export, import-labelstudio, serve."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
from review_helpers import fill_queue, free_port, make_run
from typer.testing import CliRunner

from flows.cli_review import review_app
from tasks.review.accounts import authenticate
from tasks.review.queue import ReviewQueue

ROOT = Path(__file__).resolve().parents[2]


def test_add_user_export_and_import(tmp_path):
    run, _, _ = make_run(tmp_path / "run", 3)
    summary = fill_queue(run)
    runner = CliRunner()
    r = runner.invoke(review_app, ["add-user", "ann", "--role", "annotator", "--run-dir", str(tmp_path / "run")])
    assert r.exit_code == 0, r.output
    secret = r.output.strip().splitlines()[-1]
    q = ReviewQueue.open(summary.extra["queue_db"])
    assert authenticate(q.engine, secret).name == "ann"
    r = runner.invoke(review_app, ["add-user", "ann", "--run-dir", str(tmp_path / "run")])
    assert r.exit_code == 1 and "already exists" in r.output
    r = runner.invoke(review_app, ["add-user", "x", "--role", "root", "--run-dir", str(tmp_path / "run")])
    assert r.exit_code == 1 and "role" in r.output

    r = runner.invoke(
        review_app, ["export", "--run-dir", str(tmp_path / "run"), "--labelstudio", str(tmp_path / "ls.json")]
    )
    assert r.exit_code == 0, r.output
    assert "no review decisions yet" in r.output.replace("\n", " ")
    assert (tmp_path / "run" / "review" / "verified_edits" / "part-00000.parquet").exists()
    tasks = json.loads((tmp_path / "ls.json").read_text())
    assert len(tasks) == 3

    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    r = runner.invoke(review_app, ["import-labelstudio", str(bad), "--run-dir", str(tmp_path / "run")])
    assert r.exit_code == 1 and "bad.json" in r.output


def test_serve_starts_and_requires_login(tmp_path):
    run, _, _ = make_run(tmp_path / "run", 2)
    fill_queue(run)
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "flows.cli_review", "serve", "--run-dir", str(tmp_path / "run"), "--port", str(port)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.time() + 30
        while True:
            try:
                r = httpx.get(f"http://127.0.0.1:{port}/review/edit", follow_redirects=False)
                break
            except httpx.TransportError:
                if time.time() > deadline or proc.poll() is not None:
                    raise AssertionError(
                        f"server did not start: {proc.stdout.read().decode() if proc.poll() is not None else ''}"
                    ) from None
                time.sleep(0.2)
        assert r.status_code == 303 and r.headers["location"] == "/login"
        assert httpx.get(f"http://127.0.0.1:{port}/login").status_code == 200
    finally:
        proc.terminate()
        proc.wait(10)


def test_the_review_commands_size_their_pool_from_the_config(tmp_path):
    """``review.db_pool_size`` reaches the engine of every command that opens the queue (serve,
    export, add-user through ``open_queue``): pool and overflow, so a team can size PostgreSQL's
    ``max_connections`` for its processes."""
    from flows.cli_review import open_queue

    run, _, _ = make_run(tmp_path / "run", 2)
    fill_queue(run)
    (tmp_path / "run" / "config.yaml").write_text(json.dumps({"review": {"db_pool_size": 3}}))
    _run, queue = open_queue(str(tmp_path / "run"), None)
    try:
        assert (queue.engine.pool.size(), queue.engine.pool._max_overflow) == (3, 6)
    finally:
        queue.close()


def test_a_full_disk_while_the_queue_is_created_is_one_line_and_the_rerun_fills_it(tmp_path):
    """Issue 31.5: SQLite's "database or disk is full" while the review stage creates its queue was
    a raw ``sqlite3.OperationalError`` traceback. Produced for real: the run lives on a 4 MB tmpfs
    filled to the last few KB once its shards are written, its queue database removed (a deleted
    database is filled again by the next run). The command stops with the one-line ENOSPC message
    every other write gives (the database file, the space left, the resume command), keeps the
    lease file away, and after space is freed the rerun fills the whole queue."""
    import os

    import pytest

    from storage.run_lock import LEASE_FILE

    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)], capture_output=True, text=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"mounting a size-limited tmpfs needs root or CAP_SYS_ADMIN: {mounted.stderr.strip()}")
    cli = [
        str(Path(sys.executable).with_name("reactbench")),
        "review",
        "--run-dir",
        str(disk / "run"),
        "--orchestrator",
        "local",
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    try:
        make_run(disk / "run", 6)
        first = subprocess.run(cli, capture_output=True, text=True, env=env, timeout=120)
        assert first.returncode == 0, first.stderr[-3000:]
        db = disk / "run" / "review" / "queue.sqlite"
        full_items = len(ReviewQueue.open(f"sqlite:///{db}").items())
        assert full_items == 12
        for f in db.parent.glob("queue.sqlite*"):
            f.unlink()
        st = os.statvfs(disk)
        (disk / "filler").write_bytes(
            b"\0" * (st.f_bavail * st.f_frsize - 8192)
        )  # two pages left: the schema does not fit

        proc = subprocess.run(cli, capture_output=True, text=True, env=env, timeout=120)
        said = [ln for ln in proc.stderr.splitlines() if "no space left on device" in ln]
        assert proc.returncode == 1 and "Traceback" not in proc.stderr and "OperationalError" not in proc.stderr, (
            proc.stderr[-3000:]
        )
        assert len(said) == 1, proc.stderr[-3000:]
        assert (
            f"writing {db}" in said[0]
            and "free there" in said[0]
            and f"resume with `reactbench review --run-dir {disk / 'run'}" in said[0]
        ), said[0]
        assert not (disk / "run" / LEASE_FILE).exists()

        (disk / "filler").unlink()
        resumed = subprocess.run(cli, capture_output=True, text=True, env=env, timeout=120)
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        assert len(ReviewQueue.open(f"sqlite:///{db}").items()) == full_items
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)


def test_reimporting_a_quick_labelstudio_export_adds_no_user_and_keeps_one_identity(filled_run, tmp_path):
    """Issue 31: a snapshot export names annotators by id and email, the quick JSON export by id
    alone. Importing the quick export of annotations already imported from a snapshot created a
    ``labelstudio:<id>`` user per annotator holding no decision, and a changed annotation then
    arrived as a second identity of the same person. Now nothing is created, and the id reaches
    the user its snapshot named; an annotation refused (an item not in the queue) creates no user."""
    run, url, _, _ = filled_run
    run_dir = run.path()
    runner = CliRunner()
    r = runner.invoke(
        review_app, ["export", "--run-dir", run_dir, "--labelstudio", str(tmp_path / "ls" / "tasks.json")]
    )
    assert r.exit_code == 0, r.output
    tasks = json.loads((tmp_path / "ls" / "tasks.json").read_text())
    accept = [{"from_name": "verdict", "value": {"choices": ["accept"]}}]
    reject = [
        {"from_name": "verdict", "value": {"choices": ["reject"]}},
        {"from_name": "reasons", "value": {"choices": ["artifacts"]}},
    ]

    def export(who: object, results: list[list[dict]], path: str) -> str:
        anns = [{"id": 100 + i, "completed_by": who, "result": res} for i, res in enumerate(results)]
        (tmp_path / path).write_text(
            json.dumps([{"id": i, "data": tasks[i]["data"], "annotations": [a]} for i, a in enumerate(anns)])
        )
        r = runner.invoke(review_app, ["import-labelstudio", str(tmp_path / path), "--run-dir", run_dir])
        assert r.exit_code == 0, r.output
        return " ".join(r.output.split())

    q = ReviewQueue.open(url)
    assert "Imported 3 decisions (0 imported before, 0 skipped)" in export(
        {"id": 5, "email": "ann@lab.org", "first_name": "Ann"}, [accept] * 3, "snapshot.json"
    )
    users = {u.name for u in q.users().values()}
    assert users == {"labelstudio:ann@lab.org"}
    events = len(q.events())

    assert "Imported 0 decisions (3 imported before, 0 skipped)" in export(5, [accept] * 3, "quick.json")
    assert {u.name for u in q.users().values()} == users and len(q.events()) == events  # no empty labelstudio:5 user

    assert "Imported 2 decisions (2 imported before, 0 skipped)" in export(
        5, [reject, accept, accept, accept], "quick2.json"
    )
    mine = {
        e.item_id: e.verdict
        for e in q.events(kinds=("decision",))
        if q.users()[e.annotator_id].name == "labelstudio:ann@lab.org"
    }
    assert (
        mine[tasks[0]["data"]["item_id"]] == "reject" and tasks[3]["data"]["item_id"] in mine
    )  # the same person, one user
    assert {u.name for u in q.users().values()} == users

    (tmp_path / "stale.json").write_text(
        json.dumps(
            [
                {
                    "id": 9,
                    "data": {**tasks[0]["data"], "item_id": "no-such-item"},
                    "annotations": [{"id": 900, "completed_by": 77, "result": accept}],
                }
            ]
        )
    )
    r = runner.invoke(review_app, ["import-labelstudio", str(tmp_path / "stale.json"), "--run-dir", run_dir])
    assert r.exit_code == 0 and "no review item 'no-such-item'" in r.output, r.output
    assert {u.name for u in q.users().values()} == users  # a refused annotation creates no account
