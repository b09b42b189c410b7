"""The offline ``rules`` backend's table: per prompt, a function that answers from annotations.

A rules answer returns the prompt's output fields (or ``None`` for "not applicable"); the rules
client turns them into text the way a real model answers, so the normal parse path runs.

The top of ``prompts/``: the table is built explicitly in :func:`builtin_rules` (which module
answers which prompt is written down here, not discovered by importing modules for their side
effects); plugins add theirs with :func:`register_rules`. The answer modules import only
``prompts.rules_api`` (``RulesFn``, the ``@rules_answer`` mark), never this module.
"""

from __future__ import annotations

from functools import lru_cache

from prompts import analysis_rules, eval_rules, instruct_rules
from prompts.rules_api import RulesFn

_EXTRA: dict[str, RulesFn] = {}

# Prompts that exist only to look at pixels: the rules backend sees no image, so an answer would
# merely restate what the caller expects. They are never sent to it (tasks/stages/verify_model.model_checks_on).
IMAGE_ONLY_PROMPTS: dict[str, str] = {
    "verify_edit": "edit checks are asked only of image-seeing backends (openai, transformers)",
}


@lru_cache(maxsize=1)
def builtin_rules() -> dict[str, RulesFn]:
    """Prompt name -> rules answer of every prompt this package defines."""
    table: dict[str, RulesFn] = {
        "re_instruction": instruct_rules.re_instruction,
        "ca_instructions": instruct_rules.ca_instructions,
        "at_edit_plan": instruct_rules.at_edit_plan,
        "dc_ambiguity": instruct_rules.dc_ambiguity,
        "re_analysis": analysis_rules.re_analysis,
        "ca_analysis": analysis_rules.ca_analysis,
        **eval_rules.RULES,
    }
    for name, fn in table.items():
        mark = getattr(fn, "rules_prompt", name)
        if mark != name:
            raise ValueError(f"rules table: {fn.__module__}.{fn.__name__} is listed for {name!r} but marked for {mark!r}")
    return table


def register_rules(prompt_name: str, fn: RulesFn) -> None:
    """Add a rules answer for a prompt defined outside this package (e.g. a plugin)."""
    known = {**builtin_rules(), **_EXTRA}
    if prompt_name in known and known[prompt_name] is not fn:
        raise ValueError(f"a rules answer for prompt {prompt_name!r} is already registered ({known[prompt_name].__module__})")
    _EXTRA[prompt_name] = fn


def get_rules_answer(prompt_name: str) -> RulesFn:
    """The answer of ``prompt_name``; an image-only or unknown prompt raises saying why."""
    table = {**builtin_rules(), **_EXTRA}
    try:
        return table[prompt_name]
    except KeyError:
        if prompt_name in IMAGE_ONLY_PROMPTS:
            raise KeyError(f"the rules backend does not answer prompt {prompt_name!r}: {IMAGE_ONLY_PROMPTS[prompt_name]}") from None
        raise KeyError(f"the rules backend has no answer for prompt {prompt_name!r}; known: {sorted(table)}") from None


def registered_rules() -> list[str]:
    """Names of every prompt the rules backend answers, built-in and registered."""
    return sorted({**builtin_rules(), **_EXTRA})
