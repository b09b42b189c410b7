"""MC layout primitives: seeded permutations and rotations."""

from __future__ import annotations

from itertools import permutations

import pytest

from tasks.stages.qa import mc
from tasks.stages.qa.text import plural, with_article


@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_permutation_covers_every_order_exactly_once(n: int) -> None:
    from math import factorial

    seen = {tuple(mc.permutation(n, k)) for k in range(factorial(n))}
    assert seen == set(permutations(range(n)))


def test_shuffle_tracks_the_gold_and_is_stable() -> None:
    opts = ["right", "w1", "w2", "w3"]
    for seed in range(50):
        lay = mc.shuffled(opts, 0, seed)
        assert lay.options[mc.LETTERS.index(lay.gold)] == "right" and sorted(lay.options) == sorted(opts)
    # the seed is a pure function of its inputs: pinned so a change of hashing is noticed
    assert mc.question_seed(0, "edit", "main/Q9") == mc.question_seed(0, "edit", "main/Q9")
    assert mc.question_seed(0, "edit", "main/Q9") != mc.question_seed(1, "edit", "main/Q9")
    assert mc.shuffled(opts, 0, 123456789) == mc.Layout(
        ("w3", "w1", "w2", "right"), "D", 0
    )  # 123456789 % 24 = 21 = Lehmer (3, 1, 1, 0)


def test_rotations() -> None:
    base = mc.Layout(("a", "b", "c", "d", "e"), "C", 0)
    rots = mc.rotations(base)
    assert [r.rotation for r in rots] == [0, 1, 2, 3, 4]
    assert [r.options[mc.LETTERS.index(r.gold)] for r in rots] == ["c"] * 5
    assert rots[2].options == ("c", "d", "e", "a", "b") and rots[2].gold == "A"
    with pytest.raises(ValueError, match="qa.mc_mode"):
        mc.layouts(["a", "b"], 0, 1, "random")


def test_text_helpers() -> None:
    assert [
        plural(w)
        for w in ("cupcake", "glass", "bus", "strawberry", "person", "sea shells", "box", "knife", "traffic light")
    ] == ["cupcakes", "glasses", "buses", "strawberries", "people", "sea shells", "boxes", "knives", "traffic lights"]
    assert [
        with_article(w) for w in ("apple", "rope", "hour glass", "umbrella", "unicycle", "two cats", "the cat")
    ] == ["an apple", "a rope", "an hour glass", "an umbrella", "a unicycle", "two cats", "the cat"]


def test_fixed_orders_keep_the_open_option_in_place() -> None:
    base = mc.Layout(("red", "None of these", "blue", "green"), "B", 0)
    orders = mc.fixed_orders(base, 1)
    assert [o.rotation for o in orders] == list(range(6))
    assert orders[0] == base
    assert {o.options for o in orders} == {
        ("red", "None of these", "blue", "green"),
        ("red", "None of these", "green", "blue"),
        ("blue", "None of these", "red", "green"),
        ("blue", "None of these", "green", "red"),
        ("green", "None of these", "red", "blue"),
        ("green", "None of these", "blue", "red"),
    }
    assert all(o.gold == "B" for o in orders)  # the open option is the right answer here
    gold_blue = mc.fixed_orders(mc.Layout(("red", "None of these", "blue", "green"), "C", 0), 1)
    assert all(o.options[mc.LETTERS.index(o.gold)] == "blue" for o in gold_blue)
    assert sorted(o.gold for o in gold_blue) == ["A", "A", "C", "C", "D", "D"]


def test_cyclic_layouts_use_fixed_orders_only_with_an_open_option() -> None:
    opts = ["None of these", "a", "b", "c"]
    assert len(mc.layouts(opts, 0, 5, "cyclic", fixed=0)) == 6
    assert len(mc.layouts(opts, 0, 5, "cyclic")) == 4
    assert len(mc.layouts(opts, 0, 5, "shuffle", fixed=0)) == 1
