"""The lease on an object store is correct by construction: real processes race for one lease on
a real S3 API (moto, tests/s3_server.py) and exactly one wins every trial, for a free lease and
for a stale one; a store that ignores conditional writes is refused unless the user accepts a
best-effort lease; a URL whose fsspec backend is missing names the extra to install."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from lease_race import Racers, RaceTally, plant_stale_lease
from s3_server import S3Server

from storage.conditional import ConditionalUnsupported, S3Objects
from storage.fs import RunFS
from storage.run_lock import BEST_EFFORT_ENV, LEASE_FILE, RunLock, RunLocked, read_lease

ROOT = Path(__file__).resolve().parents[2]
RACERS = 4
TRIALS = 20


@pytest.fixture(scope="module")
def racers(s3_server: S3Server) -> Iterator[Racers]:
    """Four racer processes (they inherit AWS_ENDPOINT_URL from the s3_server fixture)."""
    with Racers(RACERS) as procs:
        yield procs


def _assert_one_winner_each(tally: RaceTally, trials: int) -> None:
    assert tally.trials == trials
    assert tally.as_dict() == {
        "trials": trials,
        "double_wins": 0,
        "no_winner": 0,
        "errors": [],
        "wrong_holder_named": 0,
    }


def test_racing_processes_take_a_free_lease_exactly_once(racers: Racers, s3_server: S3Server):
    bucket, tally = s3_server.bucket(), RaceTally()
    for trial in range(TRIALS):
        url = f"s3://{bucket}/run-{trial}"
        answers = racers.race(url, tally)
        assert sorted(a.split()[0] for a in answers) == ["locked"] * (RACERS - 1) + ["won"], answers
        assert not RunFS.open(url).exists(LEASE_FILE), "the winner's release left its lease behind"
    _assert_one_winner_each(tally, TRIALS)


def test_racing_processes_take_over_one_stale_lease_exactly_once(racers: Racers, s3_server: S3Server):
    bucket, tally = s3_server.bucket(), RaceTally()
    for trial in range(TRIALS):
        url = f"s3://{bucket}/stale-{trial}"
        plant_stale_lease(url)
        answers = racers.race(url, tally)
        assert sorted(a.split()[0] for a in answers) == ["locked"] * (RACERS - 1) + ["won"], answers
    _assert_one_winner_each(tally, TRIALS)


def test_a_lost_compare_and_swap_is_noticed_and_the_new_holder_kept(s3_run_url: str):
    """A holder whose heartbeat lapsed (a GC pause, a stopped process) and was taken over must not
    overwrite the new holder's lease when it wakes up: its heartbeat is a CAS on the old ETag."""
    run = RunFS.open(s3_run_url)
    messages: list[str] = []
    sleeper = RunLock(run, "reactbench build", ttl_s=0.3, heartbeat_s=3600, on_message=messages.append)
    sleeper.acquire()
    time.sleep(0.5)  # its heartbeat is now older than its ttl
    with RunLock(run, "reactbench edit", on_message=messages.append) as taker:
        assert taker.took_over is not None and taker.took_over.token == sleeper.lease.token
        sleeper.heartbeat()  # wakes up
        assert sleeper.lost.is_set() and "`reactbench edit`" in messages[-1]
        assert read_lease(run).token == taker.lease.token
        sleeper.release()
        assert read_lease(run).token == taker.lease.token, "a holder that lost its lease deleted the new one"
    assert not run.exists(LEASE_FILE)


@pytest.mark.parametrize(
    "conditional, why", [("ignore", "does not honour them"), ("refuse", "refused a conditional write (NotImplemented")]
)
def test_a_store_without_conditional_writes_is_refused_unless_best_effort(
    monkeypatch: pytest.MonkeyPatch, conditional: str, why: str
):
    with S3Server(conditional=conditional) as plain:  # type: ignore[arg-type]
        fs = plain.filesystem()
        bucket = plain.bucket()
        run = RunFS(fs, f"{bucket}/run")
        monkeypatch.delenv(BEST_EFFORT_ENV, raising=False)
        with pytest.raises(ConditionalUnsupported) as err:
            RunLock(run, "reactbench build").acquire()
        assert why in str(err.value) and f"{BEST_EFFORT_ENV}=1" in str(err.value)
        assert not run.exists(LEASE_FILE)
        assert not [p for p in fs.find(bucket) if ".reactbench-probe-" in p], "the probe object was left behind"
        messages: list[str] = []
        monkeypatch.setenv(BEST_EFFORT_ENV, "1")
        with RunLock(run, "reactbench build", on_message=messages.append) as lock:
            assert read_lease(run).token == lock.lease.token
            with pytest.raises(RunLocked):
                RunLock(run, "reactbench eval", on_message=messages.append).acquire()
        assert "best-effort lease" in messages[0]


def test_the_conditional_probe_passes_on_a_store_that_honours_them(s3_server: S3Server):
    bucket = s3_server.bucket()
    S3Objects(s3_server.filesystem()).verify(f"{bucket}/run")
    assert not s3_server.filesystem().find(bucket)


def test_a_missing_backend_names_the_extra(tmp_path: Path):
    """Without s3fs, ``reactbench build --run-dir s3://...`` exits 2 with the extra to install, not
    fsspec's ImportError traceback (s3fs is blocked in the child process only)."""
    code = "import sys; sys.modules['s3fs'] = None\nfrom flows.entry import main\nmain()\n"
    out = subprocess.run(
        [sys.executable, "-c", code, "build", "--run-dir", "s3://bucket/run"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert out.returncode == 2, out.stdout + out.stderr
    assert (
        "s3://bucket/run: no fsspec backend for s3:// is installed; pip install 'reactbench-pipeline[s3]'"
        in out.stderr
        and "Traceback" not in out.stderr
    ), out.stderr


def test_a_holder_that_lost_its_lease_lands_no_shard(s3_run_url: str):
    """A build paused past its ttl and taken over (by a process elsewhere) must not write the
    shards it finishes after waking up: they would overwrite the new holder's. The shards and the
    manifest are refused; a worker on another node, holding only the driver's token, is refused
    after one read of the lease."""
    import sys as _sys

    from flows.config import BuildConfig
    from storage.run_lock import Lease, LeaseLost, ensure_lease
    from tasks.engine.base import RunContext
    from tasks.engine.runner import ShardFailed, run_stage

    _sys.path.insert(0, str(ROOT / "tests" / "flows"))
    from test_runner import SquareStage

    run = RunFS.open(s3_run_url)
    cfg = BuildConfig.model_validate({"run": {"shard_size": 4, "workers": 1}, "orchestration": {"retries": 0}})
    ctx = RunContext(run=run, config=cfg, options={"n": 8})
    SquareStage.calls, SquareStage.poison = [], set()
    sleeper = RunLock(run, "reactbench build", heartbeat_s=3600, on_message=lambda m: None)
    sleeper.acquire()
    old_token = sleeper.lease.token
    now = time.time()
    taker = Lease("reactbench edit", "node-b", 4242, "t" * 32, now, now, 60.0)
    run.write_bytes_atomic(LEASE_FILE, taker.to_json())  # the takeover, as another host's process did it
    sleeper.heartbeat()  # wakes up: its compare-and-swap fails
    assert sleeper.lost.is_set()
    with pytest.raises(ShardFailed) as err:
        run_stage(SquareStage(), ctx)
    assert "LeaseLost" in str(err.value) and sorted(SquareStage.calls) == [0, 1], "the shards ran but must not land"
    assert not run.exists("square/_shards/00000.json") and not run.exists("square/_shards/00001.json")
    assert (SquareStage().store(ctx).read_manifest() or {}).get("status") != "complete"
    sleeper.release()
    assert read_lease(run).token == taker.token, "the lost holder's release deleted the new lease"
    with pytest.raises(LeaseLost, match="node-b"):
        ensure_lease(run, old_token)
    ensure_lease(run, taker.token)  # the current holder's token passes
