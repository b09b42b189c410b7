"""Mining formulas on a hand-computed Visual Genome set (SPEC 3; reactbench Appendix B.2).

The set (100x100 images):
  img1: wheel 101, wheel 102, skateboard 103        101 on 103, 102 on 103
  img2: wheel 201, skateboard 202, car 203           201 on 202
  img3: "wheels" 301, "Skateboard" 302, car 303      302 has 301
  img4: wheel, cup 402, table 403, car               402 on 403
  img5: wheel, cup 502, table 503, car               503 supports 502
  img6, img7: wheel, car                             wheel of car
  img8: wheel 801, car 802                           802 has 801
  img9: wheel
C(wheel)=9, C(skateboard)=3, C(car)=7, C(cup)=C(table)=2.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mining_helpers import image, obj, rel, write_vg

from miners.candidates import VG
from miners.mine import mine_visual_genome, scan_visual_genome
from tasks.builtin_tasks.counterfactual_attribute import miner as attribute
from tasks.builtin_tasks.counterfactual_attribute.params import CounterfactualAttributeParams
from tasks.builtin_tasks.relational_erasure import miner as relational
from tasks.builtin_tasks.relational_erasure.params import RelationalErasureParams
from tasks.engine.mine_config import MineConfig
from tasks.stages.mine import task_miners

WHEEL = dict(w=10, h=10)
BOARD = dict(w=40, h=10)


def _dataset(root: Path) -> str:
    o = {
        1: [
            obj(101, "wheel", **WHEEL, attributes=["black"]),
            obj(102, "wheel", x=30, **WHEEL, attributes=["black", "round"]),
            obj(103, "skateboard", **BOARD),
        ],
        2: [
            obj(201, "wheel", **WHEEL, attributes=["BLACK"]),
            obj(202, "skateboard", **BOARD),
            obj(203, "car", x=50, w=40, h=40),
        ],
        3: [obj(301, "wheels", **WHEEL), obj(302, "Skateboard", **BOARD), obj(303, "car", x=50, w=40, h=40)],
        4: [
            obj(401, "wheel", **WHEEL, attributes=["round"]),
            obj(402, "cup", attributes=["white"]),
            obj(403, "table", w=60, h=30),
            obj(404, "car"),
        ],
        5: [
            obj(501, "wheel", **WHEEL, attributes=[]),
            obj(502, "cup", attributes=["White ", "ceramic"]),
            obj(503, "table", w=60, h=30),
            obj(504, "car"),
        ],
        6: [obj(601, "wheel", **WHEEL, attributes=["black"]), obj(602, "car", w=50, h=30)],
        7: [obj(701, "wheel", **WHEEL, attributes=["black", "black"]), obj(702, "car", w=50, h=30)],
        8: [obj(801, "wheel", **WHEEL, attributes=["rubber"]), obj(802, "car", w=50, h=30)],
        9: [obj(901, "wheel", **WHEEL, attributes=["black"])],
    }

    def plain(d):
        return {k: v for k, v in d.items() if k != "attributes"}

    def by_id(i, oid):
        return plain(next(x for x in o[i] if x["object_id"] == oid))

    rels = {
        1: [rel(11, by_id(1, 101), "on", by_id(1, 103)), rel(12, by_id(1, 102), "on", by_id(1, 103))],
        2: [rel(21, by_id(2, 201), "ON", by_id(2, 202))],
        3: [rel(31, by_id(3, 302), "has", by_id(3, 301))],
        4: [rel(41, by_id(4, 402), "on", by_id(4, 403))],
        5: [rel(51, by_id(5, 503), "supports", by_id(5, 502))],
        6: [rel(61, by_id(6, 601), "of", by_id(6, 602))],
        7: [rel(71, by_id(7, 701), "of", by_id(7, 702))],
        8: [rel(81, by_id(8, 802), "has", by_id(8, 801))],
    }
    return write_vg(
        root,
        [image(i) for i in range(1, 10)],
        [{"image_id": i, "objects": [plain(x) for x in o[i]]} for i in range(1, 10)],
        [{"image_id": i, "relationships": rels.get(i, [])} for i in range(1, 10)],
        [{"image_id": i, "attributes": o[i]} for i in range(1, 10)],
    )


@pytest.fixture(scope="module")
def hand_root(tmp_path_factory) -> str:
    return _dataset(tmp_path_factory.mktemp("hand") / "vg")


def _pairs(root: str, **re_params) -> dict[tuple[str, str], dict]:
    cfg = MineConfig(tasks=("relational_erasure",), relational_erasure=RelationalErasureParams(**re_params))
    scan = scan_visual_genome(root, cfg, task_miners(VG, cfg.tasks))
    table = relational.pair_table(scan, cfg.relational_erasure)
    return {(r["a"], r["b"]): r for r in relational.pair_rows(scan, table, 1)}


def test_pair_counts_and_probabilities(hand_root: str) -> None:
    pairs = _pairs(hand_root, n_min=3, theta=0.5)
    assert set(pairs) == {("skateboard", "wheel"), ("car", "wheel"), ("cup", "table")}
    sw = pairs[("skateboard", "wheel")]
    assert (sw["c_a"], sw["c_b"], sw["c_ab"]) == (3, 9, 3)
    assert sw["p_b_given_a"] == pytest.approx(1.0) and sw["p_a_given_b"] == pytest.approx(3 / 9)
    cw = pairs[("car", "wheel")]
    assert (cw["c_a"], cw["c_b"], cw["c_ab"]) == (7, 9, 3)
    assert cw["p_b_given_a"] == pytest.approx(3 / 7) and cw["p_a_given_b"] == pytest.approx(3 / 9)


def test_pair_kept_only_through_the_max_rule(hand_root: str) -> None:
    sw = _pairs(hand_root, n_min=3, theta=0.5)[("skateboard", "wheel")]
    # P(skateboard|wheel) = 1/3 alone fails θ = 0.5; P(wheel|skateboard) = 1 carries it.
    assert sw["p_a_given_b"] < 0.5 <= sw["p_b_given_a"]
    assert sw["kept"] is True


def test_pair_dropped_by_theta_and_by_n_min(hand_root: str) -> None:
    pairs = _pairs(hand_root, n_min=3, theta=0.5)
    assert pairs[("car", "wheel")]["kept"] is False  # C∩ = 3 >= N_min but max P = 3/7 < 0.5
    ct = pairs[("cup", "table")]
    assert (ct["c_ab"], ct["p_b_given_a"], ct["p_a_given_b"]) == (2, 1.0, 1.0)
    assert ct["kept"] is False  # P = 1 but C∩ = 2 < N_min = 3
    assert _pairs(hand_root, n_min=2, theta=0.5)[("cup", "table")]["kept"] is True


def test_both_directions_count_for_one_undirected_pair(hand_root: str) -> None:
    sw = _pairs(hand_root, n_min=3, theta=0.5)[("skateboard", "wheel")]
    assert sw["c_ab"] == 3  # img3 links them as "skateboard has wheels"
    assert (sw["predicate"], sw["direction"]) == ("on", "b_subject")  # 3x wheel-on vs 1x skateboard-has
    cw = _pairs(hand_root, n_min=3, theta=0.5)[("car", "wheel")]
    assert (cw["predicate"], cw["direction"]) == ("of", "b_subject")


def test_predicate_ties_go_to_the_alphabetically_first(hand_root: str) -> None:
    ct = _pairs(hand_root, n_min=3, theta=0.5)[("cup", "table")]
    assert (ct["predicate"], ct["direction"]) == ("on", "a_subject")  # 1x "on" vs 1x "supports"


def test_count_unit_relations(hand_root: str) -> None:
    pairs = _pairs(hand_root, n_min=3, theta=0.5, count_unit="relations")
    assert pairs[("skateboard", "wheel")]["c_ab"] == 4  # img1 links the pair twice


def test_attribute_probabilities_ranks_and_top_k(hand_root: str) -> None:
    cfg = MineConfig(
        tasks=("counterfactual_attribute",),
        counterfactual_attribute=CounterfactualAttributeParams(n_min=2, theta=0.15, top_k=1),
    )
    scan = scan_visual_genome(hand_root, cfg, task_miners(VG, cfg.tasks))
    rows = {
        (r["object"], r["attribute"]): r
        for r in attribute.attribute_rows(scan, attribute.attribute_table(scan, cfg.counterfactual_attribute), 1)
    }
    black = rows[("wheel", "black")]
    assert (black["c_o"], black["c_oa"], black["rank"], black["kept"]) == (
        10,
        6,
        1,
        True,
    )  # "BLACK" and a repeated "black" count once
    assert black["p_a_given_o"] == pytest.approx(0.6)
    rnd = rows[("wheel", "round")]
    assert (rnd["c_oa"], rnd["rank"], rnd["kept"]) == (2, 2, False)  # passes N_min and θ but top_k = 1
    assert rows[("wheel", "rubber")]["kept"] is False  # C(o∩a) = 1 < N_min
    assert rows[("cup", "white")]["p_a_given_o"] == pytest.approx(1.0)  # "White " is "white"
    assert rows[("cup", "ceramic")]["p_a_given_o"] == pytest.approx(0.5)
    cfg3 = MineConfig(
        tasks=("counterfactual_attribute",),
        counterfactual_attribute=CounterfactualAttributeParams(n_min=2, theta=0.15, top_k=3),
    )
    scan3 = scan_visual_genome(hand_root, cfg3, task_miners(VG, cfg3.tasks))
    kept3 = {
        (r["object"], r["attribute"])
        for r in attribute.attribute_rows(scan3, attribute.attribute_table(scan3, cfg3.counterfactual_attribute), 1)
        if r["kept"]
    }
    assert kept3 == {("wheel", "black"), ("wheel", "round"), ("cup", "white")}


def test_re_candidates_erase_the_smaller_entity_once_per_image(hand_root: str) -> None:
    cfg = MineConfig(
        tasks=("relational_erasure",),
        relational_erasure=RelationalErasureParams(n_min=3, theta=0.5, images_per_pair=10),
    )
    res = mine_visual_genome(hand_root, cfg, seed=0)
    assert sorted(int(c["image_id"]) for c in res.candidates) == [1, 2, 3]
    by_img = {c["image_id"]: c for c in res.candidates}
    assert by_img["1"]["target_object_id"] == 101  # lowest relationship id of the two in img1
    assert {c["target_name"] for c in res.candidates} == {"wheel"}
    assert {c["partner_name"] for c in res.candidates} == {"skateboard"}
    assert {c["predicate"] for c in res.candidates} == {"on"}
    assert {c["direction"] for c in res.candidates} == {"target_is_subject"}
    capped = mine_visual_genome(
        hand_root,
        cfg.model_copy(update={"relational_erasure": RelationalErasureParams(n_min=3, theta=0.5, images_per_pair=2)}),
        seed=0,
    )
    assert len(capped.candidates) == 2


def test_sort_based_unique_matches_numpy() -> None:
    import numpy as np

    from miners import npx

    a = np.random.default_rng(0).integers(-5, 60, 2000)
    values, inverse, counts = npx.unique(a, return_inverse=True, return_counts=True)
    ref_values, ref_inverse, ref_counts = np.unique(a, return_inverse=True, return_counts=True)
    assert (
        np.array_equal(values, ref_values)
        and np.array_equal(inverse, ref_inverse)
        and np.array_equal(counts, ref_counts)
    )
    assert npx.unique(np.zeros(0, np.int64)).size == 0


def test_unique_first_gives_first_occurrences() -> None:
    import numpy as np

    from miners import npx

    values, first = npx.unique_first(np.array([7, 3, 7, 1, 3, 9]))
    assert values.tolist() == [1, 3, 7, 9] and first.tolist() == [3, 1, 0, 5]


def test_count_unit_relations_counts_class_totals_in_relationships_too(hand_root: str) -> None:
    """C(A) and C(A∩B) in one unit: with relationships, C(wheel) = 7 relationships touch a wheel
    (11, 12, 21, 31, 61, 71, 81), C(skateboard) = 4; so no P exceeds 1 (images would give 4/3)."""
    pairs = _pairs(hand_root, n_min=3, theta=0.5, count_unit="relations")
    sw = pairs[("skateboard", "wheel")]
    assert (sw["c_a"], sw["c_b"], sw["c_ab"]) == (4, 7, 4)
    assert sw["p_b_given_a"] == pytest.approx(1.0) and sw["p_a_given_b"] == pytest.approx(4 / 7)
    cw = pairs[("car", "wheel")]
    assert (cw["c_a"], cw["c_b"], cw["c_ab"]) == (3, 7, 3) and cw["kept"] is True
    assert all(0 <= p["p_b_given_a"] <= 1 and 0 <= p["p_a_given_b"] <= 1 for p in pairs.values())


def test_pair_with_p_exactly_theta_is_kept(hand_root: str) -> None:
    """Keep when max(P) >= θ: at exactly θ the pair stays (a strict > would drop both)."""
    assert _pairs(hand_root, n_min=3, theta=1.0)[("skateboard", "wheel")]["kept"] is True  # P(wheel|skateboard) = 3/3
    cw = _pairs(hand_root, n_min=3, theta=3 / 7)[("car", "wheel")]
    assert cw["p_b_given_a"] == 3 / 7 and cw["kept"] is True
    assert _pairs(hand_root, n_min=3, theta=3 / 7 + 1e-9)[("car", "wheel")]["kept"] is False


def test_attribute_with_p_exactly_theta_is_kept(hand_root: str) -> None:
    """Keep when P(a|o) >= θ: cup-ceramic has P = 1/2 exactly."""

    def rows(theta: float) -> dict:
        cfg = MineConfig(
            tasks=("counterfactual_attribute",),
            counterfactual_attribute=CounterfactualAttributeParams(n_min=1, theta=theta, top_k=3),
        )
        scan = scan_visual_genome(hand_root, cfg, task_miners(VG, cfg.tasks))
        return {
            (r["object"], r["attribute"]): r
            for r in attribute.attribute_rows(scan, attribute.attribute_table(scan, cfg.counterfactual_attribute), 1)
        }

    at = rows(0.5)[("cup", "ceramic")]
    assert at["p_a_given_o"] == 0.5 and at["kept"] is True
    assert rows(0.5 + 1e-9)[("cup", "ceramic")]["kept"] is False
