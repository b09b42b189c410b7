"""The checks: bad slot values become problems naming the rule, never malformed questions."""

from __future__ import annotations

import pytest
from qa_helpers import AT_PLAN, CA_FIELDS, RE_FIELDS, make_edit

from tasks.builtin_tasks.dense_counting.counting import CountPlan, check_counts, plan_counts
from tasks.stages.qa.checks import LengthRule, check_options
from tasks.stages.qa.render import RenderSettings
from tasks.stages.qa.synthesis import problem_rejects, questions_for_edit


def reasons(task: str, fields: dict) -> dict[str, set[str]]:
    out = questions_for_edit(make_edit(task), fields, RenderSettings())
    by: dict[str, set[str]] = {}
    for p in out.problems:
        by.setdefault(p.qid, set()).add(p.reason)
    return by


def test_duplicate_options_are_rejected_case_and_space_insensitively() -> None:
    bad = {**RE_FIELDS, "attribute_option_2": "  RUBBER ", "attribute_option_1": "rubber"}
    got = reasons("relational_erasure", bad)
    assert got == {"Q11": {"mc_duplicate_options"}}
    assert check_options(["Hard  plastic", "hard plastic.", "x"], 2, LengthRule()) == [
        ("mc_duplicate_options", "options 1 and 2 are the same: 'hard plastic.'")
    ]


def test_correct_option_that_is_longest_by_far_is_rejected() -> None:
    long = "the whole underside is bare wood with the two trucks and nothing else at all"
    got = reasons("relational_erasure", {**RE_FIELDS, "nothing_desc": long})
    assert got == {"Q9": {"mc_correct_option_longest"}, "Q10": {"mc_correct_option_longest"}}
    # longest but not by a wide margin: fine
    assert (
        check_options(["a bare deck underside", "four black wheels", "two wheels", "tiny wheels"], 0, LengthRule())
        == []
    )
    # the rule's limits are configurable
    assert check_options(["abcdefghij", "abcd", "abc"], 0, LengthRule(ratio=2.0, min_gap=5)) != []
    assert check_options(["abcdefghij", "abcd", "abc"], 0, LengthRule(ratio=2.0, min_gap=7)) == []


def test_empty_or_missing_slot_rejects_only_the_questions_using_it() -> None:
    got = reasons("counterfactual_attribute", {**CA_FIELDS, "wrong_location_2": "   "})
    assert got == {"Q11": {"empty_slot"}}
    missing = {k: v for k, v in CA_FIELDS.items() if k != "B_original_attribute"}
    got = reasons("counterfactual_attribute", missing)
    # every question that names the original attribute (text, commonsense prefix, options or rubric) is refused
    assert set(got) == {f"Q{i}" for i in range(1, 13)}
    assert all(r == {"empty_slot"} for r in got.values())


def test_at_plan_with_a_missing_distractor_and_unknown_edit_type() -> None:
    plan = {**AT_PLAN, "location_distractors": AT_PLAN["location_distractors"][:2]}
    assert reasons("alteration_tracing", plan) == {"Q11": {"empty_slot"}}
    out = questions_for_edit(
        make_edit("alteration_tracing", edit_type="teleport"), {**AT_PLAN, "edit_type": "teleport"}, RenderSettings()
    )
    assert sorted({p.qid for p in out.problems}) == ["Q12", "Q5", "Q6", "Q7", "Q8", "Q9"]  # op_past in text or rubric
    assert all(p.reason == "empty_slot" and "op_past" in p.detail for p in out.problems)


def test_problem_rejects_name_edit_qid_and_rule() -> None:
    edit = make_edit("relational_erasure")
    out = questions_for_edit(edit, {**RE_FIELDS, "absurd_object_2": "Four  Teacups"}, RenderSettings())
    rej = problem_rejects(edit, out.problems)
    assert len(rej) == 1
    assert rej[0]["reason"] == "mc_duplicate_options" and rej[0]["stage"] == "qa"
    assert "edit-relational_erasure" in rej[0]["detail"] and "Q12" in rej[0]["detail"]
    assert len(out.rows) == 11  # the other questions survive


@pytest.mark.parametrize("count", [0, -3, 2.5, "12", None, True])
def test_dense_counting_rejects_invalid_counts(count: object) -> None:
    out = questions_for_edit(make_edit("dense_counting"), {"count": count, "class_name": "cupcake"}, RenderSettings())
    assert out.rows == [] and [p.reason for p in out.problems] == ["dc_invalid_count"]


def test_count_plan_checks_catch_each_broken_invariant() -> None:
    good = plan_counts(20, 5)
    assert check_counts(good) == []

    def broken(**kw: object) -> set[str]:
        return {r for r, _ in check_counts(CountPlan(**{**good.__dict__, **kw}))}

    assert broken(wrong_counts=(20, 25)) == {"dc_invalid_wrong_count"}
    assert broken(wrong_counts=(-1, 25)) == {"dc_invalid_wrong_count"}
    assert broken(yn_range=(21, 30)) == {"dc_range_misses_count"}
    assert broken(sa_range=(15, 21)) == {"dc_sa_range_too_wide"}
    assert broken(mc_counts=(1, 2, 3, 4, 5)) == {"dc_invalid_wrong_count"}
    assert "dc_range_width_unequal" in broken(mc_ranges=((0, 9), (10, 14), (15, 19), (20, 24)))
    assert "dc_range_misses_count" in broken(correct_range=(good.correct_range + 1) % 4)


def test_beaf_skips_the_removed_question_when_the_same_kind_remains() -> None:
    from tasks.stages.qa.beaf import beaf_questions

    base = {"edit_id": "e", "editor": "classical", "task": "alteration_tracing", "variant": "targeted"}
    ctx = [
        {"name": "cup", "box": [0, 0, 10, 10]},
        {"name": "cup", "box": [50, 50, 10, 10]},
        {"name": "plate", "box": [0, 0, 90, 90]},
    ]
    out = beaf_questions("cup", ctx, [0, 0, 10, 10], base, "images/aa/a.png", "images/bb/b.png")
    assert [p.reason for p in out.problems] == ["beaf_removed_object_still_present"]
    dims = sorted({r["dimension"] for r in out.rows})
    assert dims == ["absent", "present"] and all("cup" not in r["text"] for r in out.rows)
