"""The pool does not ping PostgreSQL before every checkout (a round trip per transaction): a
connection the server closed (a restart, an idle timeout) fails its first statement instead,
and the review queue drops it and runs the transaction again on a fresh one. Simulated by
terminating every server backend of the database between requests."""

from __future__ import annotations

import re

from pg_cluster import fresh_database
from review_helpers import fill_queue, make_run
from starlette.testclient import TestClient

from tasks.review.accounts import add_user, get_user
from tasks.review.app import create_app
from tasks.review.queue import ReviewQueue

TERMINATE = "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"


def _drop_connections(queue: ReviewQueue) -> int:
    """Terminate every other backend on the queue's database; returns how many."""
    import psycopg

    cargs, cparams = queue.engine.dialect.create_connect_args(queue.engine.url)
    cparams.pop("context", None)
    with psycopg.connect(*cargs, **cparams, autocommit=True) as conn:
        return len(conn.execute(TERMINATE).fetchall())


def test_queue_and_app_survive_lost_connections(tmp_path, postgres_url):
    run, _, _ = make_run(tmp_path / "run", 6)
    db = fresh_database(postgres_url)
    fill_queue(run, db_url=db)
    queue = ReviewQueue.open(db)
    secret = add_user(queue.engine, "ann", "annotator")
    ann = get_user(queue.engine, "ann")

    # the queue (plain SQL on pooled connections): next and decide right after the drop
    first = queue.next_items(ann, "edit", want=2)
    assert _drop_connections(queue) >= 1
    assert queue.next_items(ann, "edit", want=2) == first  # renewed on a fresh connection
    assert _drop_connections(queue) >= 1
    event = queue.decide(ann, first[0], "accept")
    assert [e.id for e in queue.events(kinds=("decision",))] == [event]  # once, not twice

    # the app: the session read on the event loop, next and decide through HTTP
    c = TestClient(create_app(str(tmp_path / "run"), queue))
    page = c.get("/login").text
    c.post(
        "/login", data={"secret": secret, "csrf_token": re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)}
    )
    csrf = re.search(r'data-csrf="([^"]+)"', c.get("/review/qa").text).group(1)
    for _ in range(2):
        assert _drop_connections(queue) >= 1
        r = c.get("/api/next", params={"stage": "edit"})
        assert r.status_code == 200, r.text
        item = r.json()["items"][0]["id"]
        assert _drop_connections(queue) >= 1
        r = c.post(f"/api/items/{item}/decision", json={"verdict": "accept"}, headers={"X-CSRF-Token": csrf})
        assert r.status_code == 200, r.text
    assert len(queue.events(kinds=("decision",))) == 3

    # the admin pages (SQLAlchemy reads): each right after a drop; they failed once with 500 before
    boss = add_user(queue.engine, "boss", "admin")
    admin = TestClient(create_app(str(tmp_path / "run"), queue), raise_server_exceptions=False)
    page = admin.get("/login").text
    assert _drop_connections(queue) >= 1
    login = admin.post(
        "/login",
        data={"secret": boss, "csrf_token": re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)},
        follow_redirects=False,
    )
    assert login.status_code == 303 and "login" not in login.headers["location"], (
        login.status_code,
        login.text[-300:],
    )
    for path in (
        "/admin",
        "/admin/stats",
        "/admin/adjudicate",
        f"/admin/adjudicate/{item}",
        "/api/progress?stage=edit",
    ):
        assert _drop_connections(queue) >= 1
        r = admin.get(path, follow_redirects=False)
        assert r.status_code == 200, (path, r.status_code, r.text[-300:])
    queue.close()
