"""Relational erasure never names, as still at the erased place, an object the edit cut into
(``storage.annotation.coverage.BOX_REMAINS_AT_MOST`` of its box): the rules analysis leaves it out (or
discards the item when nothing else is there), and a model-written analysis naming it yields no
questions, with the reason."""

from __future__ import annotations

import json

from qa_helpers import RE_FIELDS, make_edit

from storage.annotation.coverage import BOX_REMAINS_AT_MOST
from tasks.builtin_tasks.relational_erasure.prompts import re_analysis
from tasks.stages.qa.analyse import analysis_context
from tasks.stages.qa.render import RenderSettings
from tasks.stages.qa.synthesis import questions_for_edit

SETTINGS = RenderSettings(mc_mode="shuffle", run_seed=0, control=False)


def _with_cuts(edit: dict, cuts: list[dict]) -> dict:
    qc = json.loads(edit.get("qc_json") or "{}")
    qc["verification"] = {"passed": True, "method": "pixels", "checks": {"cut_objects": cuts}, "failures": []}
    return dict(edit, qc_json=json.dumps(qc))


def test_a_model_analysis_naming_a_cut_object_yields_no_questions():
    edit = make_edit("relational_erasure")
    fields = dict(RE_FIELDS, remaining_at_A="the skateboard deck and the carpet around it")
    ok = questions_for_edit(
        _with_cuts(edit, [{"name": "skateboard", "box": [20, 100, 140, 40], "cut": BOX_REMAINS_AT_MOST}]),
        fields,
        SETTINGS,
    )
    assert ok.rows and not ok.problems, ok.problems
    cut = _with_cuts(edit, [{"name": "skateboard", "box": [20, 100, 140, 40], "cut": BOX_REMAINS_AT_MOST + 0.05}])
    out = questions_for_edit(cut, fields, SETTINGS)
    assert not out.rows and [p.reason for p in out.problems] == ["claim_contradicts_edit"]
    assert "skateboard" in out.problems[0].detail
    # a cut object the analysis does not name is no problem
    other = questions_for_edit(cut, dict(fields, remaining_at_A="the carpet and the background around it"), SETTINGS)
    assert other.rows and not other.problems


def test_the_rules_analysis_names_only_what_the_edit_left():
    edit = make_edit("relational_erasure")
    base = re_analysis(analysis_context(_with_cuts(edit, [])))
    assert "skateboard" in base["remaining_at_A"] and not base["discard"]
    # the skateboard cut too far: the carpet, also at the place, is named instead
    fields = re_analysis(
        analysis_context(_with_cuts(edit, [{"name": "skateboard", "box": [20, 100, 140, 40], "cut": 0.5}]))
    )
    assert (
        "skateboard" not in fields["remaining_at_A"] and "carpet" in fields["remaining_at_A"] and not fields["discard"]
    )
    # everything at the place cut: nothing true can be said of what is left, so the item is discarded
    both = [
        {"name": "skateboard", "box": [20, 100, 140, 40], "cut": 0.5},
        {"name": "carpet", "box": [0, 90, 300, 110], "cut": 0.4},
    ]
    gone = re_analysis(analysis_context(_with_cuts(edit, both)))
    assert gone["discard"] and "cut" in gone["discard_reason"]
