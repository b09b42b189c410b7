"""The health figures on hand-made question tables whose answers are worked out by hand:
trivial baselines and their React-Score, the blind prior model, balance, duplicates, thresholds."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest

from prompts.blind_prior import PriorStats, blind_answer
from tasks.engine.config import HealthConfig
from tasks.release.health.balance import balance_figures, chi_square_sf, entropy_bits
from tasks.release.health.blind import blind_figures
from tasks.release.health.duplicates import near_pairs, near_text
from tasks.release.health.gate import health_problems
from tasks.release.health.trivial import trivial_figures

CA = "counterfactual_attribute"
SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("edit_id", pa.string()),
        ("task", pa.string()),
        ("variant", pa.string()),
        ("question_set", pa.string()),
        ("qid", pa.string()),
        ("qtype", pa.string()),
        ("dimension", pa.string()),
        ("text", pa.string()),
        ("options", pa.list_(pa.string())),
        ("gold", pa.string()),
        ("rotation", pa.int32()),
        ("images", pa.list_(pa.string())),
    ]
)


def _table(rows: list[tuple]) -> pa.Table:
    """(task, set, qtype, text, options, gold) rows -> a question table, one item per row."""
    out = []
    for i, (task, qset, qtype, text, options, gold) in enumerate(rows):
        out.append(
            {
                "id": f"q{i}",
                "edit_id": f"e{i}",
                "task": task,
                "variant": "targeted",
                "question_set": qset,
                "qid": "Q1",
                "qtype": qtype,
                "dimension": "direct",
                "text": text,
                "options": options,
                "gold": gold,
                "rotation": 0,
                "images": [f"images/{i}.png"],
            }
        )
    return pa.Table.from_pylist(out, schema=SCHEMA)


HAND = _table(
    [
        (CA, "main", "YN", "Is the banana yellow?", None, "Yes"),
        (CA, "main", "YN", "Is the banana yellow?", None, "yes"),
        (CA, "main", "YN", "Is the banana green?", None, "No"),
        (CA, "main", "YN", "Is the banana green?", None, "No"),
        (CA, "main", "YN", "Is the apple red?", None, "No"),
        (CA, "main", "MC", "What colour?", ["a", "b", "c", "d"], "A"),
        (CA, "main", "MC", "What colour?", ["a", "b", "c", "d"], "A"),
        (CA, "main", "MC", "What colour?", ["a", "b", "c", "d"], "B"),
        (CA, "main", "MC", "What colour?", ["a", "b", "c", "d"], "C"),
        (CA, "main", "MC", "What colour?", ["a", "b", "c", "d", "e"], "E"),
        (CA, "main", "SA", "What colour is it?", None, "blue."),
        (CA, "main", "SA", "What colour is it?", None, "Blue"),
        (CA, "main", "SA", "What colour is it?", None, "red"),
    ]
)


def test_trivial_baselines_by_hand():
    f = trivial_figures(HAND)
    yn, mc, sa = (f["per_task_type"][CA][q] for q in ("YN", "MC", "SA"))
    assert (yn["n"], yn["always_yes"], yn["always_no"], yn["best"], yn["uniform"]) == (5, 0.4, 0.6, "always_no", 0.5)
    assert mc["letters"] == {"A": 2, "B": 1, "C": 1, "D": 0, "E": 1}
    assert (mc["always_A"], mc["always_D"], mc["always_E"]) == (0.4, 0.0, 0.2)
    assert mc["uniform"] == pytest.approx((4 * 0.25 + 0.2) / 5)
    assert (sa["most_frequent_answer"], sa["most_frequent"]) == ("blue", round(2 / 3, 4))
    # React-Score (one task: R = S_t): 0.5 A_SA + 0.25 A_MC + 0.25 A_YN, in percent
    assert f["react_score"]["always_no"] == pytest.approx(0.25 * 60)
    assert f["react_score"]["always_A"] == pytest.approx(0.25 * 40)
    assert f["react_score"]["best_constant"] == pytest.approx(0.5 * 66.67 + 0.25 * 40 + 0.25 * 60, abs=0.01)


STATS = PriorStats.build(
    pairs=[("mustard", "hot dog")],
    attributes=[("banana", "yellow", 0.9), ("banana", "green", 0.1), ("apple", "red", 0.6)],
    counts=[("coin", 10), ("coin", 20), ("coin", 30)],
)


@pytest.mark.parametrize(
    ("qtype", "text", "options", "answer"),
    [
        ("YN", "Is the banana yellow?", None, "Yes"),
        ("YN", "Is the banana green?", None, "No"),
        ("YN", "Can you see a mustard on the hot dog?", None, "Yes"),
        ("YN", "Is there a giraffe in this image?", None, "No"),
        ("YN", "Does this picture contain exactly 20 coins?", None, "Yes"),
        ("YN", "Does this picture contain exactly 16 coins?", None, "No"),
        ("YN", "Is the number of coins somewhere from 18 to 22, both included?", None, "Yes"),
        ("YN", "Comparing the two pictures, has anything changed?", None, "No"),
        ("YN", "Comparing the two pictures, are they identical in every detail?", None, "Yes"),
        ("MC", "What is the colour of the banana?", ["Blue", "Yellow", "Green", "Brown"], "B"),
        ("MC", "Comparing the two pictures, what changed?", ["The cup moved", "Nothing changed"], "B"),
        ("MC", "How many coins does this picture contain?", ["14", "17", "20", "24"], "C"),
        ("MC", "Roughly how many coins are there?", ["9-13", "19-23", "24-28"], "B"),
        ("MC", "Which of these is on the hot dog?", ["None of these", "A giraffe", "A mustard"], "C"),
        ("SA", "How many coins does this picture contain? Reply with one number only.", None, "20"),
        ("SA", "Estimate the number of coins as a range such as 10-15.", None, "18-23"),
        ("SA", "What is the colour of the banana?", None, "yellow"),
        ("SA", "Comparing the two pictures, what changed?", None, "Nothing changed."),
        ("SA", "What can be seen on the hot dog?", None, "a hot dog"),
    ],
)
def test_blind_prior_answers(qtype, text, options, answer):
    assert blind_answer(qtype, text, options, STATS) == answer


def test_blind_figures_targeted_control_and_not_probing():
    t = _table(
        [
            (CA, "main", "YN", "Is the banana yellow?", None, "No"),  # wrong: the prior says yellow
            (CA, "main", "YN", "Is the banana green?", None, "No"),  # right: does not probe the prior
            (CA, "main", "MC", "What is the colour of the banana?", ["Blue", "Yellow"], "A"),  # wrong
            (CA, "main", "SA", "What is the colour of the banana?", None, "Blue"),  # wrong
            (CA, "control", "YN", "Comparing the two pictures, has anything changed there?", None, "No"),  # right
        ]
    )
    f = blind_figures(t, STATS)
    assert f["per_task"][CA] == {"targeted": 0.25, "n_targeted": 4, "control": 1.0, "n_control": 1}
    assert f["per_task_type"] == {f"{CA}/MC": 0.0, f"{CA}/SA": 0.0, f"{CA}/YN": 0.5}
    assert f["react_score"] == pytest.approx(0.25 * 50)
    assert f["not_probing"]["count"] == 1 and f["not_probing"]["questions"][0]["text"] == "Is the banana green?"


def test_balance_by_hand():
    f = balance_figures(HAND)
    assert f["yes_ratio"]["all"] == 0.4 and f["yes_ratio"][f"{CA}/main"] == 0.4
    mc = f["mc"][CA]
    # expected per letter: A-D 4 x 1/4 + 1/5 each = 1.2, E 0.2; observed 2, 1, 1, 0, 1
    stat = sum((o - e) ** 2 / e for o, e in zip([2, 1, 1, 0, 1], [1.2, 1.2, 1.2, 1.2, 0.2]))
    assert mc["chi2"] == pytest.approx(stat, abs=1e-4)
    assert mc["p"] == pytest.approx(chi_square_sf(stat, 4), abs=1e-6)
    assert f["sa_entropy"][CA] == {"bits": round(entropy_bits([2, 1]), 4), "distinct": 2, "n": 3}


@pytest.mark.parametrize(
    ("x", "dof", "p"),
    [(3.841459, 1, 0.05), (5.991465, 2, 0.05), (7.814728, 3, 0.05), (9.487729, 4, 0.05), (11.0705, 5, 0.05)],
)
def test_chi_square_closed_form(x, dof, p):
    assert chi_square_sf(x, dof) == pytest.approx(p, abs=1e-6)


def test_entropy_and_near_duplicates():
    assert entropy_bits([1, 1]) == 1.0 and entropy_bits([2, 1, 1]) == 1.5 and entropy_bits([5]) == 0.0
    hashes = np.array([0b0, 0b111, 2**64 - 1, 0b1], dtype=np.uint64)
    assert near_pairs(hashes, 2) == [(0, 3, 1), (1, 3, 2)]
    assert near_text(pa.chunked_array([["Is the  Cup red?", "is the cup red"]])).to_pylist() == ["is the cup red"] * 2


def test_thresholds_name_each_figure():
    figures = {
        "trivial": {
            "per_task_type": {
                CA: {
                    "YN": {"best": "always_no", "best_accuracy": 1.0, "n": 84},
                    "MC": {"best": "always_C", "best_accuracy": 0.3, "n": 84},
                }
            }
        },
        "blind_prior": {"per_task": {CA: {"targeted": 0.7, "n_targeted": 10}}},
        "duplicates": {"duplicate_question_share": 0.0, "duplicate_image_share": 0.2},
    }
    lines = health_problems(figures, HealthConfig(max_trivial_accuracy_by={f"{CA}/MC": 0.25}))
    assert lines == [
        f"trivial {CA}/MC: always_C scores 0.3000 of 84 questions, over health.max_trivial_accuracy_by[{CA}/MC] 0.25",
        f"trivial {CA}/YN: always_no scores 1.0000 of 84 questions, over health.max_trivial_accuracy 0.9",
        f"blind_prior {CA}: 0.7000 of 10 targeted questions answered without the image, over health.max_blind_prior_targeted 0.5",
        "duplicate_image_share: 0.2000 (items with a near-duplicate source image), over health.max_duplicate_share 0.05",
    ]
    assert math.isclose(HealthConfig().max_trivial_accuracy, 0.9)


def test_health_section_in_the_run_config():
    from flows.config import ConfigError, config_from_dict

    cfg = config_from_dict({"health": {"max_trivial_accuracy": 0.6, "max_trivial_accuracy_by": {f"{CA}/YN": 1.0}}})
    assert cfg.health.max_trivial_accuracy == 0.6 and cfg.health.max_trivial_accuracy_by == {f"{CA}/YN": 1.0}
    with pytest.raises(ConfigError, match="health.max_duplicate_share"):
        config_from_dict({"health": {"max_duplicate_share": 2}})
