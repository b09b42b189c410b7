"""Every qid of every task on the sample fields: text, gold answers, MC letters, cyclic rotations."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import pytest
from qa_helpers import AT_PLAN, CA_FIELDS, FIELDS, RE_FIELDS, make_edit

from tasks.stages.qa.mc import LETTERS
from tasks.stages.qa.render import RenderSettings
from tasks.stages.qa.synthesis import questions_for_edit
from tasks.stages.qa.templates import OPEN_OPTION
from tasks.stages.qa.text import sentence_case as sc


def render(
    task: str, fields: dict[str, Any] | None = None, **settings: Any
) -> tuple[dict[tuple[str, str], list[dict[str, Any]]], list[Any]]:
    out = questions_for_edit(make_edit(task), fields or FIELDS[task], RenderSettings(**settings))
    by: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in out.rows:
        by[(r["question_set"], r["qid"])].append(r)
    return by, out.problems


def answer_text(row: dict[str, Any]) -> str:
    """The option the MC gold letter points at."""
    return row["options"][LETTERS.index(row["gold"])]


def one(by: dict, qid: str, qset: str = "main") -> dict[str, Any]:
    rows = by[(qset, qid)]
    assert len(rows) == 1, (qid, rows)
    return rows[0]


def test_relational_erasure_every_qid() -> None:
    by, problems = render("relational_erasure")
    assert problems == []
    assert sorted(q for _, q in by) == sorted(f"Q{i}" for i in range(1, 13))
    f = RE_FIELDS
    for q in ("Q1", "Q2", "Q3", "Q4"):
        row = one(by, q)
        assert row["qtype"] == "YN" and row["gold"] == "No"
        assert f["A_location"] in row["text"]
    assert f["common_knowledge"] in one(by, "Q2")["text"] and f["common_knowledge"] in one(by, "Q6")["text"]
    assert "four skateboard wheels" in one(by, "Q1")["text"]
    assert f["attribute_value"] in one(by, "Q3")["text"] and f["absurd_object_1"] in one(by, "Q4")["text"]
    assert one(by, "Q5")["gold"] == f["remaining_at_A"]
    assert f["remaining_at_A"] in one(by, "Q6")["gold"] and f["B_name"] in one(by, "Q6")["gold"]
    assert one(by, "Q7")["gold"] == "There is no such object."
    assert one(by, "Q8")["gold"] == "Neither."
    for q in ("Q5", "Q6", "Q7", "Q8"):
        rubric = json.loads(one(by, q)["rubric_json"])
        assert rubric["removed_object"] == f["B_name"] and rubric["reference_answer"] == one(by, q)["gold"]
    assert answer_text(one(by, "Q9")) == sc(f["nothing_desc"])
    assert answer_text(one(by, "Q10")) == sc(f["nothing_desc"])
    assert set(one(by, "Q9")["options"]) == {
        sc(f[k]) for k in ("nothing_desc", "B_full_desc", "B_variant_1", "B_variant_2")
    }
    assert answer_text(one(by, "Q11")) == "No such object"
    assert answer_text(one(by, "Q12")) == "None of these"
    assert set(one(by, "Q12")["options"]) == {
        "None of these",
        "Four skateboard wheels",
        "Four teacups",
        "A sleeping cat",
    }  # one casing for all options
    dims = {q: one(by, q)["dimension"] for q in ("Q1", "Q2", "Q3", "Q4", "Q9", "Q10", "Q11", "Q12")}
    assert dims == {
        "Q1": "direct",
        "Q2": "commonsense",
        "Q3": "premise",
        "Q4": "absurd",
        "Q9": "direct",
        "Q10": "commonsense",
        "Q11": "premise",
        "Q12": "absurd",
    }
    for rows in by.values():
        assert rows[0]["images"] == ["images/bb/bb00.png"] and rows[0]["image_role"] == "edited"
        assert (
            rows[0]["edit_id"] == "edit-relational_erasure"
            and rows[0]["editor"] == "classical"
            and rows[0]["variant"] == "targeted"
        )


def test_counterfactual_attribute_every_qid() -> None:
    by, problems = render("counterfactual_attribute")
    assert problems == []
    assert sorted(q for _, q in by) == sorted(f"Q{i}" for i in range(1, 13))
    f = CA_FIELDS
    for q in ("Q1", "Q2", "Q3", "Q4"):
        row = one(by, q)
        assert row["gold"] == "No" and f["B_original_attribute"] in row["text"]
    assert "For a rope like this, the usual shape is thin and round." in one(by, "Q2")["text"]
    assert f["absurd_attribute_1"] in one(by, "Q4")["text"]
    assert one(by, "Q5")["gold"] == f["C_new_attribute"] == one(by, "Q6")["gold"]
    assert one(by, "Q7")["gold"] == "There is no such object." and f["D_alt_location"] in one(by, "Q7")["text"]
    assert one(by, "Q8")["gold"] == f"Neither; it is {f['C_new_attribute']}."
    rubric = json.loads(one(by, "Q5")["rubric_json"])
    assert (
        rubric["original_attribute"] == f["B_original_attribute"] and rubric["new_attribute"] == f["C_new_attribute"]
    )
    assert answer_text(one(by, "Q9")) == sc(f["C_new_attribute"]) == answer_text(one(by, "Q10"))
    assert sc(f["B_original_attribute"]) in one(by, "Q9")["options"]
    assert answer_text(one(by, "Q11")) == "No such object" and sc(f["D_location"]) in one(by, "Q11")["options"]
    assert answer_text(one(by, "Q12")) == "None of these" and sc(f["C_new_attribute"]) not in one(by, "Q12")["options"]


def test_alteration_tracing_every_qid_and_controls() -> None:
    by, problems = render("alteration_tracing")
    assert problems == []
    assert sorted(q for s, q in by if s == "main") == sorted(f"Q{i}" for i in range(1, 13))
    assert sorted(q for s, q in by if s == "control") == [f"C{i}" for i in range(1, 7)]
    p = AT_PLAN
    golds = {q: one(by, q)["gold"] for q in ("Q1", "Q2", "Q3", "Q4", "Q5", "Q6")}
    assert golds == {"Q1": "Yes", "Q2": "No", "Q3": "Yes", "Q4": "No", "Q5": "Yes", "Q6": "No"}
    assert "moved" in one(by, "Q5")["text"] and "moved" in one(by, "Q6")["text"]
    assert p["A"] in one(by, "Q3")["text"] and p["A"] in one(by, "Q4")["text"]
    assert one(by, "Q7")["gold"] == f"At {p['A']}, the {p['B']} {p['C']}."
    assert one(by, "Q8")["gold"] == f"The {p['B']} {p['C']}."
    assert one(by, "Q9")["gold"] == f"The {p['B']} at {p['A']}."
    assert answer_text(one(by, "Q10")) == one(by, "Q7")["gold"]
    assert set(one(by, "Q10")["options"]) - {one(by, "Q7")["gold"]} == {sc(d) for d in p["overall_distractors"]}
    assert answer_text(one(by, "Q11")) == one(by, "Q8")["gold"]
    assert answer_text(one(by, "Q12")) == f"The {p['B']} at {p['A']}"
    assert [one(by, q, "control")["gold"] for q in ("C1", "C2")] == ["No", "No"]
    assert p["A_prime"] in one(by, "C1", "control")["text"] and p["B_prime"] in one(by, "C2", "control")["text"]
    assert one(by, "C3", "control")["gold"] == "Nothing changed there."
    assert answer_text(one(by, "C4", "control")) == "Nothing; it is unchanged"
    assert answer_text(one(by, "C5", "control")) == "Nothing changed there"
    assert (
        answer_text(one(by, "C6", "control")) == "No object did" and p["C_prime"] in one(by, "C6", "control")["text"]
    )
    for rows in by.values():
        assert rows[0]["images"] == ["images/aa/aa00.png", "images/bb/bb00.png"] and rows[0]["image_role"] == "pair"


def test_alteration_tracing_without_controls() -> None:
    by, _ = render("alteration_tracing", control=False)
    assert {s for s, _ in by} == {"main"}


def _range(text: str) -> tuple[int, int]:
    lo, hi = text.split("-")
    return int(lo), int(hi)


@pytest.mark.parametrize("count", [1, 3, 7, 20, 57, 312])
def test_dense_counting_every_qid(count: int) -> None:
    by, problems = render("dense_counting", {"count": count, "class_name": "cupcake"})
    assert problems == []
    assert sorted(q for _, q in by) == sorted(f"Q{i}" for i in range(1, 9))
    q1 = one(by, "Q1")
    assert q1["gold"] == "Yes" and f" {count} cupcakes" in q1["text"]
    for q in ("Q2", "Q3"):
        row = one(by, q)
        wrong = int(row["text"].split("exactly ")[1].split()[0])
        assert row["gold"] == "No" and wrong != count and wrong >= 0
    q4 = one(by, "Q4")
    lo, hi = (int(x) for x in q4["text"].split("from ")[1].split(",")[0].split(" to "))
    assert q4["gold"] == "Yes" and lo <= count <= hi
    assert one(by, "Q5")["gold"] == str(count)
    lo, hi = _range(one(by, "Q6")["gold"])
    assert lo <= count <= hi and hi - lo + 1 <= 6
    assert json.loads(one(by, "Q6")["rubric_json"])["max_span"] == "6"
    q7 = one(by, "Q7")
    assert len(q7["options"]) == 5 and len(set(q7["options"])) == 5 and answer_text(q7) == str(count)
    assert all(int(o) >= 0 for o in q7["options"])
    q8 = one(by, "Q8")
    ranges = [_range(o) for o in q8["options"]]
    assert len({hi - lo for lo, hi in ranges}) == 1 and len(ranges) == 4
    holding = [o for o, (lo, hi) in zip(q8["options"], ranges) if lo <= count <= hi]
    assert holding == [answer_text(q8)]
    for rows in by.values():
        assert rows[0]["images"] == ["images/aa/aa00.png"] and rows[0]["image_role"] == "original"


@pytest.mark.parametrize("task", list(FIELDS))
def test_cyclic_mode_emits_every_rotation_with_gold_following(task: str) -> None:
    shuffled, _ = render(task)
    cyclic, problems = render(task, mc_mode="cyclic")
    assert problems == []
    for key, rows in cyclic.items():
        if rows[0]["qtype"] != "MC":
            assert len(rows) == 1 and rows[0]["rotation"] == 0
            continue
        n = len(rows[0]["options"])
        right = answer_text(shuffled[key][0])
        assert rows[0]["options"] == shuffled[key][0]["options"]  # presentation 0 is the shuffled layout
        open_slots = [i for i, o in enumerate(rows[0]["options"]) if OPEN_OPTION.match(o)]
        if open_slots:  # FREAK: the open option stays in its slot, the other three take all 3! = 6 orders
            (slot,) = open_slots
            assert [r["rotation"] for r in rows] == list(range(6))
            assert len({r["id"] for r in rows}) == 6 and len({tuple(r["options"]) for r in rows}) == 6
            for r in rows:
                assert answer_text(r) == right
                assert r["options"][slot] == rows[0]["options"][slot]
                assert sorted(r["options"]) == sorted(rows[0]["options"])
            real = [i for i in range(n) if i != slot]
            for j in real:  # every real option visits every free slot twice
                seen = [r["options"][j] for r in rows]
                assert sorted(seen) == sorted(rows[0]["options"][i] for i in real for _ in range(2))
            if right != rows[0]["options"][slot]:
                assert sorted(r["gold"] for r in rows) == sorted(LETTERS[i] for i in real for _ in range(2))
            continue
        assert [r["rotation"] for r in rows] == list(range(n))
        assert len({r["id"] for r in rows}) == n
        for r in rows:
            assert answer_text(r) == right
            assert r["options"] == rows[0]["options"][r["rotation"] :] + rows[0]["options"][: r["rotation"]]
        assert sorted(r["gold"] for r in rows) == sorted(LETTERS[:n])  # the gold visits every position


def test_rendering_is_deterministic_and_seed_dependent() -> None:
    a, _ = render("relational_erasure", run_seed=1)
    b, _ = render("relational_erasure", run_seed=1)
    assert a == b
    layouts = set()
    for seed in range(8):
        c, _ = render("relational_erasure", run_seed=seed)
        layouts.add(tuple(tuple(c[("main", q)][0]["options"]) for q in ("Q9", "Q10", "Q11", "Q12")))
    assert len(layouts) > 1
    ids = [r[0]["id"] for r in a.values()]
    assert len(ids) == len(set(ids))


def test_gold_letters_are_spread_over_positions() -> None:
    golds = defaultdict(int)
    for i in range(60):
        out = questions_for_edit(make_edit("relational_erasure", id=f"e{i}"), RE_FIELDS, RenderSettings())
        for r in out.rows:
            if r["qtype"] == "MC":
                golds[r["gold"]] += 1
    assert set(golds) == set("ABCD") and min(golds.values()) > 20


@pytest.mark.parametrize("task", ["relational_erasure", "counterfactual_attribute"])
def test_prior_option_is_recorded_in_every_presentation(task: str) -> None:
    from tasks.stages.qa.templates import question_set

    cyclic, _ = render(task, mc_mode="cyclic")
    templates = {t.qid: t for t in question_set(task).main}
    for (qset, qid), rows in cyclic.items():
        if rows[0]["qtype"] != "MC":
            assert all(r["prior_options"] is None for r in rows)
            continue
        t = templates[qid]
        assert t.prior, f"{task} {qid} declares no prior distractor"
        for r in rows:
            letters = r["prior_options"]
            assert len(letters) == len(t.prior) and r["gold"] not in letters
            # the recorded letters point at the same option texts in every presentation
            assert sorted(r["options"][LETTERS.index(x)] for x in letters) == sorted(
                rows[0]["options"][LETTERS.index(x)] for x in rows[0]["prior_options"]
            )
    if task == "relational_erasure":
        q9 = cyclic[("main", "Q9")][0]
        assert [q9["options"][LETTERS.index(x)] for x in q9["prior_options"]] == [sc(RE_FIELDS["B_full_desc"])]
