"""The derived item-state cache (``review_item_state``) always equals the state recomputed
from the append-only events, through leases, k-fold decisions, undo, adjudication, expired
leases and QA items opening and closing with their edit, on SQLite and PostgreSQL; v1
databases without the cache are upgraded from their events."""

from __future__ import annotations

import random

import pytest
from pg_cluster import fresh_database
from review_helpers import assert_state_matches_events, fill_queue
from sqlalchemy import text

from storage.review_db import SCHEMA_VERSION
from tasks.review.accounts import add_user, get_user
from tasks.review.queue import LeaseLost, NotAllowed, ReviewQueue


def _random_walk(q: ReviewQueue, clock, seed: int, steps: int = 150) -> set[str]:
    """Random next / decide / change decision / undo / adjudicate / lease expiry; checks the
    cache against the events after every step. Returns the kinds of steps taken."""
    rng = random.Random(seed)
    names = [f"u{i}" for i in range(4)]
    for n in names:
        add_user(q.engine, n, "annotator")
    add_user(q.engine, "boss", "admin")
    users = [get_user(q.engine, n) for n in names]
    boss = get_user(q.engine, "boss")
    done: set[str] = set()
    for _ in range(steps):
        u = rng.choice(users)
        stage = rng.choice(("edit", "edit", "qa"))
        op = rng.random()
        if op < 0.55:
            ids = q.next_items(u, stage, want=rng.choice((1, 2)))
            if ids and rng.random() < 0.85:
                verdict = rng.choice(("accept", "accept", "reject"))
                try:
                    q.decide(u, ids[0], verdict, ["artifacts"] if verdict == "reject" else [])
                    done.add("decide")
                except LeaseLost:
                    done.add("lease_lost")
        elif op < 0.65:
            prev = q.previous(u, stage)
            if prev:  # change an earlier decision (refused when it was undone and re-leased meanwhile)
                try:
                    q.decide(u, prev[0], "reject", ["other"], note="second look")
                    done.add("change")
                except LeaseLost:
                    done.add("change_refused")
        elif op < 0.8:
            try:
                if q.retract_last(u, stage):
                    done.add("undo")
            except NotAllowed:
                done.add("undo_refused")
        elif op < 0.9:
            disputed = q.disputed()
            if disputed:
                q.adjudicate(boss, rng.choice(disputed), rng.choice(("accept", "reject")))
                done.add("adjudicate")
        else:
            clock.advance(16 * 60)  # every lease expires
            done.add("expire")
        assert_state_matches_events(q)
    return done


@pytest.mark.parametrize("k", [1, 2])
def test_sqlite_item_state_equals_events(filled_run, clock, k):
    _, url, _, _ = filled_run
    q = ReviewQueue.open(url, k=k, clock=clock)
    assert_state_matches_events(q)
    done = _random_walk(q, clock, seed=k)
    assert {"decide", "undo", "expire", "change"} | ({"adjudicate"} if k == 2 else set()) <= done
    q.close()


def test_postgres_item_state_equals_events(filled_run, clock, postgres_url):
    run, _, _, _ = filled_run
    db = fresh_database(postgres_url)
    fill_queue(run, db_url=db)
    q = ReviewQueue.open(db, k=2, clock=clock)
    assert q.engine.dialect.name == "postgresql"
    assert_state_matches_events(q)
    done = _random_walk(q, clock, seed=7)
    assert {"decide", "undo", "expire", "change", "adjudicate"} <= done
    q.close()


def test_qa_items_open_and_close_with_their_edit(filled_run, clock):
    _, url, _, _ = filled_run
    q = ReviewQueue.open(url, clock=clock)
    add_user(q.engine, "ann", "annotator")
    ann = get_user(q.engine, "ann")
    assert q.next_items(ann, "qa") == []
    edit = q.next_items(ann, "edit", want=1)[0]
    q.decide(ann, edit, "accept")
    qa = [i for i, it in ((r.id, r) for r in q.items()) if it.parent_id == edit]
    assert qa and all(q.item_states()[i][2] == 1 for i in qa)
    assert_state_matches_events(q)
    assert q.retract_last(ann, "edit") == edit  # undo closes the QA item again
    assert all(q.item_states()[i][2] == 0 for i in qa)
    assert_state_matches_events(q)


def test_v1_database_is_upgraded_from_events(filled_run, clock):
    _, url, _, _ = filled_run
    q = ReviewQueue.open(url, k=2, clock=clock)
    _random_walk(q, clock, seed=3, steps=60)
    expected = q.item_states()
    with q.engine.begin() as conn:  # what a v1 database looks like: no cache
        conn.execute(text("DROP TABLE review_item_state"))
        conn.execute(text("DROP INDEX ix_review_events_item_annotator"))
        conn.execute(text("UPDATE review_meta SET value = '1' WHERE key = 'schema_version'"))
    q.close()
    q2 = ReviewQueue.open(url, k=2, clock=clock)
    assert q2.item_states() == expected
    assert_state_matches_events(q2)
    with q2.engine.connect() as conn:
        assert conn.execute(text("SELECT value FROM review_meta WHERE key = 'schema_version'")).scalar() == str(
            SCHEMA_VERSION
        )
        assert conn.execute(
            text("SELECT name FROM sqlite_master WHERE name = 'ix_review_events_item_annotator'")
        ).scalar()
    q2.close()


def test_leasing_query_uses_the_state_index(filled_run):
    """The candidate query walks the (stage, available, seq) index, not every item, and finds
    the annotator's own decisions by (item, annotator), not by walking all their decisions."""
    from tasks.review.leasing import CANDIDATE_ITEMS_SQL
    from tasks.review.queue import _CANDIDATES_SQL

    _, url, _, _ = filled_run
    q = ReviewQueue.open(url)
    for query in (_CANDIDATES_SQL, CANDIDATE_ITEMS_SQL):  # the ids, and the rows `next` leases from
        with q.engine.connect() as conn:
            plan = " | ".join(
                str(r[-1])
                for r in conn.execute(
                    text("EXPLAIN QUERY PLAN " + query), {"stage": "edit", "now": 0.0, "k": 1, "me": 1, "limit": 2}
                )
            )
        assert "ix_review_item_state_open" in plan, plan
        assert "ix_review_events_item_annotator" in plan and "ix_review_events_annotator " not in plan, plan
    q.close()


def test_sqlite_reads_do_not_wait_for_a_writer(filled_run):
    """Page reads use deferred snapshots (WAL): they return while a write transaction is open
    instead of queueing behind it."""
    import threading

    _, url, _, _ = filled_run
    q = ReviewQueue.open(url)
    add_user(q.engine, "ann", "annotator")
    ann = get_user(q.engine, "ann")
    item = q.next_items(ann, "edit", want=1)[0]
    out: dict = {}

    def read() -> None:
        out["view"] = q.get_item(ann, item)
        out["progress"] = q.progress(ann, "edit")

    with q.engine.begin() as conn:  # BEGIN IMMEDIATE: holds SQLite's write lock
        conn.execute(text("UPDATE review_meta SET value = value WHERE key = 'schema_version'"))
        t = threading.Thread(target=read)
        t.start()
        t.join(5)
        assert not t.is_alive(), "a read waited for the writer"
    assert out["view"].id == item and out["progress"]["total"] == 6
    q.close()
