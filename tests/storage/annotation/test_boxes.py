"""storage/annotation/boxes.py: the one box-geometry module ([x, y, w, h])."""

from __future__ import annotations

import pytest

from storage.annotation.boxes import grown, intersection, intersects, iou, overlap


def test_intersection_and_iou() -> None:
    assert intersection([0, 0, 10, 10], [5, 5, 10, 10]) == 25
    assert intersection([0, 0, 10, 10], [20, 20, 5, 5]) == 0
    assert iou([0, 0, 10, 10], [5, 5, 10, 10]) == pytest.approx(25 / 175)
    assert iou([0, 0, 0, 0], [0, 0, 0, 0]) == 0.0


def test_overlap_is_the_covered_fraction_of_the_first_box() -> None:
    assert overlap([0, 0, 10, 10], [0, 0, 5, 10]) == 0.5
    assert overlap([0, 0, 5, 10], [0, 0, 10, 10]) == 1.0
    assert overlap(None, [0, 0, 1, 1]) == 0.0 and overlap([0, 0, 1, 1], []) == 0.0


def test_intersects_ignores_touching_edges_and_grown_adds_a_margin() -> None:
    assert intersects([0, 0, 10, 10], [9, 9, 5, 5])
    assert not intersects([0, 0, 10, 10], [10, 0, 5, 5])
    assert grown([10, 10, 4, 4], 3) == [7, 7, 10, 10]
    assert intersects(grown([0, 0, 10, 10], 1), [10, 0, 5, 5])
