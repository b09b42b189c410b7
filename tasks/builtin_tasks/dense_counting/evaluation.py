"""DC's evaluation hook: the rules backend's offline answers (it counts right from the points)."""

from __future__ import annotations

import re

from tasks.plugin_api import EvalRules, annotations_of, option_letter


class CountRules(EvalRules):
    """Many similar objects with a known count: the baseline counts right from the points."""

    def answer(self, ctx: dict[str, object]) -> str | None:
        ann, qtype, q = annotations_of(ctx), ctx.get("qtype"), str(ctx.get("question", ""))
        count = ann.get("count")
        if count is None:
            return None
        if qtype == "YN":
            nums = [int(n) for n in re.findall(r"\d+", q)]
            if len(nums) >= 2:
                return "Yes" if nums[0] <= count <= nums[1] else "No"
            return "Yes" if nums and nums[0] == count else "No"
        if qtype == "MC":
            opts = list(ctx.get("options_list") or [])
            pick = None
            for i, o in enumerate(opts):
                nums = [int(n) for n in re.findall(r"\d+", o)]
                if (len(nums) == 1 and nums[0] == count) or (len(nums) >= 2 and nums[0] <= count <= nums[1]):
                    pick = i
                    break
            return option_letter(opts, pick)
        if re.search(r"\brange\b", q, re.I):
            return f"{max(0, count - 2)}-{count + 2}"
        return str(count)

    def reasoning(self, ctx: dict[str, object]) -> str:
        return f"Counting the instances one by one I reach {annotations_of(ctx).get('count')}."

    def subcause(self, response: str, facts: dict[str, object]) -> str:
        if re.search(r"\b(rows?|columns?|grid|pattern|arranged|per row)\b", response):
            return "SC-2"
        if re.search(r"\bone by one\b|\b\d+\s*,\s*\d+\s*,\s*\d+", response):
            return "SC-3"
        return "SC-1"

    def span_type(self, facts: dict[str, object]) -> str:
        return "Numerical Attribute"

    def span_phrases(self, response: str, facts: dict[str, object]) -> list[str]:
        if facts.get("count") is None:
            return []
        return sorted({n for n in re.findall(r"\b\d+\b", response) if n != str(facts["count"])})


RULES = CountRules()
