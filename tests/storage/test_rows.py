"""The typed rows of storage/rows.py say what the artifacts hold: a column added to, removed from
or retyped in a schema without its row type (or the other way round) fails here."""

from __future__ import annotations

import types
from typing import Union, get_args, get_origin, get_type_hints

import pyarrow as pa
import pytest

from storage import rows, schemas

PAIRS = [
    (rows.CandidateRow, schemas.CANDIDATES),
    (rows.InstructionRow, schemas.INSTRUCTIONS),
    (rows.EditRow, schemas.EDITS),
    (rows.QuestionRow, schemas.QUESTIONS),
]


def python_type(t: pa.DataType) -> object:
    if pa.types.is_string(t):
        return str
    if pa.types.is_integer(t):
        return int
    if pa.types.is_floating(t):
        return float
    if pa.types.is_boolean(t):
        return bool
    if pa.types.is_list(t):
        return list[python_type(t.value_type)]  # type: ignore[misc]
    raise AssertionError(f"no Python type for {t}")


def _nullable(hint: object) -> tuple[object, bool]:
    if get_origin(hint) in (Union, types.UnionType) and type(None) in get_args(hint):
        (inner,) = [a for a in get_args(hint) if a is not type(None)]
        return inner, True
    return hint, False


def test_item_columns_are_the_item_fields() -> None:
    assert list(get_type_hints(rows.ItemColumns)) == list(schemas.ITEM_COLUMNS)


@pytest.mark.parametrize("row_type, schema", PAIRS, ids=[s.name for _, s in PAIRS])
def test_row_types_mirror_their_schema(row_type: type, schema: schemas.ArtifactSchema) -> None:
    hints = get_type_hints(row_type)
    assert sorted(hints) == sorted(schema.schema.names)  # ItemColumns' come first, the schema has id first
    for f in schema.schema:
        inner, nullable = _nullable(hints[f.name])
        assert (inner, nullable) == (python_type(f.type), f.nullable), f.name
