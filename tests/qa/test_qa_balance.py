"""``qa.balance_yes_no`` on one edit's questions: the twins rotate, and with it off the paper's set
is unchanged. The balanced build (audit 1.0, no trivial model above 60 %) is in test_audit.py,
which reuses its demo build."""

from __future__ import annotations

from collections import Counter

import pytest

from tasks.stages.qa.render import RenderSettings, render_questions
from tasks.stages.qa.templates import TemplateError, compile_set

CA_VALUES = {
    "A_object": "banana",
    "A_object_a": "a banana",
    "attribute_type": "colour",
    "B_original_attribute": "yellow",
    "C_new_attribute": "blue",
    "D_location": "in the upper left part of the image",
    "D_alt_location": "in the lower right part of the image",
    "plausible_wrong_attribute_1": "green",
    "plausible_wrong_attribute_2": "brown",
    "absurd_attribute_1": "see-through like glass",
    "absurd_attribute_2": "glowing like a lamp",
    "wrong_location_1": "on the table",
    "wrong_location_2": "on the floor",
}


def _render(balance: bool, edit_id: str = "e1") -> list[dict]:
    base = {"edit_id": edit_id, "editor": "classical", "task": "counterfactual_attribute", "variant": "targeted"}
    out = render_questions(
        "counterfactual_attribute", CA_VALUES, base, {"edited": ["img/e.png"]}, RenderSettings(balance=balance)
    )
    assert not out.problems, out.problems
    return out.rows


def test_twins_rotate_and_off_is_the_papers_set():
    off, on = _render(False), _render(True)
    assert all(r["gold"] == "No" for r in off if r["qtype"] == "YN")
    assert [r for r in on if r["question_set"] == "main" and r["qtype"] != "YN"] == [
        r for r in off if r["qtype"] != "YN"
    ]
    main_yn = [r for r in on if r["question_set"] == "main" and r["qtype"] == "YN"]
    assert [r["qid"] for r in main_yn] == ["Q1", "Q2", "Q3", "Q4"]
    assert Counter(r["gold"] for r in main_yn) == {"Yes": 2, "No": 2}  # every other one, per edit
    assert any(r["text"] == "Is the colour of the banana in the upper left part of the image blue?" for r in on)
    # the rotation depends on the edit: over a few edits Q1 is targeted in both forms
    assert {
        next(r["gold"] for r in _render(True, f"e{i}") if r["question_set"] == "main" and r["qid"] == "Q1")
        for i in range(8)
    } == {"Yes", "No"}


def test_a_twin_must_pair_a_no_question():
    data = {
        "task": "t",
        "slots": ["x"],
        "questions": [{"qid": "Q1", "type": "YN", "text": "Is it {x}?", "gold": "Yes"}],
        "twins": [{"qid": "Q1", "text": "Is it not {x}?", "gold": "Yes"}],
    }
    with pytest.raises(TemplateError, match="must name a YN question whose gold is 'No'"):
        compile_set(data, "t.yaml")
    data["questions"][0]["gold"] = "No"
    data["twins"][0]["gold"] = "No"
    with pytest.raises(TemplateError, match="gold 'Yes'"):
        compile_set(data, "t.yaml")
