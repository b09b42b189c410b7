"""The offline ``rules`` backend's registry: per prompt, a function that answers from annotations.

A rules answer returns the prompt's output fields (or ``None`` for "not applicable"); the rules
client turns them into text the way a real model answers, so the normal parse path runs.
"""

from __future__ import annotations

from typing import Any, Callable

RulesFn = Callable[[dict[str, Any]], dict[str, Any] | None]

_RULES: dict[str, RulesFn] = {}


def rules_answer(prompt_name: str) -> Callable[[RulesFn], RulesFn]:
    """Decorator: ``@rules_answer("re_instruction") def f(context) -> dict | None``."""

    def deco(fn: RulesFn) -> RulesFn:
        if prompt_name in _RULES and _RULES[prompt_name] is not fn:
            raise ValueError(f"a rules answer for prompt {prompt_name!r} is already registered ({_RULES[prompt_name].__module__})")
        _RULES[prompt_name] = fn
        return fn

    return deco


def get_rules_answer(prompt_name: str) -> RulesFn:
    if prompt_name not in _RULES:
        from prompts.spec import load_prompt_modules

        load_prompt_modules()
    try:
        return _RULES[prompt_name]
    except KeyError:
        raise KeyError(f"the rules backend has no answer for prompt {prompt_name!r}; known: {sorted(_RULES)}") from None


def registered_rules() -> list[str]:
    from prompts.spec import load_prompt_modules

    load_prompt_modules()
    return sorted(_RULES)
