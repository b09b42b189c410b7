"""``reactbench review`` subcommands: add-user, export, import-labelstudio, serve."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
from typer.testing import CliRunner

from flows.cli_review import review_app
from review_helpers import fill_queue, free_port, make_run
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

    r = runner.invoke(review_app, ["export", "--run-dir", str(tmp_path / "run"), "--labelstudio", str(tmp_path / "ls.json")])
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
                    raise AssertionError(f"server did not start: {proc.stdout.read().decode() if proc.poll() is not None else ''}")
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
