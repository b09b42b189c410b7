"""MHALO span metrics on hand-computed cases."""

import pytest

from prompts.eval_parsing import Span, canonical_type, parse_tagged, render_tagged, spans_from_phrases
from tasks.release.evaluate.mhalo import f1_iou, f1_m, max_matching, score_detections


def S(a, b, t=None):
    return Span(a, b, t)


def test_exact_match():
    assert f1_m([S(1, 3)], [S(1, 3)]) == 1.0
    assert f1_iou([S(1, 3)], [S(1, 3)]) == 1.0


def test_prediction_inside_reference():
    # PM_R = |pred|/|ref| = 2/4; PM_P = 0 (no reference inside the prediction) -> F1_M = 0
    assert f1_m([S(1, 3)], [S(0, 4)]) == 0.0
    # IoU = 2/4 = 0.5 >= 0.5 -> matched -> 2*1/(1+1)
    assert f1_iou([S(1, 3)], [S(0, 4)]) == 1.0
    assert f1_iou([S(1, 2)], [S(0, 4)]) == 0.0  # IoU 1/4


def test_mixed_case():
    ref = [S(0, 2), S(5, 8)]
    pred = [S(0, 4), S(5, 8), S(10, 11)]
    # recall: ref(0,2) has no prediction inside it -> 0; ref(5,8) exact -> 1; Rec = 0.5
    # precision: pred(0,4) holds ref(0,2) -> 2/4; pred(5,8) exact -> 1; pred(10,11) -> 0; Prec = 0.5
    assert f1_m(pred, ref) == pytest.approx(0.5)
    # IoU(0,4 ; 0,2) = 0.5 and IoU(5,8 ; 5,8) = 1 -> M = 2 -> 4 / 5
    assert f1_iou(pred, ref) == pytest.approx(0.8)


def test_matching_is_maximum_not_greedy():
    ref = [S(0, 4), S(2, 6)]
    # A=(1,5): IoU 0.6 with both; B=(0,3): IoU 0.75 with (0,4) only. Greedy A->(0,4) strands B.
    pred = [S(1, 5), S(0, 3)]
    assert max_matching(pred, ref) == 2
    assert f1_iou(pred, ref) == 1.0


def test_empty_sides():
    assert f1_m([], []) == 1.0 and f1_iou([], []) == 1.0
    assert f1_m([S(0, 1)], []) == 0.0 and f1_iou([], [S(0, 1)]) == 0.0


def test_parse_tagged_and_types():
    response = "The red car is parked near a lake."
    tagged = (
        'Here is the response with hallucinated content tagged:\n<Tagged_Text>The <hallucination type="Color Attribute">red</hallucination>'
        " car is <hallucination type='spatial relations'>parked near a lake.</hallucination></Tagged_Text>"
    )
    det = parse_tagged(tagged, response)
    assert det.followed
    assert det.spans == (S(1, 2, "Color Attribute"), S(4, 8, "Spatial Relation"))
    changed = parse_tagged("<Tagged_Text>The blue car</Tagged_Text>", response)
    assert not changed.followed and changed.spans == ()
    assert canonical_type("**Logical Errors**") == "Logical Error" and canonical_type("vibes") is None


def test_render_roundtrip_and_phrases():
    response = "I see two dogs and a dog bowl near the sofa."
    spans = spans_from_phrases(response, [("dog", "Object"), ("sofa", "Object")])
    assert [(s.start, s.end) for s in spans] == [
        (3, 4),
        (6, 7),
        (10, 11),
    ]  # I see two dogs and a dog bowl near the sofa.
    det = parse_tagged(render_tagged(response, spans), response)
    assert det.followed and det.spans == spans


def test_score_detections_counts_not_followed_as_zero():
    ok = parse_tagged("<hallucination>red</hallucination> car", "red car")
    bad = parse_tagged("blue car", "red car")
    got = score_detections([(ok, [S(0, 1)]), (bad, [S(0, 1)])])
    assert got == {"n": 2, "F1_M": 50.0, "F1_IoU": 50.0, "IF": 50.0}
