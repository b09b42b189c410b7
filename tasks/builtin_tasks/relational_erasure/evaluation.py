"""RE's evaluation hooks: the prior answer (the erased object), the facts the sub-cause classifier
sees and the rules backend's offline answers (it "sees" the erased object)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from tasks.plugin_api import EvalRules, annotations_of


def prior_terms(ann: Mapping[str, object]) -> list[str]:
    """A ``prior_terms`` hook: the erased object's name (the answer co-occurrence suggests)."""
    return [ann["target_name"]] if ann.get("target_name") else []


def subcause_facts(facts: dict[str, object]) -> dict[str, object]:
    """A ``subcause_facts`` hook: the item's target is the object that was removed."""
    out = dict(facts)
    if "target_name" in out:
        out["removed_object"] = out.pop("target_name")
    return out


# ---------------------------------------------------------------------------- the rules backend
_ACTIVITY = re.compile(r"\b\w+ing\b")
_SCENE = re.compile(r"\b(scene|setting|place|kitchen|street|room|beach|park|usually|typically|commonly|often)\b", re.I)


class ErasureRules(EvalRules):
    """Something that usually appears with its partner was erased: the prior says it is there."""

    def reasoning(self, ctx: dict[str, object]) -> str:
        return f"The scene is the kind of place where {annotations_of(ctx).get('target_name') or 'this object'} is usually found, so it should be there."

    def subcause(self, response: str, facts: dict[str, object]) -> str:
        if _SCENE.search(response):
            return "SC-3"
        if any(
            w not in ("nothing", "something", "thing", "looking", "morning", "during")
            for w in _ACTIVITY.findall(response)
        ):
            return "SC-2"
        return "SC-1"


RULES = ErasureRules()
