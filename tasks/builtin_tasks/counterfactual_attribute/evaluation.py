"""CA's evaluation hooks: the prior answer (the object's original attribute) and the rules
backend's offline answers (it reports the usual attribute)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from tasks.plugin_api import EvalRules, annotations_of, mentions


def prior_terms(ann: Mapping[str, object]) -> list[str]:
    """A ``prior_terms`` hook: the object's original attribute (the answer language priors suggest)."""
    return [ann["original_attribute"]] if ann.get("original_attribute") else []


# ---------------------------------------------------------------------------- the rules backend
class AttributeRules(EvalRules):
    """An object's typical attribute was changed: the prior says the usual one."""

    def answer(self, ctx: dict[str, object]) -> str | None:
        ann = annotations_of(ctx)
        if ctx.get("qtype") not in ("YN", "MC") and ann.get("original_attribute"):
            return f"It is {ann['original_attribute']}."
        return None

    def reasoning(self, ctx: dict[str, object]) -> str:
        return f"Objects like this are typically {annotations_of(ctx).get('original_attribute') or 'as usual'}, so that is what I expect here."

    def subcause(self, response: str, facts: dict[str, object]) -> str:
        new = str(facts.get("new_attribute") or "")
        if new and mentions(response, new) and re.search(r"\b(but|however|actually|though)\b", response):
            return "SC-3"
        if re.search(r"\b(typically|usually|commonly|normally|known|expect)\b", response):
            return "SC-1"
        return "SC-2"

    def span_type(self, facts: dict[str, object]) -> str:
        kind = str(facts.get("attribute_type", "")).lower()
        return "Color Attribute" if "colo" in kind else "Shape Attribute" if "shape" in kind else "Knowledge Error"


RULES = AttributeRules()
