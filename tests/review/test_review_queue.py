"""The queue's rules: leases and their timeout, preloading, k-fold annotation, disputes and
adjudication, undo, visibility, and that events are only ever appended."""

from __future__ import annotations

import pytest

from tasks.review.accounts import add_user, get_user
from tasks.review.queue import LeaseLost, NotAllowed, QueueError, ReviewQueue
from tasks.review.validation import QuestionError


def _queue(url: str, clock, k: int = 1, minutes: float = 15.0) -> ReviewQueue:
    return ReviewQueue.open(url, k=k, lease_minutes=minutes, clock=clock)


def _users(q: ReviewQueue, *names: str, role: str = "annotator"):
    out = []
    for n in names:
        add_user(q.engine, n, role)
        out.append(get_user(q.engine, n))
    return out


def _snapshot(q: ReviewQueue) -> list[tuple]:
    return [
        tuple(
            getattr(e, c)
            for c in ("id", "item_id", "kind", "annotator_id", "verdict", "n", "before_json", "after_json")
        )
        for e in q.events()
    ]


def test_lease_preload_resume_and_exclusive(filled_run, clock):
    run, url, edits, _ = filled_run
    q = _queue(url, clock)
    ann, bob = _users(q, "ann", "bob")
    first = q.next_items(ann, "edit", want=2)
    assert len(first) == 2  # the shown item and the preloaded one
    assert q.next_items(ann, "edit", want=2) == first  # resume: same leases, same order
    theirs = q.next_items(bob, "edit", want=2)
    assert not set(first) & set(theirs)
    assert len(theirs) == 2  # exclusive, and not trivially: bob gets other items, not nothing
    assert q.next_items(ann, "qa") == []  # QA opens only after an edit is accepted


def test_expired_lease_returns_and_late_decision_is_refused(filled_run, clock):
    _, url, _, _ = filled_run
    q = _queue(url, clock, minutes=15)
    ann, bob = _users(q, "ann", "bob")
    everything = set()
    while True:  # bob leases everything but one item
        got = q.next_items(bob, "edit", want=1 + len(everything))
        if set(got) == everything:
            break
        everything |= set(got)
    assert len(everything) == 6
    assert q.next_items(ann, "edit") == []
    clock.advance(14 * 60)
    assert q.next_items(ann, "edit") == []  # still leased
    clock.advance(2 * 60)
    taken = q.next_items(ann, "edit", want=1)
    assert len(taken) == 1 and taken[0] in everything  # expired leases return
    with pytest.raises(LeaseLost, match=f"item {taken[0]} is not leased to 'bob': another annotator holds it"):
        q.decide(bob, taken[0], "accept")
    assert q.decide(ann, taken[0], "reject", ["artifacts"]) > 0


def test_decision_rules_and_qa_follow_up(filled_run, clock):
    _, url, _, _ = filled_run
    q = _queue(url, clock)
    (ann,) = _users(q, "ann")
    item = q.next_items(ann, "edit", want=1)[0]
    with pytest.raises(QueueError, match="at least one reason"):
        q.decide(ann, item, "reject")
    with pytest.raises(QueueError, match="needs a note"):
        q.decide(ann, item, "reject", ["other"])
    with pytest.raises(QueueError, match="unknown reason"):
        q.decide(ann, item, "reject", ["blurry"])
    with pytest.raises(QueueError, match="verdict"):
        q.decide(ann, item, "maybe")
    q.decide(ann, item, "accept")
    qa_items = q.next_items(ann, "qa", want=2)
    assert len(qa_items) == 1
    view = q.get_item(ann, qa_items[0])
    assert view.stage == "qa" and [x["qid"] for x in view.questions] == ["Q1", "Q2", "Q3"]
    mc = view.questions[1]
    with pytest.raises(QuestionError, match="gold"):
        q.decide(ann, view.id, "accept", question_updates={mc["id"]: {"gold": "F"}})
    assert q.get_item(ann, view.id).questions[1]["gold"] == "B"  # nothing written on a refused edit
    q.decide(
        ann,
        view.id,
        "accept",
        question_updates={
            mc["id"]: {"text": "What lies on the table?", "gold": "b"},
            view.questions[2]["id"]: {"invalid": True},
        },
    )
    after = q.get_item(ann, view.id).questions
    assert after[1]["text"] == "What lies on the table?" and after[1]["gold"] == "B" and after[1]["edited"]
    assert after[2]["valid"] is False


def test_k2_disagreement_goes_to_adjudication(filled_run, clock):
    _, url, _, _ = filled_run
    q = _queue(url, clock, k=2)
    ann, bob, cat = _users(q, "ann", "bob", "cat")
    (admin,) = _users(q, "boss", role="admin")
    a = q.next_items(ann, "edit", want=1)[0]
    b = q.next_items(bob, "edit", want=1)[0]
    assert a == b  # k = 2: the same item goes to two annotators
    assert q.next_items(cat, "edit", want=1)[0] != a  # but not to a third
    q.decide(ann, a, "accept")
    q.decide(bob, a, "reject", ["ghost_remnants"])
    assert q.disputed() == [a]
    assert q.next_items(ann, "qa") == []
    with pytest.raises(NotAllowed):
        q.adjudicate(ann, a, "accept")
    q.adjudicate(admin, a, "accept", "remnant is a shadow")
    assert q.disputed() == []
    assert q.resolutions()[a] == ("accept", 2)
    assert len(q.next_items(cat, "qa", want=1)) == 1


def test_undo_and_change_previous_decision(filled_run, clock):
    _, url, _, _ = filled_run
    q = _queue(url, clock)
    (ann,) = _users(q, "ann")
    first = q.next_items(ann, "edit", want=1)[0]
    e1 = q.decide(ann, first, "accept")
    second = q.next_items(ann, "edit", want=1)[0]
    q.decide(ann, second, "reject", ["artifacts"])
    assert q.retract_last(ann, "edit") == second
    assert q.resolutions()[second] == ("pending", 0)
    assert q.next_items(ann, "edit", want=2)[0] == second  # the undone item comes back first
    q.decide(ann, second, "accept")
    assert q.previous(ann, "edit") is not None
    assert q.previous(ann, "edit", before_event=e1 + 1) == (first, e1)
    q.decide(ann, first, "reject", ["not_executed"])  # changing an earlier decision needs no lease
    assert q.resolutions()[first][0] == "reject"


def test_annotators_see_only_their_items(filled_run, clock):
    _, url, _, _ = filled_run
    q = _queue(url, clock)
    ann, bob = _users(q, "ann", "bob")
    (admin,) = _users(q, "boss", role="admin")
    mine = q.next_items(ann, "edit", want=1)[0]
    with pytest.raises(NotAllowed):
        q.get_item(bob, mine)
    with pytest.raises(LeaseLost, match="another annotator holds it"):
        q.decide(bob, mine, "accept")
    assert q.get_item(admin, mine).id == mine


def test_refusal_messages_say_what_is_true_now(filled_run, clock):
    """Deciding an item one does not hold names the actual reason: never "no longer leased"
    for an item that was never the annotator's."""
    _, url, _, _ = filled_run
    q = _queue(url, clock, minutes=15)
    ann, bob, cy = _users(q, "ann", "bob", "cy")
    theirs = q.next_items(ann, "edit", want=1)[0]
    with pytest.raises(LeaseLost) as held:
        q.decide(bob, theirs, "accept")
    assert str(held.value) == f"item {theirs} is not leased to 'bob': another annotator holds it; take the next item"
    q.decide(ann, theirs, "accept")
    with pytest.raises(LeaseLost, match=r"it needs no more decisions \(outcome: accept\)"):
        q.decide(bob, theirs, "accept")
    expired = q.next_items(cy, "edit", want=1)[0]
    clock.advance(16 * 60)
    with pytest.raises(
        LeaseLost, match=r"it is not leased to anyone \(leases end 15 min after an annotator's last request\)"
    ):
        q.decide(bob, expired, "accept")
    qa_closed = next(i.id for i in q.items() if i.stage == "qa" and i.parent_id != theirs)
    with pytest.raises(LeaseLost, match="not open for review"):
        q.decide(bob, qa_closed, "accept")


def test_events_are_append_only(filled_run, clock):
    _, url, _, _ = filled_run
    q = _queue(url, clock, k=2)
    ann, bob = _users(q, "ann", "bob")
    (admin,) = _users(q, "boss", role="admin")
    seen: list[tuple] = []
    steps = [
        lambda: q.decide(ann, q.next_items(ann, "edit", 1)[0], "accept"),
        lambda: q.decide(bob, q.next_items(bob, "edit", 1)[0], "reject", ["other"], "sky changed"),
        lambda: q.retract_last(bob, "edit"),
        lambda: q.decide(bob, q.next_items(bob, "edit", 1)[0], "reject", ["artifacts"]),
        lambda: q.adjudicate(admin, q.disputed()[0], "reject"),
    ]
    for step in steps:
        step()
        now = _snapshot(q)
        assert now[: len(seen)] == seen  # earlier rows unchanged
        assert len(now) > len(seen)
        seen = now
    kinds = [e[2] for e in seen]
    assert {"decision", "retract", "adjudication", "resolution"} <= set(kinds)
