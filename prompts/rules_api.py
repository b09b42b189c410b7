"""What a rules answer is: the type every module of offline answers writes to, and its mark.

The bottom of the rules side of ``prompts/``: the answer modules (``instruct_rules``,
``analysis_rules``, ``eval_rules``) import this, and ``prompts.rules`` lists them, so no answer
module imports the table that lists it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

RulesFn = Callable[[dict[str, Any]], dict[str, Any] | None]


def rules_answer(prompt_name: str) -> Callable[[RulesFn], RulesFn]:
    """Decorator marking ``fn`` as the rules answer of ``prompt_name`` (it registers nothing):
    ``prompts.rules.rules_table`` checks its table against the marks."""

    def deco(fn: RulesFn) -> RulesFn:
        fn.rules_prompt = prompt_name  # type: ignore[attr-defined]
        return fn

    return deco
