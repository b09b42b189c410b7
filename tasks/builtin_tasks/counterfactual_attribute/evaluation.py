"""CA's evaluation hook: the prior answer (the object's original attribute)."""

from __future__ import annotations

from typing import Any


def prior_terms(ann: dict[str, Any]) -> list[str]:
    """A ``prior_terms`` hook: the object's original attribute (the answer language priors suggest)."""
    return [ann["original_attribute"]] if ann.get("original_attribute") else []
