"""When qa output changes under an existing queue (e.g. ``qa.beaf: false``), the review stage
reconciles: items whose questions are gone are retired (an event; their decisions stay in the
log), new ones are added, the summary says so, and putting the questions back restores them."""

from __future__ import annotations

from review_helpers import fill_queue, make_run, write_stage
from storage.hashing import stable_id
from storage.schemas import QUESTIONS
from tasks.review.accounts import add_user, get_user
from tasks.review.export import export_review
from tasks.review.queue import ReviewQueue
from tasks.review.rules import NotAllowed

import pytest


def _with_beaf(questions, edits, n):
    """BEAF questions for the first ``n`` edits (as qa.beaf: true adds them)."""
    extra = []
    for e in edits[:n]:
        base = next(q for q in questions if q["edit_id"] == e["id"])
        extra.append({**base, "id": stable_id(e["id"], "beaf", "B1"), "question_set": "beaf", "qid": "B1", "text": "Is the cup gone?", "qtype": "YN", "options": None, "gold": "Yes"})
    return questions + extra


def test_changed_qa_output_retires_and_adds_items(tmp_path):
    run, edits, questions = make_run(tmp_path / "run", 6)
    write_stage(run, "qa", "questions", QUESTIONS, _with_beaf(questions, edits, 3))
    first = fill_queue(run)
    url = first.extra["queue_db"]
    assert first.extra["queue_items_added"] == 12 and "note" not in first.extra
    q = ReviewQueue.open(url)
    add_user(q.engine, "ann", "annotator")
    ann = get_user(q.engine, "ann")
    while ids := q.next_items(ann, "edit", want=1):
        q.decide(ann, ids[0], "accept")
    qa_ids = q.next_items(ann, "qa", want=6)
    for i in qa_ids[:4]:
        q.decide(ann, i, "accept")
    held = qa_ids[4:]  # leased, not decided
    old_qa = {r.edit_id: r.id for r in q.items() if r.stage == "qa"}
    decisions_before = [e.id for e in q.events(kinds=("decision",))]

    # qa rebuilt with qa.beaf: false -> the three edits with BEAF questions have other questions now
    write_stage(run, "qa", "questions", QUESTIONS, questions)
    second = fill_queue(run)
    assert second.extra["queue_items_retired"] == 3 and second.extra["queue_items_added"] == 3
    assert "3 items retired" in second.extra["note"] and "3 added" in second.extra["note"]
    items = q.items()
    live = {r.id for r in q.items(live_only=True)}
    assert len(items) == 15 and len(live) == 12  # nothing deleted
    retired = {old_qa[e["id"]] for e in edits[:3]}
    assert retired.isdisjoint(live) and all(old_qa[e["id"]] in live for e in edits[3:])
    assert [e.id for e in q.events(kinds=("decision",))] == decisions_before  # decisions kept in the log
    assert {e.item_id for e in q.events(kinds=("retire",))} == retired
    for i in retired & set(held):
        with pytest.raises(NotAllowed, match="retired"):
            q.decide(ann, i, "accept")
    # the replacements are open for review (their edits were accepted) and export sees only live items
    fresh = q.next_items(ann, "qa", want=6)
    assert set(fresh).isdisjoint(retired) and len(set(fresh) - set(held)) == 3
    for i in q.next_items(ann, "qa", want=6):
        q.decide(ann, i, "accept")
    summary = export_review(run, q)
    assert summary.verified_edits == 6 and summary.verified_questions == 18  # no BEAF question exported
    assert q.progress(ann, "qa")["total"] == 6

    # a rerun with the same qa output changes nothing; the old questions back restore the old items
    assert fill_queue(run).extra["queue_items_added"] == 0
    write_stage(run, "qa", "questions", QUESTIONS, _with_beaf(questions, edits, 3))
    third = fill_queue(run)
    assert third.extra["queue_items_restored"] == 3 and third.extra["queue_items_retired"] == 3 and third.extra["queue_items_added"] == 0
    assert {r.id for r in q.items(live_only=True)} >= retired
