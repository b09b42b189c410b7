"""JSON payload columns: empty when absent, a named error when malformed."""

import pytest

from storage.json_columns import candidate_of, context_objects, load_json_column


def test_absent_is_empty_and_valid_decodes() -> None:
    assert load_json_column(None, "rubric_json", "question q1") == {}
    assert load_json_column("", "context_json", "candidate c", list) == []
    assert load_json_column('{"a": 1}', "rubric_json", "question q1") == {"a": 1}


@pytest.mark.parametrize("text,kind,match", [("{oops", dict, "not valid JSON"), ("[1]", dict, "must be a JSON object"), ('{"a": 1}', list, "must be a JSON list")])
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
