"""The review export is written as one set sealed by a manifest: ``kill -9`` of a real
``reactbench review export`` at any moment never leaves a mixed or partial set that a reader
accepts, and readers refuse export files without their manifest."""

from __future__ import annotations

import io
import json
import os
import random
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from review_helpers import fill_queue, make_run

from storage.fs import RunFS
from tasks.review.accounts import add_user, get_user
from tasks.review.export import export_review
from tasks.review.export_set import MANIFEST, ExportSetError, require_export_set
from tasks.review.queue import ReviewQueue

CLI = str(Path(sys.executable).with_name("reactbench"))
KILLS = 6


def _decide_some(q: ReviewQueue, user, n: int) -> int:
    done = 0
    for stage in ("edit", "qa"):
        while done < n and (ids := q.next_items(user, stage, want=1)):
            q.decide(user, ids[0], "accept")
            done += 1
    return done


def _check_accepted_set(run: RunFS, q: ReviewQueue) -> int:
    """A set a reader accepts reflects exactly the log up to its manifest's position."""
    manifest = require_export_set(run, ("verified_edits", "verified_questions", "decisions"))
    position = manifest["decision_log_position"]
    human = [e for e in q.events(upto=position) if e.kind != "resolution"]
    decisions = pq.read_table(io.BytesIO(run.read_bytes(manifest["files"]["decisions"]["path"]))).to_pylist()
    assert [d["event_id"] for d in decisions] == [e.id for e in human]
    verified = pq.read_table(io.BytesIO(run.read_bytes(manifest["files"]["verified_edits"]["path"]))).num_rows
    assert verified == manifest["files"]["verified_edits"]["rows"]
    return position


def test_kill_9_during_export_never_leaves_an_accepted_mixed_set(tmp_path):
    root = tmp_path / "run"
    run, _, _ = make_run(root, 40)
    url = fill_queue(run).extra["queue_db"]
    q = ReviewQueue.open(url)
    add_user(q.engine, "ann", "annotator")
    ann = get_user(q.engine, "ann")
    _decide_some(q, ann, 10)
    export_review(run, q)  # a complete set to start from
    first = _check_accepted_set(run, q)
    rng = random.Random(0)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    outcomes = {"accepted": 0, "refused": 0, "killed_mid_write": 0}
    for attempt in range(KILLS):
        _decide_some(q, ann, 3)  # every export differs from the one before
        proc = subprocess.Popen(
            [CLI, "review", "export", "--run-dir", str(root)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        if attempt % 2 == 0:  # kill as soon as the new set is being written
            deadline = time.time() + 60
            while (
                proc.poll() is None
                and time.time() < deadline
                and not any(n.startswith(".export-") for n in os.listdir(root / "review"))
            ):
                pass  # no sleep: on a quiet machine the whole set is written within a few milliseconds
            time.sleep(rng.uniform(0, 0.001))
        else:
            time.sleep(rng.uniform(0.3, 3.0))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        outcomes["killed_mid_write"] += any(n.startswith(".export-") for n in os.listdir(root / "review"))
        try:
            position = _check_accepted_set(run, q)
            outcomes["accepted"] += 1
            assert position >= first
        except ExportSetError as exc:
            outcomes["refused"] += 1
            assert "review export" in str(exc)
    assert outcomes["killed_mid_write"] >= 1, outcomes  # some kills did land while a set was being written
    done = subprocess.run(
        [CLI, "review", "export", "--run-dir", str(root)], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert _check_accepted_set(run, q) == q.log_position()
    assert not [n for n in os.listdir(root / "review") if n.startswith(".export-")]  # leftovers cleaned


def test_readers_refuse_export_files_without_their_manifest(tmp_path):
    from tasks.release.items import InputsMissing, read_inputs

    run, _, _ = make_run(tmp_path / "run", 4)
    q = ReviewQueue.open(fill_queue(run).extra["queue_db"])
    add_user(q.engine, "ann", "annotator")
    _decide_some(q, get_user(q.engine, "ann"), 8)
    summary = export_review(run, q)
    assert (
        summary.verified_edits == 4
        and json.loads(run.read_text(MANIFEST))["decision_log_position"] == q.log_position()
    )
    assert len(read_inputs(run, unverified=False)[0]) == 12
    run.rm(MANIFEST)  # as after an interrupted export
    with pytest.raises(InputsMissing, match="no manifest") as refused:
        read_inputs(run, unverified=False)
    assert f"run `reactbench review export --run-dir {shlex.quote(run.url)}` again" in str(
        refused.value
    )  # the command, filled in
    export_review(run, q)
    rel = json.loads(run.read_text(MANIFEST))["files"]["verified_questions"]["path"]
    Path(run.path(rel)).write_bytes(Path(run.path(rel)).read_bytes()[:-8])  # a file of another (or a broken) export
    with pytest.raises(InputsMissing, match="does not match"):
        read_inputs(run, unverified=False)


def test_export_reflects_one_log_position(tmp_path):
    run, _, _ = make_run(tmp_path / "run", 4)
    q = ReviewQueue.open(fill_queue(run).extra["queue_db"])
    add_user(q.engine, "ann", "annotator")
    _decide_some(q, get_user(q.engine, "ann"), 5)
    a = export_review(run, q)
    b = export_review(run, q)
    assert a.position == b.position == q.log_position()
    assert a.paths == b.paths


def test_on_s3_the_set_is_written_to_its_final_keys_and_sealed_last(tmp_path, s3_server):
    """On an object store a rename is a copy and a delete: the set goes to its final keys. The
    bucket keeps every version, so any key ever written (a temporary one included) is seen."""
    from tasks.review.export_set import OLD_PREFIX, TMP_PREFIX

    bucket = s3_server.bucket()
    client = s3_server.client()
    client.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    run, _, _ = make_run(f"s3://{bucket}/run", 12)
    q = ReviewQueue.open(fill_queue(run, db_url=f"sqlite:///{tmp_path / 'queue.sqlite'}").extra["queue_db"])
    add_user(q.engine, "ann", "annotator")
    ann = get_user(q.engine, "ann")
    positions = []
    for _ in range(2):  # the second set replaces the first whole
        assert _decide_some(q, ann, 4) == 4
        export_review(run, q)
        positions.append(_check_accepted_set(run, q))
    assert positions[1] > positions[0]
    listing = client.list_object_versions(Bucket=bucket, Prefix="run/review/")
    written = {v["Key"] for v in listing.get("Versions", []) + listing.get("DeleteMarkers", [])}
    manifest_key = f"run/{MANIFEST}"
    assert manifest_key in written and any(k.endswith(".parquet") for k in written)
    assert not [k for k in written if TMP_PREFIX in k or OLD_PREFIX in k or "/.tmp-" in k], sorted(written)

    # the manifest is removed before the set's files and written after them: a store write that
    # fails at any point of an export leaves a set that readers refuse, never a mixed one
    pipe, writes = run.fs.pipe_file, []

    def failing_at(k: int):
        def pipe_file(path, data, **kw):
            writes.append(path)
            if len(writes) == k:
                raise OSError(f"injected store failure at write {k} ({path})")
            return pipe(path, data, **kw)

        return pipe_file

    total = 4  # three tables and the manifest
    for k in range(1, total + 1):
        assert _decide_some(q, ann, 1) == 1
        writes.clear()
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(run.fs, "pipe_file", failing_at(k))
            with pytest.raises(OSError, match="injected"):
                export_review(run, q)
        assert len(writes) == k and writes[-1].endswith(MANIFEST) == (k == total)
        with pytest.raises(ExportSetError, match="no manifest"):
            require_export_set(run, ("verified_edits", "verified_questions", "decisions"))
    export_review(run, q)
    assert _check_accepted_set(run, q) > positions[1]
