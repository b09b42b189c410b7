"""The types of JSON values: what ``json.loads`` gives and ``json.dumps`` takes.

Why: annotations and truth files, manifests and metric tables are JSON all the way down; saying
so (rather than ``Any``) tells a reader a value can be written to a file and read back unchanged.
"""

from __future__ import annotations

from typing import Union

__all__ = ["JSONObject", "JSONScalar", "JSONValue"]

JSONScalar = Union[None, bool, int, float, str]  # noqa: UP007 (a runtime alias with forward references)
JSONValue = Union[JSONScalar, list["JSONValue"], dict[str, "JSONValue"]]  # noqa: UP007
JSONObject = dict[str, JSONValue]
