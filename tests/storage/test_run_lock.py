"""The run-directory lease: one writer, the holder named, stale leases taken over, on local
folders (flock + lease file) and object stores (conditional writes on the lease file, on
``memory://`` and on a real S3 API server: moto, tests/s3_server.py)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from lock_holder import held_by_another_process

from storage.fs import RunFS
from storage.run_lock import (
    LEASE_FILE,
    Lease,
    NestedLock,
    RunLock,
    RunLocked,
    hold_run,
    local_holder,
    read_lease,
    stale_reason,
)


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_second_writer_is_refused_naming_the_holder(tmp_path: Path):
    run = RunFS.open(str(tmp_path / "run"))
    with RunLock(run, "reactbench build") as first:
        with pytest.raises(RunLocked) as err:
            RunLock(run, "reactbench edit").acquire()
        msg = str(err.value)
        assert "`reactbench build`" in msg and f"pid {os.getpid()}" in msg and socket.gethostname() in msg
        assert read_lease(run).token == first.lease.token
    assert not run.exists(LEASE_FILE)  # released: the next writer starts clean
    with RunLock(run, "reactbench edit") as again:
        assert again.took_over is None


def test_lock_held_by_another_process_is_refused_and_released_when_it_dies(tmp_path: Path):
    root = tmp_path / "run"
    with held_by_another_process(root) as proc:
        started = time.perf_counter()
        with pytest.raises(RunLocked, match=f"pid {proc.pid}"):
            RunLock(RunFS.open(str(root)), "reactbench qa").acquire()
        assert time.perf_counter() - started < 1.0
    messages: list[str] = []
    with RunLock(RunFS.open(str(root)), "reactbench qa", on_message=messages.append) as lock:
        assert lock.took_over is not None and lock.took_over.pid == proc.pid
    assert (
        len(messages) == 1
        and "Taking over the stale lock" in messages[0]
        and f"pid {proc.pid}" in messages[0]
        and "gone" in messages[0]
    )


def test_local_holder_names_a_live_holder_only(tmp_path: Path):
    """The CLI's early refusal: a live holder is named; a free, missing or stale lease is not."""
    root = tmp_path / "run"
    assert local_holder(str(root)) is None  # no run directory yet
    with held_by_another_process(root) as proc:
        holder = local_holder(str(root))
        assert holder is not None and holder.pid == proc.pid and holder.owner == "reactbench build"
        assert local_holder(f"file://{root}") == holder
    assert (root / LEASE_FILE).exists() and local_holder(str(root)) is None  # left by a killed holder: stale
    assert local_holder("memory://rb-lock/run") is None  # fsspec URLs: the full CLI checks them


def test_a_probe_holding_the_flock_over_a_stale_lease_does_not_refuse_a_writer(tmp_path: Path):
    """local_holder's shared flock is momentary; a writer that meets it over a dead holder's
    lease waits for it instead of naming the dead process as a live writer."""
    import fcntl
    import threading

    run = RunFS.open(str(tmp_path / "run"))
    now = time.time()
    dead = Lease("reactbench build", socket.gethostname(), _dead_pid(), "d" * 32, now, now, 60.0)
    run.write_bytes_atomic(LEASE_FILE, dead.to_json())
    fd = os.open(run.path(LEASE_FILE), os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)  # a writer taking the stale lease over, before it rewrites the file
    assert local_holder(str(tmp_path / "run")) is None, "a dead process's lease names no live holder, flock or not"
    fcntl.flock(fd, fcntl.LOCK_SH)  # now the probe's moment, stretched
    threading.Timer(0.2, lambda: os.close(fd)).start()
    with RunLock(run, "reactbench mine", on_message=lambda m: None) as lock:
        assert lock.took_over == dead


def test_a_process_holding_the_lease_gets_a_nested_handle(tmp_path: Path):
    """``reactbench build`` holds the lease and runs the Prefect build flow in process; the flow's
    own ``hold_run`` must neither refuse its caller nor release the caller's lease."""
    url = str(tmp_path / "run")
    with RunLock(RunFS.open(url), "a library caller"):  # not reentrant: a second holder here is refused
        with pytest.raises(RunLocked):
            hold_run(url, "prefect flow reactbench-build").acquire()
    with hold_run(url, "reactbench build", reentrant=True) as outer:
        assert isinstance(outer, RunLock)
        with hold_run(url, "prefect flow reactbench-build") as inner:
            assert isinstance(inner, NestedLock) and inner.lease == outer.lease
        assert read_lease(RunFS.open(url)).token == outer.lease.token  # still held after the nested exit
    assert not RunFS.open(url).exists(LEASE_FILE)
    with hold_run(url, "prefect flow reactbench-build") as again:  # released: a fresh lease, not a nested one
        assert isinstance(again, RunLock)


def test_heartbeat_refreshes_the_lease(tmp_path: Path):
    run = RunFS.open(str(tmp_path / "run"))
    with RunLock(run, "reactbench build", heartbeat_s=0.05) as lock:
        first = read_lease(run).heartbeat_at
        time.sleep(0.3)
        assert read_lease(run).heartbeat_at > first
        assert read_lease(run).token == lock.lease.token


@pytest.fixture(params=["memory", "s3"])
def remote_run(request: pytest.FixtureRequest) -> RunFS:
    if request.param == "s3":
        return RunFS.open(request.getfixturevalue("s3_run_url"))
    return RunFS.open(f"memory://lock-{uuid.uuid4().hex}/run")


def test_fsspec_url_second_writer_refused_then_stale_lease_taken_over(remote_run: RunFS):
    run = remote_run
    with RunLock(run, "reactbench build"):
        with pytest.raises(RunLocked, match="`reactbench build`"):
            RunLock(run, "reactbench eval").acquire()
    # a holder on another machine that stopped beating 10 minutes ago
    old = time.time() - 600
    stale = Lease("reactbench build", "elsewhere", 4242, "t" * 32, old, old, 60.0)
    run.write_bytes_atomic(LEASE_FILE, stale.to_json())
    assert stale_reason(stale, time.time()).startswith("no heartbeat for")
    messages: list[str] = []
    with RunLock(run, "reactbench eval", on_message=messages.append) as lock:
        assert read_lease(run).token == lock.lease.token
    assert "host elsewhere" in messages[0] and "no heartbeat" in messages[0]
    assert not run.exists(LEASE_FILE)


def test_fsspec_live_lease_of_another_host_is_respected(remote_run: RunFS):
    run = remote_run
    now = time.time()
    run.write_bytes_atomic(LEASE_FILE, Lease("reactbench build", "elsewhere", 1, "x" * 32, now, now, 60.0).to_json())
    with pytest.raises(RunLocked, match="pid 1 on host elsewhere"):
        RunLock(run, "reactbench eval").acquire()


def test_fsspec_holder_notices_when_its_lease_was_taken(remote_run: RunFS):
    run = remote_run
    messages: list[str] = []
    lock = RunLock(run, "reactbench build", heartbeat_s=3600, on_message=messages.append)
    lock.acquire()
    now = time.time()
    run.write_bytes_atomic(LEASE_FILE, Lease("reactbench edit", "elsewhere", 7, "y" * 32, now, now, 60.0).to_json())
    lock.heartbeat()
    assert lock.lost.is_set() and "pid 7 on host elsewhere" in messages[-1]
    lock.release()
    assert json.loads(run.read_text(LEASE_FILE))["token"] == "y" * 32  # not ours: left alone


def test_local_lease_of_a_dead_process_on_this_host_is_stale(tmp_path: Path):
    now = time.time()
    lease = Lease("reactbench build", socket.gethostname(), _dead_pid(), "z" * 32, now, now, 60.0)
    assert stale_reason(lease, now) is not None and "gone" in stale_reason(lease, now)
    run = RunFS.open(str(tmp_path / "run"))
    run.write_bytes_atomic(LEASE_FILE, lease.to_json())  # a file left without its flock
    messages: list[str] = []
    with RunLock(run, "reactbench mine", on_message=messages.append) as lock:
        assert lock.took_over == lease
    assert "Taking over" in messages[0]


def test_a_stopped_holder_is_named_not_reported_as_a_changing_file(tmp_path: Path):
    """Issue 26.6: a holder stopped with SIGSTOP past its ttl still holds the flock (its process
    lives), so a second writer must exit 3 naming it, not fail with "the lease file keeps
    changing". A 0.3 s ttl stands in for the 60 s default."""
    import signal

    root = tmp_path / "run"
    cli = str(Path(sys.executable).with_name("reactbench"))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    with held_by_another_process(root, ttl_s=0.3, heartbeat_s=0.05) as proc:
        os.kill(proc.pid, signal.SIGSTOP)
        try:
            time.sleep(0.8)
            lease = read_lease(RunFS.open(str(root)))
            assert lease is not None and time.time() - lease.heartbeat_at > 2 * lease.ttl_s, (
                "the holder beat while stopped"
            )
            with pytest.raises(RunLocked) as err:
                RunLock(RunFS.open(str(root)), "reactbench qa").acquire()
            assert f"pid {proc.pid}" in str(err.value) and f"kill -CONT {proc.pid}" in str(err.value)
            assert local_holder(str(root)) == lease  # the executable's early refusal names it too
            for argv in (
                [cli, "build", "--run-dir", str(root)],
                [sys.executable, "-m", "flows.cli", "build", "--run-dir", str(root)],
            ):
                out = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
                assert out.returncode == 3, out.stdout + out.stderr
                assert f"pid {proc.pid}" in out.stderr and "stopped" in out.stderr and "Traceback" not in out.stderr, (
                    out.stderr
                )
        finally:
            os.kill(proc.pid, signal.SIGCONT)


def test_a_flock_held_over_an_unwritten_lease_is_refused_not_a_runtime_error(tmp_path: Path):
    """A holder stopped between taking the flock and writing its lease: the second writer gives up
    after a second with RunLocked (status 3 in the CLI), not a RuntimeError traceback."""
    import fcntl

    run = RunFS.open(str(tmp_path / "run"))
    run.makedirs()
    fd = os.open(run.path(LEASE_FILE), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        with pytest.raises(RunLocked, match="has not written its lease yet"):
            RunLock(run, "reactbench qa").acquire()
    finally:
        os.close(fd)
