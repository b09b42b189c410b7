"""The RE / CA analysis prompts: rendering, parsing real-looking answers, validation, rules answers."""

from __future__ import annotations

import json

import pytest
from qa_helpers import CA_FIELDS, RE_FIELDS, make_edit

from prompts.clients.rules import RulesClient
from prompts.parsing import ParseError, parse_answer
from prompts.runner import PromptInput, run_prompt
from prompts.spec import render
from tasks.builtin_tasks.counterfactual_attribute.prompts import CA_ANALYSIS, CAAnalysis
from tasks.builtin_tasks.relational_erasure.prompts import RE_ANALYSIS, REAnalysis
from tasks.engine.prompt_hooks import rules_table
from tasks.stages.qa.analyse import analysis_context
from tasks.stages.qa.render import RenderSettings
from tasks.stages.qa.synthesis import questions_for_edit


def lines(fields: dict, **over: object) -> str:
    out = []
    for k, v in {**fields, **over}.items():
        out.append(f"{k}: {'yes' if v is True else 'no' if v is False else v}")
    return "\n".join(out)


def test_templates_render_with_the_stage_context() -> None:
    for task, spec in (("relational_erasure", RE_ANALYSIS), ("counterfactual_attribute", CA_ANALYSIS)):
        text = render(spec, analysis_context(make_edit(task)))
        assert "{{" not in text and "discard:" in text and spec.n_images == 2
    re_text = render(RE_ANALYSIS, analysis_context(make_edit("relational_erasure")))
    assert '"wheel"' in re_text and '"skateboard"' in re_text and "wheel on skateboard" in re_text
    ca_text = render(CA_ANALYSIS, analysis_context(make_edit("counterfactual_attribute")))
    assert '"brown"' in ca_text and '"slate grey"' in ca_text


def test_messy_line_answer_parses() -> None:
    text = "Here is my analysis.\n\n**verification_status**: Pass\n" + lines(RE_FIELDS).split("\n", 1)[1].replace(
        "B_name:", "- **B_name**:"
    )
    parsed = parse_answer(text, REAnalysis)
    assert (
        parsed.status == "ok" and parsed.fields["B_name"] == "skateboard wheels" and parsed.fields["discard"] is False
    )


def test_json_answer_parses_for_ca() -> None:
    parsed = parse_answer("```json\n" + json.dumps(CA_FIELDS) + "\n```", CAAnalysis)
    assert parsed.fields["C_new_attribute"] == "flat and ribbon-like"


@pytest.mark.parametrize(
    "model, fields, over, message",
    [
        (REAnalysis, RE_FIELDS, {"A_location": "on the underside of the skateboard"}, "leading preposition"),
        (
            REAnalysis,
            RE_FIELDS,
            {"A_location": "the place where the wheels were"},
            "must not mention the removed object",
        ),
        (REAnalysis, RE_FIELDS, {"B_name": "the wheels"}, "without an article"),
        (REAnalysis, RE_FIELDS, {"B_variant_2": "Two wheels left, the other two missing"}, "must be distinct"),
        (REAnalysis, RE_FIELDS, {"nothing_desc": ""}, "must be filled unless discard is yes"),
        (CAAnalysis, CA_FIELDS, {"D_location": "the woman's hand"}, "locative preposition"),
        (CAAnalysis, CA_FIELDS, {"B_original_attribute": "normal shape"}, "vague word"),
        (CAAnalysis, CA_FIELDS, {"plausible_wrong_attribute_1": "Flat and ribbon-like"}, "must be distinct"),
        (CAAnalysis, CA_FIELDS, {"C_new_attribute": "扁平"}, "English"),
    ],
)
def test_validation_errors_are_sent_back(model: type, fields: dict, over: dict, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        parse_answer(lines(fields, **over), model)


def test_discarded_answer_needs_no_content() -> None:
    text = "verification_status: fail\nverification_issues: ghost outline of the wheels\ndiscard: yes\ndiscard_reason: the wheels are still faintly visible"
    parsed = parse_answer(text, REAnalysis)
    assert parsed.status == "ok" and parsed.fields["discard"] is True
    assert parsed.fields["discard_reason"] == "the wheels are still faintly visible"


@pytest.mark.parametrize(
    "task, spec", [("relational_erasure", RE_ANALYSIS), ("counterfactual_attribute", CA_ANALYSIS)]
)
def test_rules_backend_answers_yield_full_question_sets(task: str, spec: object) -> None:
    edits = [make_edit(task, id=f"e{i}") for i in range(12)]
    outs = run_prompt(
        RulesClient(rules=rules_table()), spec, [PromptInput(analysis_context(e)) for e in edits], parse_retries=0
    )
    assert all(o.status == "ok" and o.attempts == 1 for o in outs), [o.error for o in outs]
    for e, o in zip(edits, outs):
        assert not o.fields["discard"]
        r = questions_for_edit(e, o.fields, RenderSettings())
        assert r.problems == [] and len(r.rows) == 12


def test_rules_discards_when_same_kind_sits_in_the_same_region() -> None:
    edit = make_edit("relational_erasure")
    cand = json.loads(edit["candidate_json"])
    ctx_objs = json.loads(cand["context_json"]) + [
        {"id": 9, "name": "wheel", "box": [10, 150, 20, 20], "attributes": []}
    ]
    cand["context_json"] = json.dumps(ctx_objs)
    edit["candidate_json"] = json.dumps(cand)
    (o,) = run_prompt(
        RulesClient(rules=rules_table()), RE_ANALYSIS, [PromptInput(analysis_context(edit))], parse_retries=0
    )
    assert o.status == "ok" and o.fields["discard"] is True and "cannot be told apart" in o.fields["discard_reason"]
