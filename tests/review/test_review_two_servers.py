"""A crowd on one PostgreSQL: two ``review serve`` processes share the queue, annotators are
spread over both, and one process is killed with ``kill -9`` mid-load. Its annotators go on
through the other process with the same session cookie (sessions live in the database); no
item is leased to two annotators, every acknowledged decision is in the log, and the queue
is finished. Refused logins are counted across both processes."""

from __future__ import annotations

import signal
import threading
import time
from collections import Counter, defaultdict

import httpx
import pytest
from pg_cluster import fresh_database
from review_helpers import concurrent_wrong_logins, fill_queue, free_port, http_login, make_run, serve_process

from tasks.review.accounts import add_user
from tasks.review.login import LOGIN_LIMITS
from tasks.review.queue import ReviewQueue

ITEMS = 48
ANNOTATORS = 8


@pytest.fixture(scope="module")
def crowd(tmp_path_factory, postgres_url):
    """A filled PostgreSQL queue, annotator secrets and two server processes on it."""
    root = tmp_path_factory.mktemp("crowd") / "run"
    run, _, _ = make_run(root, ITEMS)
    db = fresh_database(postgres_url)
    fill_queue(run, db_url=db)
    queue = ReviewQueue.open(db)
    secrets = [add_user(queue.engine, f"c{i}", "annotator") for i in range(ANNOTATORS)]
    ports = [free_port(), free_port()]
    procs = [serve_process(root, p, "--db", db) for p in ports]
    yield queue, secrets, procs, [f"http://127.0.0.1:{p}" for p in ports]
    for p in procs:
        p.kill()
        p.wait()
    queue.close()


def test_wrong_logins_are_limited_across_both_processes(crowd):
    queue, _, procs, bases = crowd
    alive = [b for b, p in zip(bases, procs) if p.poll() is None]
    assert len(alive) == 2, "needs both processes (runs before the kill test)"
    codes = concurrent_wrong_logins(alive, 30)
    with queue.engine.begin() as conn:  # the address is locked out now: forget it for the next test
        conn.exec_driver_sql("DELETE FROM review_login_failures")
    assert codes == {401: LOGIN_LIMITS["client"], 429: 30 - LOGIN_LIMITS["client"]}, codes


def test_kill_9_of_one_of_two_processes_loses_nothing(crowd):
    queue, secrets, procs, bases = crowd
    handed: dict[str, set[int]] = defaultdict(set)
    acked: list[int] = []
    errors: list[str] = []
    failovers = Counter()
    lock = threading.Lock()
    killed = threading.Event()

    def annotate(i: int) -> None:
        server = i % 2
        with httpx.Client(base_url=bases[server], timeout=30) as c:
            csrf = http_login(c, secrets[i])
            while True:
                try:
                    items = c.get("/api/next", params={"stage": "edit"}).json()["items"]
                    if not items:
                        return
                    with lock:
                        handed[items[0]["id"]].add(i)
                    r = c.post(
                        f"/api/items/{items[0]['id']}/decision",
                        json={"verdict": "accept"},
                        headers={"X-CSRF-Token": csrf},
                    )
                    if r.status_code != 200:
                        errors.append(f"{i}: {r.status_code} {r.text[:200]}")
                        return
                    with lock:
                        acked.append(r.json()["event_id"])
                    time.sleep(0.02)
                except httpx.TransportError:  # our process died: the same session goes on through the other one
                    if not killed.is_set() or server != 0:
                        raise
                    server = 1
                    c.base_url = httpx.URL(bases[1])
                    failovers[i] += 1

    threads = [threading.Thread(target=lambda i=i: _report(annotate, i, errors)) for i in range(ANNOTATORS)]
    [t.start() for t in threads]
    deadline = time.time() + 60
    while len(acked) < ITEMS // 4 and time.time() < deadline and any(t.is_alive() for t in threads):
        time.sleep(0.05)
    killed.set()
    procs[0].send_signal(signal.SIGKILL)
    procs[0].wait()
    with lock:
        before_kill = list(acked)
    [t.join(180) for t in threads]

    assert not errors, errors
    decisions = queue.events(kinds=("decision",))
    logged = {e.id for e in decisions}
    assert before_kill and set(before_kill) <= logged, "a decision acknowledged before the kill was lost"
    assert set(acked) <= logged, "an acknowledged decision was lost"
    # a decision committed while its answer died with the process is logged, not acknowledged
    assert len(logged - set(acked)) <= sum(failovers.values())
    assert not {item: who for item, who in handed.items() if len(who) > 1}, "an item was leased to two annotators"
    assert Counter(e.item_id for e in decisions) == Counter({item: 1 for item in handed}) and len(handed) == ITEMS
    assert sum(failovers.values()) >= 1  # the annotators of the killed process really moved over


def _report(fn, i: int, errors: list[str]) -> None:
    try:
        fn(i)
    except Exception as exc:  # surfaced by the test's assertions
        errors.append(f"{i}: {exc!r}")
