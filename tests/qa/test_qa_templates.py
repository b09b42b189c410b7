"""The template files: the question sets the spec asks for, and malformed templates fail loudly."""

from __future__ import annotations

import pytest

from tasks.stages.qa.templates import TemplateError, compile_set, question_set, template_tasks


def test_question_sets_match_the_spec() -> None:
    want = {
        "relational_erasure": 12,
        "counterfactual_attribute": 12,
        "alteration_tracing": 12,
        "dense_counting": 8,
    }
    assert set(want) <= set(template_tasks())
    for task in want:
        qs = question_set(task)
        assert [q.qid for q in qs.main] == [f"Q{i}" for i in range(1, want[task] + 1)]
    for task in ("relational_erasure", "counterfactual_attribute"):
        qs = question_set(task)
        types = [q.qtype for q in qs.main]
        assert types == ["YN"] * 4 + ["SA"] * 4 + ["MC"] * 4
        assert [q.dimension for q in qs.main] == ["direct", "commonsense", "premise", "absurd"] * 3
    at = question_set("alteration_tracing")
    assert [q.qtype for q in at.main] == ["YN"] * 6 + ["SA"] * 3 + ["MC"] * 3
    assert [q.dimension for q in at.main[6:]] == ["none", "location", "operation"] * 2
    assert [q.gold for q in at.main[:6]] == ["Yes", "No"] * 3  # positive / negated pairs
    assert [q.qid for q in at.control] == ["C1", "C2", "C3", "C4", "C5", "C6"]
    dc = question_set("dense_counting")
    assert [q.qtype for q in dc.main] == ["YN"] * 4 + ["SA"] * 2 + ["MC"] * 2
    assert len(dc.main[6].distractors) == 4 and len(dc.main[7].distractors) == 3


BASE = {"task": "t", "slots": ["x"], "questions": [{"qid": "Q1", "type": "YN", "text": "Is {x} here?", "gold": "No"}]}


@pytest.mark.parametrize(
    "change, message",
    [
        ({"questions": [{"qid": "Q1", "type": "YN", "text": "Is {y} here?", "gold": "No"}]}, "undeclared slots ['y']"),
        ({"questions": [{"qid": "Q1", "type": "YN", "text": "Is {x} here?", "gold": "Maybe"}]}, "YN gold must be"),
        (
            {"questions": [{"qid": "Q1", "type": "MC", "text": "Which?", "correct": "{x}", "distractors": ["a"]}]},
            "at least two 'distractors'",
        ),
        ({"questions": [{"qid": "Q1", "type": "SA", "text": "What?", "gold": "{x}"}]}, "need a rubric"),
        ({"questions": [{"qid": "Q1", "type": "TF", "text": "What?", "gold": "{x}"}]}, "type must be one of"),
        ({"questions": [{"qid": "Q1", "type": "YN", "text": "Is {x!r} here?", "gold": "No"}]}, "plain name"),
        ({"questions": BASE["questions"] * 2}, "duplicate qids"),
        ({"colour": 1}, "unknown keys ['colour']"),
        ({"derived": {"z": "{nope}"}}, "derived slot 'z'"),
    ],
)
def test_malformed_templates_fail_naming_file_and_question(change: dict, message: str) -> None:
    with pytest.raises(TemplateError) as err:
        compile_set({**BASE, **change}, "somewhere.yaml")
    assert message in str(err.value) and "somewhere.yaml" in str(err.value)


def test_unknown_task() -> None:
    with pytest.raises(KeyError, match="no question templates for task 'x'"):
        question_set("x")
