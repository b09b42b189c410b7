"""Inline question edits: type-specific validation and the events they become."""

from __future__ import annotations

import json

import pytest

from tasks.review.validation import QuestionError, apply_question_update, question_state

MC = {
    "id": "q2",
    "qid": "Q2",
    "qtype": "MC",
    "text": "What is on the table?",
    "options": ["a cup", "nothing"],
    "gold": "B",
}
YN = {"id": "q1", "qid": "Q1", "qtype": "YN", "text": "Is there a cup?", "options": None, "gold": "No"}
SA = {"id": "q3", "qid": "Q3", "qtype": "SA", "text": "Describe it.", "options": None, "gold": "A table."}


@pytest.mark.parametrize(
    "question, update, field",
    [
        (MC, {"gold": "C"}, "gold"),  # MC gold must be one of the options' letters
        (MC, {"options": ["a cup"]}, "options"),
        (MC, {"options": ["a cup", "A Cup"]}, "options"),
        (YN, {"gold": "maybe"}, "gold"),
        (YN, {"text": "   "}, "text"),
        (SA, {"gold": ""}, "gold"),
    ],
)
def test_invalid_edits_name_question_and_field(question, update, field):
    with pytest.raises(QuestionError) as err:
        apply_question_update({**question, "valid": True}, update)
    assert err.value.question_id == question["id"] and err.value.field == field


def test_edit_events_and_state():
    q = {**MC, "valid": True}
    assert (
        apply_question_update(q, {"text": MC["text"], "options": MC["options"], "gold": "b"}) == []
    )  # no change, no event
    events = apply_question_update(q, {"text": "What lies on the table?", "gold": "A"})
    assert [e["kind"] for e in events] == ["question_edit"]
    assert json.loads(events[0]["before_json"])["gold"] == "B" and json.loads(events[0]["after_json"])["gold"] == "A"
    # marking invalid skips content checks and records the validity flip
    events2 = apply_question_update(q, {"gold": "Z", "invalid": True})
    assert [e["kind"] for e in events2] == ["question_validity"]
    replay = [{"kind": e["kind"], "question_id": "q2", "after": json.loads(e["after_json"])} for e in events + events2]
    (state,) = question_state([MC], replay)
    assert (
        state["text"] == "What lies on the table?"
        and state["gold"] == "A"
        and state["valid"] is False
        and state["edited"]
    )
    assert apply_question_update({**MC, "valid": False}, {"invalid": False})[0]["after_json"] == '{"valid": true}'
