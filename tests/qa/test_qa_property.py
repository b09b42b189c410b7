"""Property tests: whatever the analysis fields hold, a question is either well formed with the
right gold answer, or it is a problem (future reject) - never an empty slot, a duplicated option
or a wrong gold letter."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from qa_helpers import AT_PLAN, CA_FIELDS, RE_FIELDS, make_edit

from tasks.builtin_tasks.dense_counting.counting import check_counts, plan_counts
from tasks.stages.qa.mc import LETTERS
from tasks.stages.qa.render import RenderSettings
from tasks.stages.qa.synthesis import questions_for_edit
from tasks.stages.qa.templates import question_set
from tasks.stages.qa.text import normalize_option

# A tiny alphabet makes collisions (duplicates differing only in case/spacing) and blanks likely.
VALUE = st.text(alphabet="abAB  .", min_size=0, max_size=5)
RELAXED = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _c(v: Any) -> str:
    """A value as it appears in an option: single-spaced, first letter upper-cased."""
    text = " ".join(str(v).split())
    return text[:1].upper() + text[1:]


def expected_correct(task: str, f: dict[str, Any]) -> dict[str, str]:
    """The right option per MC qid, written out independently of the templates."""
    if task == "relational_erasure":
        return {
            "Q9": _c(f["nothing_desc"]),
            "Q10": _c(f["nothing_desc"]),
            "Q11": "No such object",
            "Q12": "None of these",
        }
    if task == "counterfactual_attribute":
        return {
            "Q9": _c(f["C_new_attribute"]),
            "Q10": _c(f["C_new_attribute"]),
            "Q11": "No such object",
            "Q12": "None of these",
        }
    a, b, c = (" ".join(str(f[k]).split()) for k in ("A", "B", "C"))
    return {
        "Q10": f"At {a}, the {b} {c}.",
        "Q11": f"The {b} {c}.",
        "Q12": f"The {b} at {a}",
        "C4": "Nothing; it is unchanged",
        "C5": "Nothing changed there",
        "C6": "No object did",
    }


def check_rows(task: str, fields: dict[str, Any], mode: str) -> None:
    out = questions_for_edit(make_edit(task), fields, RenderSettings(mc_mode=mode))
    right = expected_correct(task, fields)
    qs = question_set(task)
    all_qids = {q.qid for q in qs.main} | {q.qid for q in qs.control}
    emitted = {r["qid"] for r in out.rows}
    refused = {p.qid for p in out.problems}
    assert emitted | refused == all_qids and not (emitted & refused)  # nothing silently lost
    for p in out.problems:
        assert p.reason and p.reason == p.reason.lower() and p.detail
    for r in out.rows:
        assert r["text"].strip() and "{" not in r["text"] and "}" not in r["text"]
        if r["qtype"] == "YN":
            assert r["gold"] in ("Yes", "No")
        elif r["qtype"] == "SA":
            assert r["gold"].strip() and r["rubric_json"]
        else:
            opts = r["options"]
            assert all(normalize_option(o) for o in opts)
            assert len({normalize_option(o) for o in opts}) == len(opts)
            assert opts[LETTERS.index(r["gold"])] == right[r["qid"]]


@RELAXED
@given(
    st.fixed_dictionaries({k: VALUE for k in RE_FIELDS if isinstance(RE_FIELDS[k], str)}),
    st.sampled_from(["shuffle", "cyclic"]),
)
def test_relational_erasure_property(values: dict[str, str], mode: str) -> None:
    check_rows("relational_erasure", {**RE_FIELDS, **values}, mode)


@RELAXED
@given(
    st.fixed_dictionaries({k: VALUE for k in CA_FIELDS if isinstance(CA_FIELDS[k], str) and k != "A_number"}),
    st.sampled_from(["shuffle", "cyclic"]),
)
def test_counterfactual_attribute_property(values: dict[str, str], mode: str) -> None:
    check_rows("counterfactual_attribute", {**CA_FIELDS, **values}, mode)


LISTS = (
    "overall_distractors",
    "location_distractors",
    "object_location_distractors",
    "b_prime_distractors",
    "a_prime_distractors",
    "c_prime_objects",
)


@RELAXED
@given(
    st.fixed_dictionaries({k: VALUE for k in ("A", "B", "C", "A_prime", "B_prime", "C_prime")}),
    st.fixed_dictionaries({k: st.lists(VALUE, min_size=0, max_size=3) for k in LISTS}),
    st.sampled_from(["delete", "add", "replace", "move"]),
    st.sampled_from(["shuffle", "cyclic"]),
)
def test_alteration_tracing_property(
    values: dict[str, str], lists: dict[str, list[str]], kind: str, mode: str
) -> None:
    check_rows("alteration_tracing", {**AT_PLAN, **values, **lists, "edit_type": kind}, mode)


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=1, max_value=100_000), st.integers(min_value=0, max_value=2**63))
def test_dense_counting_numbers_always_valid(count: int, seed: int) -> None:
    plan = plan_counts(count, seed)
    assert check_counts(plan) == []
    assert plan.count in plan.mc_counts and plan.sa_range[1] - plan.sa_range[0] + 1 <= 6


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=-5, max_value=5000), st.sampled_from(["shuffle", "cyclic"]))
def test_dense_counting_property(count: int, mode: str) -> None:
    out = questions_for_edit(
        make_edit("dense_counting"), {"count": count, "class_name": "bead"}, RenderSettings(mc_mode=mode)
    )
    if count < 1:
        assert out.rows == [] and out.problems
        return
    assert out.problems == []
    for r in out.rows:
        if r["qid"] == "Q7":
            assert r["options"][LETTERS.index(r["gold"])] == str(count)
        if r["qid"] == "Q8":
            lo, hi = (int(x) for x in r["options"][LETTERS.index(r["gold"])].split("-"))
            assert lo <= count <= hi
