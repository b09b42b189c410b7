"""Gold that follows the image: canonical BEAF names, same_type_elsewhere, article agreement,
near-duplicate MC options, ascending counting options."""

from __future__ import annotations

from tasks.builtin_tasks.relational_erasure.qa import slots_from_analysis as re_slots
from tasks.stages.qa.beaf import beaf_questions
from tasks.stages.qa.checks import LengthRule, check_options
from tasks.stages.qa.render import RenderSettings, render_questions
from tasks.stages.qa.text import option_key

BASE = {"edit_id": "e1", "editor": "classical", "task": "relational_erasure", "variant": "targeted"}


def test_beaf_compares_canonical_classes():
    # "Wheels" outside the erased box is the removed class ("wheel"); "skateboard wheels" is another one.
    ctx = [{"name": "Wheels", "box": [200, 200, 10, 10]}, {"name": "skateboard", "box": [0, 0, 100, 20]}]
    out = beaf_questions("wheel", ctx, [0, 20, 10, 10], BASE, "a.png", "b.png")
    assert [p.reason for p in out.problems] == ["beaf_removed_object_still_present"]
    out = beaf_questions("skateboard wheels", ctx, [0, 20, 10, 10], BASE, "a.png", "b.png")
    removed = [r for r in out.rows if r["dimension"] == "removed"]
    assert removed and removed[0]["text"] == "Is there a skateboard wheel in this image?"
    assert [r["gold"] for r in removed] == ["Yes", "No"]
    present = {r["text"] for r in out.rows if r["dimension"] == "present"}
    assert "Is there a wheel in this image?" in present  # singular, with its article


def test_beaf_drops_the_removed_question_when_the_analysis_sees_another():
    out = beaf_questions("apple", [], [0, 0, 10, 10], BASE, "a.png", "b.png", same_type_elsewhere=True)
    assert [p.reason for p in out.problems] == ["beaf_removed_object_still_present"]
    assert all(r["dimension"] != "removed" for r in out.rows)


def test_re_object_agrees_with_its_article():
    slots = re_slots({"B_name": "wheels", "B_count_descriptor": "a"})
    assert slots["B"] == "a wheel" and slots["B_name"] == "wheel"


def test_near_duplicate_options_are_rejected():
    for a, b in (("grey", "gray"), ("20", "20.0"), ("The black sunglasses", "Black sunglasses"), ("a cup", "cups")):
        assert option_key(a) == option_key(b)
        bad = check_options([a, b, "something else", "another one"], 0, LengthRule())
        assert [r for r, _ in bad] == ["mc_near_duplicate_options"], (a, b, bad)
    assert not check_options(["red", "blue", "20", "21"], 0, LengthRule())


def test_counting_options_ascend_with_the_gold_letter_on_the_count():
    values = {"count": 23, "class_name": "apples"}
    from tasks.builtin_tasks.dense_counting.qa import count_slots as dc_slots
    from tasks.stages.qa import mc

    slots, plan = dc_slots(23, "apples", mc.question_seed(0, "e1", "dc"))
    out = render_questions(
        "dense_counting", slots, dict(BASE, task="dense_counting"), {"original": ["a.png"]}, RenderSettings()
    )
    for qid in ("Q7", "Q8"):
        (row,) = [r for r in out.rows if r["qid"] == qid]
        firsts = [int(o.split("-")[0]) for o in row["options"]]
        assert firsts == sorted(firsts)
        right = row["options"]["ABCDE".index(row["gold"])]
        nums = [int(x) for x in right.split("-")]
        assert (nums == [23]) if len(nums) == 1 else (nums[0] <= 23 <= nums[1])
    assert values["count"] == plan.count
