"""Each scoring scheme on inputs computed by hand (issue 13's examples included)."""

import pytest

from storage.task_spec import all_tasks
from tasks.release.evaluate.ablation import bootstrap_difference, control_ablation
from tasks.release.evaluate.completeness import completeness
from tasks.release.evaluate.summary import summarize
from tasks.release.metrics import (
    BeafPair,
    beaf_metrics,
    beaf_traditional,
    collapse_cyclic,
    hallu_rate,
    mc_cyclic,
    react_score,
)

# The built-in tasks' React-Score weights (a task plugin installed beside them, such as
# examples/spatial_relation under `make test`, is not part of these hand-computed tables).
WEIGHTS = {t: spec.weight for t, spec in all_tasks().items() if spec.modules[0].startswith("tasks.builtin_tasks.")}

RE, CA, AT, DC = "relational_erasure", "counterfactual_attribute", "alteration_tracing", "dense_counting"
T, F = True, False

# (task, mode, type) -> results of one targeted item's questions. Per mode,
# S = 0.25 A_YN + 0.25 A_MC + 0.5 A_SA:
TABLE = {
    (RE, "standard", "YN"): [T, F, F],
    (RE, "standard", "MC"): [T, T, T],
    (RE, "standard", "SA"): [T, F, T],  # 8.33+25+33.33 = 66.67
    (RE, "cot", "YN"): [T],
    (RE, "cot", "MC"): [F],
    (RE, "cot", "SA"): [T],  # 25+0+50 = 75     -> S_RE = 70.8333
    (CA, "standard", "YN"): [T],
    (CA, "standard", "MC"): [F],
    (CA, "standard", "SA"): [F, T, F],  # 25+0+16.67 = 41.67
    (CA, "cot", "YN"): [F, T],
    (CA, "cot", "MC"): [F, F],
    (CA, "cot", "SA"): [F, F, T],  # 12.5+0+16.67 = 29.17 -> S_CA = 35.4167
    (AT, "standard", "YN"): [F],
    (AT, "standard", "MC"): [T, F, F],
    (AT, "standard", "SA"): [T, F, T],  # 0+8.33+33.33 = 41.67
    (AT, "cot", "YN"): [F, T, T],
    (AT, "cot", "MC"): [T],
    (AT, "cot", "SA"): [T],  # 16.67+25+50 = 91.67 -> S_AT = 66.6667
    (DC, "standard", "YN"): [F, T],
    (DC, "standard", "MC"): [F],
    (DC, "standard", "SA"): [T, F, T],  # 12.5+0+33.33 = 45.83
    (DC, "cot", "YN"): [T],
    (DC, "cot", "MC"): [F, F],
    (DC, "cot", "SA"): [F, T],  # 25+0+25 = 50 -> S_DC = 47.9167
}
# R = 0.3*70.8333 + 0.2*35.4167 + 0.2*66.6667 + 0.3*47.9167 = 21.25 + 7.0833 + 13.3333 + 14.375 = 56.0417
# Swapping the CA and DC weights would give 0.3*70.8333 + 0.3*35.4167 + 0.2*66.6667 + 0.2*47.9167 = 54.7917.
CONTROL_ROWS = [(RE, "cot", "MC"), (AT, "standard", "YN"), (DC, "standard", "MC"), (DC, "standard", "MC")]  # all right
# Pooled with them: RE cot MC 0 -> 50 (S_RE 77.0833), AT std YN 0 -> 50 (S_AT 72.9167), DC std MC 0 -> 66.67
# (S_DC 56.25): R = 23.125 + 7.0833 + 14.5833 + 16.875 = 61.6667.


def table_rows(editor="ed1"):
    rows = []
    for (task, mode, qtype), results in TABLE.items():
        for i, c in enumerate(results):
            rows.append(
                {
                    "task": task,
                    "mode": mode,
                    "qtype": qtype,
                    "qid": f"Q{i}",
                    "question_set": "main",
                    "correct": c,
                    "edit_id": f"{task}-t",
                    "editor": editor,
                    "variant": "targeted",
                }
            )
    return rows


def control_rows(editor="ed1"):
    return [
        {
            "task": t,
            "mode": m,
            "qtype": q,
            "qid": f"C{i}",
            "question_set": "main",
            "correct": True,
            "edit_id": f"{t}-c",
            "editor": editor,
            "variant": "control",
        }
        for i, (t, m, q) in enumerate(CONTROL_ROWS)
    ]


def test_react_score_distinct_task_scores_pin_each_weight():
    rs = react_score(table_rows(), WEIGHTS)
    assert rs.per_task == {RE: 70.8333, CA: 35.4167, AT: 66.6667, DC: 47.9167}
    assert len(set(rs.per_task.values())) == 4  # distinct, so swapping any two weights moves R
    assert rs.score == pytest.approx(56.0417, abs=1e-4)
    assert rs.score != pytest.approx(54.7917, abs=1e-3)  # CA and DC weights swapped
    assert rs.complete and rs.missing == []


def test_headline_is_targeted_only_and_control_is_beside_it():
    rows = table_rows() + control_rows()
    assert react_score(rows, WEIGHTS).score == pytest.approx(61.6667, abs=1e-4)  # what pooling gave
    m = summarize(rows)
    assert m["headline_variant"] == "targeted"
    assert m["react"]["react_score"] == pytest.approx(56.0417, abs=1e-4)
    by = {(e["editor"], e["variant"]): e for e in m["by_editor"]}
    assert by[("ed1", "targeted")]["react"]["react_score"] == pytest.approx(56.0417, abs=1e-4)
    assert by[("ed1", "control")]["react"]["complete"] is False  # control rows cover few types
    ab = {(a["editor"], a["task"]): a for a in m["ablation"]}
    # DC: targeted 5 of 11 questions right (both modes pooled: 1+0+2 + 1+0+1) vs control 2 of 2
    dc = ab[("ed1", DC)]
    assert dc["targeted_accuracy"] == pytest.approx(100 * 5 / 11, abs=1e-4) and dc["control_accuracy"] == 100.0
    assert dc["difference"] == pytest.approx(100 * 5 / 11 - 100, abs=1e-4)
    lo, hi = dc["ci95"]
    assert lo <= dc["difference"] <= hi
    assert ("ed1", CA) not in ab  # CA has no control items: no entry


def test_bootstrap_interval_by_hand():
    # every targeted item right, every control item wrong: the difference is 100 in every resample
    assert bootstrap_difference([(2.0, 2), (1.0, 1)], [(0.0, 3)], seed=1, n_boot=200) == (100.0, 100.0)
    # identical sides with spread: interval straddles 0 and is deterministic for a seed
    items = [(1.0, 1), (0.0, 1), (1.0, 1), (0.0, 1)]
    a = bootstrap_difference(items, items, seed=7, n_boot=500)
    assert a == bootstrap_difference(items, items, seed=7, n_boot=500)
    assert a[0] < 0 < a[1]


def test_freak_cyclic_example():
    # 4 presentations, 3 right, the prior option picked once (the wrong one)
    base = {"task": CA, "mode": "standard", "qtype": "MC", "qid": "Q9", "edit_id": "e", "question_set": "main"}
    rows = [dict(base, rotation=i, correct=c, prior_fallback=not c) for i, c in enumerate([T, T, F, T])]
    merged = collapse_cyclic(rows)
    got = mc_cyclic(merged, ["task"])
    assert got == [{"task": CA, "n": 1, "presentations": 4, "averaged_accuracy": 75.0, "consistency_accuracy": 0.0}]
    assert hallu_rate(merged, ["task"]) == [{"task": CA, "n": 1, "fallbacks": 1, "hallu_rate": 25.0}]
    # React-Score's A_MC is the averaged accuracy (75, not the consistency 0); with only MC present, S^m = A_MC
    assert react_score(rows, WEIGHTS).per_mode[CA]["standard"] == 75.0


def test_hallu_rate_counts_questions_with_a_prior_once():
    # question 1: 6 presentations, prior twice; question 2: plain YN, fell back; question 3: no prior
    q1 = [
        {
            "task": RE,
            "qtype": "MC",
            "mode": "cot",
            "qid": "Q11",
            "edit_id": "e",
            "question_set": "main",
            "rotation": i,
            "correct": False,
            "prior_fallback": i < 2,
        }
        for i in range(6)
    ]
    q2 = [
        {
            "task": RE,
            "qtype": "YN",
            "mode": "cot",
            "qid": "Q1",
            "edit_id": "e",
            "question_set": "main",
            "correct": False,
            "prior_fallback": True,
        }
    ]
    q3 = [
        {
            "task": RE,
            "qtype": "MC",
            "mode": "cot",
            "qid": "Q9",
            "edit_id": "e",
            "question_set": "main",
            "rotation": 0,
            "correct": False,
            "prior_fallback": None,
        }
    ]
    got = hallu_rate(collapse_cyclic(q1 + q2 + q3), ["task"])
    # (2/6 + 1) / 2 questions = 66.6667
    assert got == [{"task": RE, "n": 2, "fallbacks": 3, "hallu_rate": pytest.approx(66.6667, abs=1e-4)}]


def test_missing_type_is_incomplete_and_named():
    rows = [r for r in table_rows() if not (r["task"] == AT and r["mode"] == "cot" and r["qtype"] == "SA")]
    rs = react_score(rows, WEIGHTS)
    assert not rs.complete and rs.missing == [f"{AT}/cot/SA"]
    # AT cot renormalised over YN and MC: (0.25*66.67 + 0.25*100) / 0.5 = 83.33
    assert rs.per_mode[AT]["cot"] == pytest.approx(83.3333, abs=1e-4)


def test_per_item_completeness():
    rows = [
        {
            "edit_id": "e1",
            "task": DC,
            "editor": "x",
            "variant": "targeted",
            "question_set": "main",
            "mode": "cot",
            "qid": f"Q{i}",
            "status": "ok",
        }
        for i in range(1, 9)
    ]
    rows += [
        {
            "edit_id": "e2",
            "task": DC,
            "editor": "x",
            "variant": "targeted",
            "question_set": "main",
            "mode": "cot",
            "qid": f"Q{i}",
            "status": "ok",
        }
        for i in range(1, 8)
    ]
    rows.append(
        {
            "edit_id": "e2",
            "task": DC,
            "editor": "x",
            "variant": "targeted",
            "question_set": "main",
            "mode": "cot",
            "qid": "Q8",
            "status": "error",
        }
    )
    c = completeness(rows)
    assert (c["items"], c["complete_items"], c["complete"]) == (2, 1, False)
    assert c["incomplete"] == [
        {
            "edit_id": "e2",
            "task": DC,
            "editor": "x",
            "variant": "targeted",
            "mode": "cot",
            "questions": 7,
            "expected": 8,
            "missing": ["Q8"],
        }
    ]
    assert completeness(rows[:8])["complete"]
    m = summarize(rows)
    assert m["complete"] is False


def test_beaf_f1_from_unrounded_figures():
    # TU = 1/3, ID = 1/3: F1 = 2 / (3/100 + 1/(200/3)) = 2 / (0.03 + 0.015) = 44.4444
    pairs = [
        BeafPair(T, T, T),
        BeafPair(T, F, T),
        BeafPair(F, F, T),
        BeafPair(T, T, F),
        BeafPair(T, F, F),
        BeafPair(F, F, F),
    ]
    got = beaf_metrics(pairs)
    assert got["TU"] == 33.3333 and got["ID"] == 33.3333
    assert got["F1"] == round(2 / (1 / (100 / 3) + 1 / (200 / 3)), 4)


def test_beaf_traditional_and_yes_ratios():
    def r(role, dim, gold, parsed):
        return {
            "question_set": "beaf",
            "image_role": role,
            "beaf_related": dim == "removed",
            "gold": gold,
            "parsed": parsed,
            "correct": parsed == gold,
        }

    rows = [
        r("original", "removed", "Yes", "Yes"),
        r("edited", "removed", "No", "Yes"),  # removed object: Yes before, still Yes after
        r("original", "removed", "Yes", "Yes"),
        r("edited", "removed", "No", "No"),
        r("original", "present", "Yes", "No"),
        r("edited", "present", "Yes", "Yes"),
        r("original", "absent", "No", "No"),
        r("edited", "absent", "No", None),  # unreadable: not a Yes
    ]
    got = beaf_traditional(rows)
    # gold Yes: rows 1, 3, 5, 6; answered Yes among them: 1, 3, 6 -> TP 3, FN 1; answered Yes on gold No: row 2 -> FP 1
    assert got["yes_ratio_before"] == 100.0 and got["yes_ratio_after"] == 50.0
    assert got["accuracy"] == pytest.approx(100 * 5 / 8) and got["n"] == 8  # right: 1, 3, 4, 6, 7
    assert got["precision"] == 75.0 and got["recall"] == 75.0 and got["F1"] == 75.0
    assert got["yes_ratio"] == 50.0


def test_summary_reports_freak_figures_and_beaf_companions():
    base = {
        "task": RE,
        "mode": "cot",
        "qtype": "MC",
        "qid": "Q12",
        "edit_id": "e",
        "question_set": "main",
        "variant": "targeted",
        "editor": "x",
    }
    rows = [dict(base, rotation=i, correct=i != 2, prior_fallback=i == 2) for i in range(6)]
    m = summarize(rows)
    assert m["mc_cyclic"]["task"] == [
        {
            "task": RE,
            "mode": "cot",
            "n": 1,
            "presentations": 6,
            "averaged_accuracy": pytest.approx(83.3333, abs=1e-4),
            "consistency_accuracy": 0.0,
        }
    ]
    assert m["hallu_rate"]["task"][0]["n"] == 1 and m["hallu_rate"]["task"][0]["hallu_rate"] == pytest.approx(
        16.6667, abs=1e-4
    )
    assert control_ablation(rows) == []  # no control items


def test_eval_report_shows_targeted_vs_control_with_intervals():
    from tasks.release.report.eval_report import model_section

    m = summarize(table_rows() + control_rows())
    html = model_section(m)
    assert "targeted minus control" in html
    dc = next(a for a in m["ablation"] if a["task"] == DC)
    assert f"[{dc['ci95'][0]}, {dc['ci95'][1]}]" in html
    assert "averaged accuracy" in html or not m["mc_cyclic"]["task"]


def test_weights_are_parameters_renormalised_over_the_tasks_given():
    """metrics.py knows no task: a fifth task's weight joins the sum and every weight is divided by it."""
    five = {**WEIGHTS, "spatial_relation": 0.2}
    rows = table_rows() + [dict(r, task="spatial_relation", edit_id="sr") for r in table_rows() if r["task"] == RE]
    rs = react_score(rows, five)
    assert rs.per_task["spatial_relation"] == rs.per_task[RE] == 70.8333
    # (0.3*70.8333 + 0.2*35.4167 + 0.2*66.6667 + 0.3*47.9167 + 0.2*70.8333) / 1.2
    assert rs.score == pytest.approx((56.0417 + 0.2 * 70.8333) / 1.2, abs=1e-3)
    assert list(rs.per_task) == [RE, CA, AT, DC, "spatial_relation"] and rs.complete
    assert react_score(table_rows(), five).missing == ["spatial_relation"]
    assert react_score(table_rows(), WEIGHTS).score == pytest.approx(56.0417, abs=1e-4)
    # no weights: every task present weighs the same
    assert react_score(table_rows()).score == pytest.approx((70.8333 + 35.4167 + 66.6667 + 47.9167) / 4, abs=1e-3)
