"""Many builds, many workers (issue 24.4): a Prefect server on PostgreSQL, one process work pool
with two workers (each its own PREFECT_HOME, working folder and work queue), builds deployed from
prefect.yaml running at once, each to its own S3 run directory; a second build of a run
directory that a build on the other worker is writing fails on the run lease, naming the holder.

So that the first build is certainly still writing when the second one reaches the lease (a
flow run takes 30-60 s to start on a loaded machine, longer than the first build needs), the
first build's process (the pid its lease names) is slowed down while the second one starts: kept
stopped (SIGSTOP) but continued for 2 s every 15 s, so its heartbeat stays younger than the
lease's ttl. It is a slow holder, not a dead one, and it finishes normally afterwards."""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from orch_support import REPO, PrefectServer, free_port, prefect_cli, start_worker, stop_process, wait_for_flow_run

from storage.fs import RunFS
from storage.run_lock import LEASE_FILE

pytestmark = pytest.mark.slow

POOL = "reactbench-gpu"  # the pool of prefect.yaml's `build` deployment
STAGES = ["mine", "instruct", "edit"]
RUN_TIMEOUT_S = 420.0


@pytest.fixture(scope="module")
def pg_prefect(postgres_url: str) -> Iterator[PrefectServer]:
    """A Prefect server whose database is a fresh PostgreSQL database (asyncpg driver)."""
    import psycopg

    name = f"prefect_{free_port()}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    home = Path(tempfile.mkdtemp(prefix="rb-pgprefect-"))
    server = PrefectServer(
        home,
        free_port(),
        database_url=postgres_url.replace("postgresql://", "postgresql+asyncpg://").rsplit("/", 1)[0] + f"/{name}",
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(home, ignore_errors=True)


def _trigger(server: PrefectServer, deployment_id: str, queue: str, params: dict[str, Any]) -> str:
    """A flow run of the deployment on one work queue of the pool (so the test picks the worker)."""
    return server.post(
        f"/deployments/{deployment_id}/create_flow_run", {"parameters": params, "work_queue_name": queue}
    )["id"]


def _lease_pid(url: str, run_id: str, server: PrefectServer, timeout_s: float) -> int:
    """The pid named by the lease of the run directory at ``url``, once the flow run has taken it."""
    deadline = time.monotonic() + timeout_s
    while not RunFS.open(url).exists(LEASE_FILE):
        state = wait_for_flow_run(server, run_id, 0)["state_type"]
        assert state not in ("COMPLETED", "FAILED", "CRASHED") and time.monotonic() < deadline, (
            f"no lease in {url} (run {state})"
        )
        time.sleep(0.5)
    return int(json.loads(RunFS.open(url).read_text(LEASE_FILE))["pid"])


def _while_crawling(pid: int, step: Any) -> dict[str, Any]:
    """Call ``step`` (a bounded wait for a flow run) until the run ends, process ``pid`` stopped
    meanwhile except 2 s after each step (its heartbeat thread then refreshes the lease)."""
    deadline = time.monotonic() + RUN_TIMEOUT_S
    os.kill(pid, signal.SIGSTOP)
    try:
        run = step()
        while run["state_type"] not in ("COMPLETED", "FAILED", "CRASHED", "CANCELLED") and time.monotonic() < deadline:
            os.kill(pid, signal.SIGCONT)
            time.sleep(2)
            os.kill(pid, signal.SIGSTOP)
            run = step()
        return run
    finally:
        os.kill(pid, signal.SIGCONT)


def test_two_workers_serve_builds_at_once_and_the_lease_refuses_a_second_writer(
    pg_prefect: PrefectServer, postgres_url: str, sample_config: Path, s3_server: Any, tmp_path: Path
) -> None:
    prefect_cli(pg_prefect, "work-pool", "create", POOL, "--type", "process")  # with the process worker's job template
    for queue in ("q1", "q2"):
        pg_prefect.post(f"/work_pools/{POOL}/queues", {"name": queue})
    prefect_cli(
        pg_prefect,
        "deploy",
        "--prefect-file",
        str(REPO / "prefect.yaml"),
        "--name",
        "build",
        REACTBENCH_HOME=str(REPO),
    )
    (deployment,) = pg_prefect.post("/deployments/filter", {"deployments": {"name": {"any_": ["build"]}}})

    workers = {
        queue: start_worker(
            pg_prefect,
            POOL,
            tmp_path / f"worker-{queue}",
            "--work-queue",
            queue,
            "--limit",
            "2",
            "--name",
            f"worker-{queue}",
            PREFECT_HOME=str(tmp_path / f"worker-{queue}" / "home"),
        )
        for queue in ("q1", "q2")
    }
    bucket = s3_server.bucket()
    a_dir, b_dir = f"s3://{bucket}/a", f"s3://{bucket}/b"
    params = {"config": str(sample_config), "stages": STAGES}
    try:
        a = _trigger(pg_prefect, deployment["id"], "q1", {**params, "run_dir": a_dir})
        b = _trigger(pg_prefect, deployment["id"], "q2", {**params, "run_dir": b_dir})
        holder = _lease_pid(a_dir, a, pg_prefect, RUN_TIMEOUT_S)
        second = _trigger(pg_prefect, deployment["id"], "q2", {**params, "run_dir": a_dir})
        refused = _while_crawling(holder, lambda: wait_for_flow_run(pg_prefect, second, 15))
        runs = {
            "second": refused,
            **{name: wait_for_flow_run(pg_prefect, rid, RUN_TIMEOUT_S) for name, rid in (("a", a), ("b", b))},
        }
    finally:
        for worker in workers.values():
            stop_process(worker)
    logs = {q: (tmp_path / f"worker-{q}" / "worker.log").read_text() for q in workers}
    states = {name: run["state_type"] for name, run in runs.items()}
    assert states == {"a": "COMPLETED", "b": "COMPLETED", "second": "FAILED"}, (
        f"{states}\n{logs['q1'][-3000:]}\n{logs['q2'][-3000:]}"
    )

    # The second build of a/ was refused by the lease, naming the build that held it.
    message = runs["second"]["state"]["message"] or ""
    assert "is being written by" in message and "prefect flow reactbench-build" in message, message
    assert runs["second"]["end_time"] < runs["a"]["end_time"], "refused while the first build was writing"

    # Each worker ran its queue's builds, the two builds overlapped, each finished its own run directory.
    assert a in logs["q1"] and b in logs["q2"] and second in logs["q2"] and a not in logs["q2"] and b not in logs["q1"]
    assert runs["a"]["start_time"] < runs["b"]["end_time"] and runs["b"]["start_time"] < runs["a"]["end_time"], (
        "the builds ran at once"
    )
    for url in (a_dir, b_dir):
        run = RunFS.open(url)
        assert not run.exists(LEASE_FILE), f"{url}: the lease was released"
        for stage in STAGES:
            assert '"status": "complete"' in run.read_text(stage, "_manifest.json"), (url, stage)

    # The server kept every run in PostgreSQL, with no SQLite lock in its log.
    import psycopg

    name = pg_prefect.database_url.rsplit("/", 1)[1]
    with psycopg.connect(postgres_url.rsplit("/", 1)[0] + f"/{name}") as conn:
        ids = {str(r[0]) for r in conn.execute("SELECT id FROM flow_run")}
    assert {a, b, second} <= ids
    assert "database is locked" not in pg_prefect.log.read_text()
