"""Parsing messy real-world answers: prose, markdown fences, bold keys, missing fields, Chinese text."""

from __future__ import annotations

import pytest

from prompts.parsing import ParseError, parse_answer
from tasks.builtin_tasks.alteration_tracing.prompts import ATEditPlan
from tasks.builtin_tasks.counterfactual_attribute.prompts import CAInstructions
from tasks.builtin_tasks.dense_counting.prompts import DCAmbiguity
from tasks.builtin_tasks.relational_erasure.prompts import REInstruction

RE_CTX = {"target_name": "wheel", "partner_name": "skateboard"}
GOOD_INSTR = "Remove the four wheels under the skateboard; preserve the deck and do not alter the background."


def test_plain_field_lines() -> None:
    text = f"remove: wheel\nkeep: skateboard\ninstruction: {GOOD_INSTR}"
    p = parse_answer(text, REInstruction, RE_CTX)
    assert p.status == "ok" and p.fields == {"remove": "wheel", "keep": "skateboard", "instruction": GOOD_INSTR}


def test_prose_bold_keys_and_bullets_around_fields() -> None:
    text = (
        "Sure! After looking at the image carefully, here is my answer.\n\n"
        "- **Remove:** wheels\n"
        "- **Keep**: Skateboard\n"
        f"- **Instruction:** {GOOD_INSTR}\n\n"
        "Let me know if you need anything else."
    )
    p = parse_answer(text, REInstruction, RE_CTX)
    assert p.status == "ok"
    assert p.fields == {"remove": "wheels", "keep": "Skateboard", "instruction": GOOD_INSTR}


def test_article_in_object_name_is_a_validation_error_not_silently_fixed() -> None:
    text = f"remove: the wheels\nkeep: skateboard\ninstruction: {GOOD_INSTR}"
    with pytest.raises(ParseError, match="article"):
        parse_answer(text, REInstruction, RE_CTX)


def test_markdown_json_fence_with_prose() -> None:
    text = (
        'Here you go:\n```json\n{"has_ambiguity": false, "severity": "Mild"}\n```\nThe apples are clearly separated.'
    )
    p = parse_answer(text, DCAmbiguity)
    assert p.status == "ok" and p.fields == {"has_ambiguity": False, "severity": "mild"}


def test_inline_json_with_braces_in_strings() -> None:
    text = 'Answer: {"has_ambiguity": true, "severity": "severe", "note": "count {approx} unclear"} thanks'
    assert parse_answer(text, DCAmbiguity).fields == {"has_ambiguity": True, "severity": "severe"}


def test_inconsistent_severity_is_rejected_with_a_message() -> None:
    with pytest.raises(ParseError, match="has_ambiguity must be false"):
        parse_answer("has_ambiguity: true\nseverity: none", DCAmbiguity)


def test_missing_field_names_the_field() -> None:
    with pytest.raises(ParseError, match="keep"):
        parse_answer(f"remove: wheel\ninstruction: {GOOD_INSTR}", REInstruction, RE_CTX)


def test_no_fields_at_all() -> None:
    with pytest.raises(ParseError, match="no field"):
        parse_answer("I cannot see the image clearly, sorry.", REInstruction, RE_CTX)


def test_empty_answer() -> None:
    with pytest.raises(ParseError, match="empty"):
        parse_answer("   \n", REInstruction, RE_CTX)


def test_chinese_where_english_is_required() -> None:
    text = "remove: wheel\nkeep: skateboard\ninstruction: 移除滑板下面的四个轮子，保持背景不变。"
    with pytest.raises(ParseError, match="English"):
        parse_answer(text, REInstruction, RE_CTX)


def test_not_applicable_variants() -> None:
    for text in (
        "Current instance is not applicable.",
        "NOT APPLICABLE",
        "The case is not_applicable because the wheel is tiny.",
    ):
        assert parse_answer(text, REInstruction, RE_CTX).status == "not_applicable"
    assert parse_answer("edit_type: not_applicable", ATEditPlan, {}).status == "not_applicable"


def test_remove_must_come_from_the_relation() -> None:
    text = f"remove: tree\nkeep: skateboard\ninstruction: {GOOD_INSTR}"
    with pytest.raises(ParseError, match="relation"):
        parse_answer(text, REInstruction, RE_CTX)


def test_multiline_value_and_template_braces_kept_by_the_model() -> None:
    text = "Image editing instruction:\nremove: {wheel}\nkeep: {skateboard}\ninstruction: Remove the wheels under the board;\npreserve the deck and do not alter the background."
    p = parse_answer(text, REInstruction, RE_CTX)
    assert p.fields["remove"] == "wheel"
    assert p.fields["instruction"].endswith("do not alter the background.")


CA_OK = (
    "direction_a: Material Replacement\nnew_attribute_a: woven wicker\n"
    "instruction_a: Make the bench out of wicker. Preserve the tree and other surrounding objects in the image unchanged; do not alter the background of the image.\n"
    "direction_b: color\nnew_attribute_b: dusty purple\n"
    "instruction_b: Turn the bench dusty purple. Preserve the tree and other surrounding objects in the image unchanged; do not alter the background of the image."
)


def test_ca_direction_synonyms_are_mapped() -> None:
    p = parse_answer(CA_OK, CAInstructions, {"attribute": "wooden"})
    assert (p.fields["direction_a"], p.fields["direction_b"]) == ("material", "colour")


def test_ca_same_direction_twice_and_original_attribute_fail() -> None:
    with pytest.raises(ParseError, match="different directions"):
        parse_answer(CA_OK.replace("direction_b: color", "direction_b: material"), CAInstructions, {})
    with pytest.raises(ParseError, match="typical attribute"):
        parse_answer(CA_OK, CAInstructions, {"attribute": "woven wicker"})
    with pytest.raises(ParseError, match="direction_a"):
        parse_answer(CA_OK.replace("Material Replacement", "vibes"), CAInstructions, {})


def _at(**over: object) -> dict:
    base = {
        "edit_type": "move",
        "instruction": "Move the mug to the right of the plate.",
        "A": "the kitchen counter near the sink",
        "B": "red mug",
        "C": "was moved to the right of the plate",
        "A_prime": "the window sill",
        "B_prime": "potted plant",
        "C_prime": "was moved to the left of the plate",
        "overall_distractors": ["x1", "x2", "x3"],
        "location_distractors": ["l1", "l2", "l3"],
        "object_location_distractors": ["o1", "o2", "o3"],
        "b_prime_distractors": ["b1", "b2", "b3"],
        "a_prime_distractors": ["a1", "a2", "a3"],
        "c_prime_objects": ["kettle", "toaster", "plate"],
    }
    base.update(over)
    return base


def test_at_json_and_constraints() -> None:
    import json

    ctx = {"assigned_edit_type": "delete", "fallback_chain": ["move", "add", "replace"], "same_instance_count": 1}
    assert parse_answer(json.dumps(_at()), ATEditPlan, ctx).fields["edit_type"] == "move"
    cases = {
        "delete needs at least two": _at(edit_type="delete"),
        "leading preposition": _at(A="on the kitchen counter"),
        "was' or 'had'": _at(C="moved to the right"),
        "distinct": _at(c_prime_objects=["kettle", "Kettle", "plate"]),
        "at least 3": _at(location_distractors=["l1", "l2"]),
        "another kind": _at(B_prime="red mugs"),
    }
    for message, answer in cases.items():
        with pytest.raises(ParseError, match=message):
            parse_answer(json.dumps(answer), ATEditPlan, ctx)
    with pytest.raises(ParseError, match="assigned type"):
        parse_answer(json.dumps(_at()), ATEditPlan, {"assigned_edit_type": "add", "fallback_chain": ["replace"]})


def test_at_lines_with_semicolon_lists() -> None:
    lines = "\n".join(f"{k}: {'; '.join(v) if isinstance(v, list) else v}" for k, v in _at().items())
    p = parse_answer(lines, ATEditPlan, {})
    assert p.fields["c_prime_objects"] == ["kettle", "toaster", "plate"]


def test_commentary_line_after_fields_is_not_part_of_a_value() -> None:
    text = f"remove: wheel\nkeep: skateboard\ninstruction: {GOOD_INSTR}\nNote: the wheel is small but visible."
    assert parse_answer(text, REInstruction, RE_CTX).fields["instruction"] == GOOD_INSTR
