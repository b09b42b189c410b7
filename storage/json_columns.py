"""Decoding the ``*_json`` columns that carry task-specific payloads between stages."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


def load_json_column(text: str | None, column: str, owner: str, kind: type = dict) -> Any:
    """The decoded value of one JSON column (an empty ``kind`` when absent).

    Malformed JSON or a value of the wrong kind raises ``ValueError`` naming the owner row
    (e.g. ``edit 3f2a...``) and the column, so the caller can turn it into a reject.
    """
    if not text:
        return kind()
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{owner}: {column} is not valid JSON: {exc}") from None
    if not isinstance(value, kind):
        raise ValueError(
            f"{owner}: {column} must be a JSON {'object' if kind is dict else kind.__name__}, got {type(value).__name__}"
        )
    return value


def candidate_of(row: Mapping[str, Any], owner: str) -> dict[str, Any]:
    """A row's ``candidate_json`` (instruction, edit): the one parser, so every stage applies the
    same rule: absent is ``{}``, malformed raises ``ValueError`` naming ``owner``."""
    return load_json_column(row.get("candidate_json"), "candidate_json", owner)


def context_objects(candidate: Mapping[str, Any], owner: str) -> list[dict[str, Any]]:
    """The other annotated objects of a candidate's image (its ``context_json``): absent is ``[]``;
    malformed JSON, a non-list or a non-object entry raises ``ValueError`` naming ``owner``."""
    objs = load_json_column(candidate.get("context_json"), "context_json", owner, list)
    for i, o in enumerate(objs):
        if not isinstance(o, dict):
            raise ValueError(f"{owner}: context_json entry {i} must be a JSON object, got {type(o).__name__}")
    return objs


def cut_objects_of(edit: Mapping[str, Any], owner: str) -> list[dict[str, Any]]:
    """The other annotated objects an edit covered part of (``qc_json`` ->
    ``verification.checks.cut_objects``, written by ``editors.verify``): empty when verification
    was off or the edit predates the record. What no question may name as still there."""
    verdict = load_json_column(edit.get("qc_json"), "qc_json", owner).get("verification") or {}
    return [c for c in (verdict.get("checks") or {}).get("cut_objects") or [] if isinstance(c, dict)]


def instruction_fields(row: Mapping[str, Any], owner: str) -> dict[str, Any]:
    """An instruction's structured fields: ``fields_json`` of an instruction row, carried forward
    as ``instruction_fields_json`` by its edit rows. The one decoder of that payload, so every
    stage applies one rule: absent is ``{}``; malformed JSON or a value that is not a JSON object
    raises ``ValueError`` naming ``owner`` and the column (the edit stage makes it a
    ``bad_request`` reject; nothing reads it as ``{}``)."""
    column = "instruction_fields_json" if "instruction_fields_json" in row else "fields_json"
    return load_json_column(row.get(column), column, owner)
