"""JSON payload columns: empty when absent, a named error when malformed."""

import pytest

from storage.json_columns import candidate_of, context_objects, instruction_fields, load_json_column


def test_absent_is_empty_and_valid_decodes() -> None:
    assert load_json_column(None, "rubric_json", "question q1") == {}
    assert load_json_column("", "context_json", "candidate c", list) == []
    assert load_json_column('{"a": 1}', "rubric_json", "question q1") == {"a": 1}


@pytest.mark.parametrize(
    "text,kind,match",
    [
        ("{oops", dict, "not valid JSON"),
        ("[1]", dict, "must be a JSON object"),
        ('{"a": 1}', list, "must be a JSON list"),
    ],
)
def test_malformed_names_owner_and_column(text: str, kind: type, match: str) -> None:
    with pytest.raises(ValueError, match=match) as err:
        load_json_column(text, "context_json", "candidate c7", kind)
    assert "candidate c7: context_json" in str(err.value)


def test_candidate_and_context_one_strict_rule() -> None:
    row = {"candidate_json": '{"id": "c1", "context_json": "[{\\"name\\": \\"cup\\"}]"}'}
    assert context_objects(candidate_of(row, "edit e1"), "edit e1") == [{"name": "cup"}]
    assert candidate_of({}, "edit e1") == {} and context_objects({}, "edit e1") == []
    with pytest.raises(ValueError, match="edit e2: candidate_json is not valid JSON"):
        candidate_of({"candidate_json": "{oops"}, "edit e2")
    with pytest.raises(ValueError, match="edit e3: context_json must be a JSON list"):
        context_objects({"context_json": "{}"}, "edit e3")
    with pytest.raises(ValueError, match="edit e4: context_json entry 1 must be a JSON object"):
        context_objects({"context_json": '[{"name": "cup"}, "table"]'}, "edit e4")


def test_instruction_fields_one_strict_rule() -> None:
    """An instruction row's ``fields_json`` and an edit row's ``instruction_fields_json`` decode
    alike; a malformed or non-object value raises naming the row (never read as ``{}``)."""
    assert instruction_fields({"fields_json": '{"a": 1}'}, "instruction i1") == {"a": 1}
    assert instruction_fields({"instruction_fields_json": '{"b": 2}', "fields_json": "{oops"}, "edit e1") == {"b": 2}
    assert instruction_fields({"fields_json": None}, "instruction i1") == {}
    with pytest.raises(ValueError, match="instruction i2: fields_json is not valid JSON"):
        instruction_fields({"fields_json": "{oops"}, "instruction i2")
    with pytest.raises(ValueError, match="edit e3: instruction_fields_json must be a JSON object"):
        instruction_fields({"instruction_fields_json": "[1, 2]"}, "edit e3")


def test_the_edit_stage_refuses_malformed_fields_instead_of_reading_them_as_empty() -> None:
    """``_fields`` raises (its caller writes a ``bad_request`` reject naming the instruction); the
    old code returned ``{}`` for malformed JSON and wrapped a non-object as ``{"value": ...}``."""
    from tasks.stages.edit import _fields

    fields, context = _fields({"id": "i1", "fields_json": '{"instruction": "x"}', "candidate_json": "{}"})
    assert fields == {"instruction": "x"} and context == []
    for bad in ("{oops", "[1]", '"text"'):
        with pytest.raises(ValueError, match="instruction i9: fields_json"):
            _fields({"id": "i9", "fields_json": bad, "candidate_json": "{}"})
