"""Fault injection: ``kill -9`` of the review server while annotators decide over HTTP. Every
decision the server acknowledged (200 with an event id) is in the log after each restart,
no item is decided twice, and the annotators finish the queue across the restarts."""

from __future__ import annotations

import re
import signal
import threading
import time
from collections import Counter

import httpx
from review_helpers import fill_queue, free_port, make_run, serve_process

from tasks.review.accounts import add_user
from tasks.review.queue import ReviewQueue

ANNOTATORS = 4
KILLS = 2


def test_kill_9_under_load_loses_no_acknowledged_decision(tmp_path):
    run_dir = tmp_path / "run"
    run, _, _ = make_run(run_dir, 60)
    url = fill_queue(run).extra["queue_db"]
    q = ReviewQueue.open(url)
    secrets = [add_user(q.engine, f"a{i}", "annotator") for i in range(ANNOTATORS)]
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    acked: list[int] = []
    lock = threading.Lock()
    stop = threading.Event()

    def annotate(secret: str) -> None:
        while not stop.is_set():
            try:
                with httpx.Client(base_url=base, timeout=5) as c:
                    tok = re.search(r'name="csrf_token" value="([^"]+)"', c.get("/login").text).group(1)
                    c.post("/login", data={"secret": secret, "csrf_token": tok})
                    csrf = re.search(r'data-csrf="([^"]+)"', c.get("/review/edit").text).group(1)
                    while not stop.is_set():
                        items = c.get("/api/next", params={"stage": "edit"}).json()["items"]
                        if not items:
                            return
                        r = c.post(
                            f"/api/items/{items[0]['id']}/decision",
                            json={"verdict": "accept"},
                            headers={"X-CSRF-Token": csrf},
                        )
                        if r.status_code == 200:
                            with lock:
                                acked.append(r.json()["event_id"])
            except (httpx.TransportError, AttributeError, ValueError):
                time.sleep(0.1)  # server down (killed): log in again once it is back

    proc = serve_process(run_dir, port)
    threads = [threading.Thread(target=annotate, args=(s,)) for s in secrets]
    [t.start() for t in threads]
    try:
        for _ in range(KILLS):
            time.sleep(1.5)
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            with lock:
                seen = list(acked)
            logged = {e.id for e in q.events(kinds=("decision",))}
            assert set(seen) <= logged, "an acknowledged decision was lost"
            proc = serve_process(run_dir, port)
        [t.join(120) for t in threads]
    finally:
        stop.set()
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    decisions = q.events(kinds=("decision",))
    assert set(acked) <= {e.id for e in decisions}
    per_item = Counter(e.item_id for e in decisions)
    assert max(per_item.values()) == 1  # k = 1: nobody decided an item someone else held
    assert len(per_item) == 60 and len(acked) >= 1
