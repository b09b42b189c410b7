"""Decoding the ``*_json`` columns that carry task-specific payloads between stages."""

from __future__ import annotations

import json
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
        raise ValueError(f"{owner}: {column} must be a JSON {'object' if kind is dict else kind.__name__}, got {type(value).__name__}")
    return value
