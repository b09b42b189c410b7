"""Kappa statistics against hand-computed values."""

from __future__ import annotations

import pytest

from tasks.review.agreement import cohen_kappa, fleiss_kappa, pairwise_cohen


def test_cohen_kappa_hand_computed():
    # 50 items: both yes 20, A yes / B no 5, A no / B yes 10, both no 15.
    a = ["y"] * 20 + ["y"] * 5 + ["n"] * 10 + ["n"] * 15
    b = ["y"] * 20 + ["n"] * 5 + ["y"] * 10 + ["n"] * 15
    # p_o = 35/50 = 0.7; p_e = 0.5*0.6 + 0.5*0.4 = 0.5; kappa = 0.2/0.5
    assert cohen_kappa(a, b) == pytest.approx(0.4)
    assert cohen_kappa(["y", "n"], ["y", "n"]) == pytest.approx(1.0)
    assert cohen_kappa(["y", "n"], ["n", "y"]) == pytest.approx(-1.0)
    assert cohen_kappa(["y", "y"], ["y", "y"]) is None  # chance agreement 1: undefined
    assert cohen_kappa([], []) is None
    with pytest.raises(ValueError):
        cohen_kappa(["y"], [])


def test_fleiss_kappa_textbook_table():
    # 10 subjects, 14 raters, 5 categories (the classic worked example): kappa = 0.210
    table = [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]
    ratings = [[c for c, n in enumerate(row) for _ in range(n)] for row in table]
    assert fleiss_kappa(ratings) == pytest.approx(0.2099, abs=5e-4)


def test_fleiss_small_cases():
    assert fleiss_kappa([["a", "a"], ["r", "r"]]) == pytest.approx(1.0)
    # two raters: Fleiss reduces to Scott's pi. Items: (a,a), (a,r), (r,r), (r,r)
    # P_bar = (1 + 0 + 1 + 1)/4 = 0.75; p_a = 3/8, p_r = 5/8; P_e = 34/64; pi = (0.75 - 0.53125)/0.46875
    assert fleiss_kappa([["a", "a"], ["a", "r"], ["r", "r"], ["r", "r"]]) == pytest.approx(
        (0.75 - 34 / 64) / (1 - 34 / 64)
    )
    assert fleiss_kappa([]) is None
    assert fleiss_kappa([["a"], ["r"]]) is None


def test_pairwise_cohen_needs_shared_items():
    labels = {"ann": {"1": "a", "2": "r", "3": "a"}, "bob": {"1": "a", "2": "r", "4": "a"}, "cat": {"9": "a"}}
    out = pairwise_cohen(labels, min_shared=2)
    assert list(out) == [("ann", "bob")]
    assert out[("ann", "bob")] == (pytest.approx(1.0), 2)
