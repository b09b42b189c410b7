"""The review rules as pure functions, and the lease-capacity re-check under a stale candidate list."""

from __future__ import annotations

from types import SimpleNamespace as Ev

import pytest
from pg_cluster import fresh_database
from review_helpers import fill_queue

from storage.review_db import sql_transaction
from tasks.review.accounts import add_user, get_user
from tasks.review.leasing import candidate_ids, lease_from
from tasks.review.queue import ReviewQueue
from tasks.review.rules import current_decisions, item_outcome


def test_current_decision_is_the_latest_unless_retracted():
    log = [
        Ev(kind="decision", item_id="a", annotator_id=1, verdict="accept"),
        Ev(kind="decision", item_id="a", annotator_id=2, verdict="reject"),
        Ev(kind="resolution", item_id="a", annotator_id=2, verdict="disputed"),
        Ev(kind="decision", item_id="a", annotator_id=1, verdict="reject"),  # changed
        Ev(kind="retract", item_id="a", annotator_id=2),  # withdrawn
        Ev(kind="decision", item_id="b", annotator_id=3, verdict="accept"),
        Ev(kind="retract", item_id="b", annotator_id=3),
    ]
    current = current_decisions(log)
    assert {i: {a: e.verdict for a, e in d.items()} for i, d in current.items()} == {"a": {1: "reject"}}


def test_item_outcome():
    assert item_outcome([], 1) == "pending"
    assert item_outcome(["accept"], 2) == "pending"
    assert item_outcome(["accept", "accept"], 2) == "accept"
    assert item_outcome(["accept", "reject"], 2) == "disputed"
    assert item_outcome(["accept", "reject"], 2, adjudication="reject") == "reject"
    assert item_outcome(["accept"], 1, adjudication="accept", retired=True) == "retired"


@pytest.fixture(params=["sqlite", "postgresql"])
def queue_url(request, filled_run):
    """The filled run's queue in SQLite, or the same queue in a fresh PostgreSQL database."""
    run, url, _, _ = filled_run
    if request.param == "sqlite":
        return url
    db = fresh_database(request.getfixturevalue("postgres_url"))
    fill_queue(run, db_url=db)
    return db


def test_second_annotator_gets_a_different_item_even_from_a_stale_candidate_list(queue_url, clock):
    """On PostgreSQL the candidate query's snapshot can predate a lease another annotator just
    committed. Reproduced deterministically: bob's candidates are read, then ann leases the
    first of them, then bob leases from his (now stale) list. He must get the second item,
    never ann's (k = 1): that is the capacity re-check in ``try_lease``."""
    q = ReviewQueue.open(queue_url, k=1, lease_minutes=15, clock=clock)
    for n in ("ann", "bob"):
        add_user(q.engine, n, "annotator")
    ann, bob = get_user(q.engine, "ann"), get_user(q.engine, "bob")
    now = clock()
    with sql_transaction(q.engine, write=False) as sql:
        stale = candidate_ids(sql, bob, "edit", q.k, now, 2)
    assert len(stale) == 2
    taken = q.next_items(ann, "edit", want=1)
    assert taken == stale[:1]
    with sql_transaction(q.engine) as sql:
        got = lease_from(sql, stale, bob, "edit", q.k, now, q.lease_seconds)
    assert got == stale[1:]  # a different item, and not nothing
    assert set(got).isdisjoint(taken)
    assert q.next_items(bob, "edit", want=1) == got
    assert q.active_leases() == 2


def test_stale_candidate_cannot_over_lease_a_k2_item(queue_url, clock):
    """k = 2: one decision plus one live lease fill an item although a lease slot is still free
    in the table; a stale candidate list must not hand it to a third annotator."""
    q = ReviewQueue.open(queue_url, k=2, lease_minutes=15, clock=clock)
    for n in ("ann", "bob", "cat"):
        add_user(q.engine, n, "annotator")
    ann, bob, cat = (get_user(q.engine, n) for n in ("ann", "bob", "cat"))
    now = clock()
    with sql_transaction(q.engine, write=False) as sql:
        stale = candidate_ids(sql, cat, "edit", q.k, now, 2)
    first = stale[0]
    assert q.next_items(ann, "edit", want=1) == [first]
    q.decide(ann, first, "accept")  # n = 1, ann's lease released
    assert q.next_items(bob, "edit", want=1) == [first]  # the second slot
    with sql_transaction(q.engine) as sql:
        got = lease_from(sql, stale, cat, "edit", q.k, now, q.lease_seconds)
    assert first not in got and got == stale[1:]
