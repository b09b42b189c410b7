"""The offline ``rules`` backend's table: per prompt, a function that answers from annotations.

A rules answer returns the prompt's output fields (or ``None`` for "not applicable"); the rules
client turns them into text the way a real model answers, so the normal parse path runs.

The top of ``prompts/``: the table is built explicitly in :func:`builtin_rules` (which module
answers which prompt is written down here or in a task's spec, not discovered by importing
modules for their side effects). A task names the answers to its own prompts in its spec
(:data:`TASK_RULES_HOOKS`: ``instruct_rules`` answers its ``instruct_prompt``, ``analysis_rules``
its ``analysis_prompt``), so a third-party task brings them by naming them; other plugins add
theirs with :func:`register_rules`. The answer modules import only ``prompts.rules_api``
(``RulesFn``, the ``@rules_answer`` mark), never this module.
"""

from __future__ import annotations

from functools import lru_cache

from prompts import eval_rules
from prompts.catalogue import task_prompt
from prompts.rules_api import RulesFn
from storage.task_spec import all_tasks

_EXTRA: dict[str, RulesFn] = {}

# Spec hook naming a task's rules answer -> the spec hook naming the prompt it answers.
TASK_RULES_HOOKS: dict[str, str] = {"instruct_rules": "instruct_prompt", "analysis_rules": "analysis_prompt"}

# Prompts that exist only to look at pixels: the rules backend sees no image, so an answer would
# merely restate what the caller expects. They are never sent to it (tasks/stages/verify_model.model_checks_on).
IMAGE_ONLY_PROMPTS: dict[str, str] = {
    "verify_edit": "edit checks are asked only of image-seeing backends (openai, transformers)",
}


def _check_mark(name: str, fn: RulesFn, where: str) -> None:
    mark = getattr(fn, "rules_prompt", name)
    if mark != name:
        raise ValueError(f"{where}: {fn.__module__}.{fn.__name__} is listed for {name!r} but marked for {mark!r}")


@lru_cache(maxsize=1)
def _package_rules() -> dict[str, RulesFn]:
    """Prompt name -> rules answer of the prompts no task owns (evaluation)."""
    table: dict[str, RulesFn] = dict(eval_rules.RULES)
    for name, fn in table.items():
        _check_mark(name, fn, "rules table")
    return table


def task_rules() -> dict[str, RulesFn]:
    """Prompt name -> rules answer that each registered task names for its own prompts."""
    table: dict[str, RulesFn] = {}
    for task_id, spec in all_tasks().items():
        for rules_hook, prompt_hook in TASK_RULES_HOOKS.items():
            if not spec.has(rules_hook):
                continue
            prompt = task_prompt(task_id, prompt_hook)
            if prompt is None:
                raise ValueError(
                    f"task {task_id!r}: hook {rules_hook!r} answers its {prompt_hook!r}, which it does not name"
                )
            fn = spec.hook(rules_hook)
            _check_mark(prompt.name, fn, f"task {task_id!r} hook {rules_hook!r}")
            if table.get(prompt.name, fn) is not fn:
                raise ValueError(
                    f"task {task_id!r}: prompt {prompt.name!r} already has another rules answer ({table[prompt.name].__module__})"
                )
            table[prompt.name] = fn
    return table


def builtin_rules() -> dict[str, RulesFn]:
    """Prompt name -> rules answer of every prompt known without :func:`register_rules`: the
    evaluation prompts' answers and those the registered tasks name for their own prompts."""
    table = dict(_package_rules())
    for name, fn in task_rules().items():
        if table.get(name, fn) is not fn:
            raise ValueError(
                f"rules table: prompt {name!r} has an answer of its own and one a task names ({fn.__module__}.{fn.__name__})"
            )
        table[name] = fn
    return table


def register_rules(prompt_name: str, fn: RulesFn) -> None:
    """Add a rules answer for a prompt defined outside this package that no task names (a task
    names the answers to its own prompts in its spec: :data:`TASK_RULES_HOOKS`)."""
    known = {**builtin_rules(), **_EXTRA}
    if prompt_name in known and known[prompt_name] is not fn:
        raise ValueError(
            f"a rules answer for prompt {prompt_name!r} is already registered ({known[prompt_name].__module__})"
        )
    _EXTRA[prompt_name] = fn


def get_rules_answer(prompt_name: str) -> RulesFn:
    """The answer of ``prompt_name``; an image-only or unknown prompt raises saying why."""
    table = {**builtin_rules(), **_EXTRA}
    try:
        return table[prompt_name]
    except KeyError:
        if prompt_name in IMAGE_ONLY_PROMPTS:
            raise KeyError(
                f"the rules backend does not answer prompt {prompt_name!r}: {IMAGE_ONLY_PROMPTS[prompt_name]}"
            ) from None
        raise KeyError(f"the rules backend has no answer for prompt {prompt_name!r}; known: {sorted(table)}") from None


def registered_rules() -> list[str]:
    """Names of every prompt the rules backend answers, built-in and registered."""
    return sorted({**builtin_rules(), **_EXTRA})
