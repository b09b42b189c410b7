"""RE's evaluation hooks: the prior answer (the erased object) and the facts the sub-cause classifier sees."""

from __future__ import annotations

from typing import Any


def prior_terms(ann: dict[str, Any]) -> list[str]:
    """A ``prior_terms`` hook: the erased object's name (the answer co-occurrence suggests)."""
    return [ann["target_name"]] if ann.get("target_name") else []


def subcause_facts(facts: dict[str, Any]) -> dict[str, Any]:
    """A ``subcause_facts`` hook: the item's target is the object that was removed."""
    out = dict(facts)
    if "target_name" in out:
        out["removed_object"] = out.pop("target_name")
    return out
