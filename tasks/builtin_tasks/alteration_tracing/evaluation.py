"""AT's evaluation hook: the rules backend's offline answers (it sees no change between the pictures)."""

from __future__ import annotations

import re

from tasks.plugin_api import EvalRules, option_letter

_SAME = re.compile(
    r"\b(identical|same|unchanged|no change|nothing changed|not changed|no object was|nothing was)\b", re.I
)


class ChangeRules(EvalRules):
    """One small edit separates two pictures: the baseline sees no change."""

    def answer(self, ctx: dict[str, object]) -> str | None:
        qtype, q = ctx.get("qtype"), str(ctx.get("question", ""))
        if qtype == "YN":
            return "Yes" if _SAME.search(q) else "No"
        if qtype == "MC":
            opts = list(ctx.get("options_list") or [])
            return option_letter(
                opts,
                next(
                    (
                        i
                        for i, o in enumerate(opts)
                        if re.search(r"\b(nothing|no object|unchanged|no change)\b", o, re.I)
                    ),
                    None,
                ),
            )
        return "Nothing changed between the two pictures."

    def reasoning(self, ctx: dict[str, object]) -> str:
        return "Both pictures show the same objects in the same places; they look identical."

    def subcause(self, response: str, facts: dict[str, object]) -> str:
        if re.search(r"\b(identical|same|no difference|no change)\b", response):
            return "SC-1"
        if re.search(r"\b(changed|moved|removed|added|replaced|different)\b", response):
            return "SC-3"
        return "SC-2"

    def span_type(self, facts: dict[str, object]) -> str:
        return "Spatial Relation"

    def span_phrases(self, response: str, facts: dict[str, object]) -> list[str]:
        return ["identical", "the same", "no change"]


RULES = ChangeRules()
