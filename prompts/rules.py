"""The offline ``rules`` backend's table: per prompt, a function that answers from annotations.

A rules answer returns the prompt's output fields (or ``None`` for "not applicable"); the rules
client turns them into text the way a real model answers, so the normal parse path runs.

The top of ``prompts/``: the table is built explicitly in :func:`rules_table` (which module
answers which prompt is written down here or in a task's spec, not discovered by importing
modules for their side effects). A task names the answers to its own prompts in its spec
(:data:`TASK_RULES_HOOKS`: ``instruct_rules`` answers its ``instruct_prompt``, ``analysis_rules``
its ``analysis_prompt``), so a third-party task brings them by naming them; other plugins add
theirs with :func:`register_rules`. This module looks no task up (issue 41): the task room
resolves those hooks (``tasks/engine/prompt_hooks.py``) and hands the tasks'
:class:`~prompts.catalogue.TaskPrompts` and :class:`~prompts.eval_rules.EvalAnswers` down; the
rules client holds the table it is given. The answer modules import only ``prompts.rules_api``
(``RulesFn``, the ``@rules_answer`` mark), never this module.
"""

from __future__ import annotations

from collections.abc import Mapping

from prompts.catalogue import TaskPrompts
from prompts.eval_rules import EVAL_PROMPTS, EvalAnswers
from prompts.rules_api import RulesFn

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


def _package_rules(evaluation: EvalAnswers) -> dict[str, RulesFn]:
    """Prompt name -> rules answer of the prompts no task owns (evaluation)."""
    table = evaluation.table()
    for name, fn in table.items():
        _check_mark(name, fn, "rules table")
    return table


def task_rules(tasks: Mapping[str, TaskPrompts]) -> dict[str, RulesFn]:
    """Prompt name -> rules answer that each of ``tasks`` names for its own prompts."""
    table: dict[str, RulesFn] = {}
    for task_id, own in tasks.items():
        for rules_hook, prompt_hook in TASK_RULES_HOOKS.items():
            fn = own.rules.get(rules_hook)
            if fn is None:
                continue
            prompt = own.prompts.get(prompt_hook)
            if prompt is None:
                raise ValueError(
                    f"task {task_id!r}: hook {rules_hook!r} answers its {prompt_hook!r}, which it does not name"
                )
            _check_mark(prompt.name, fn, f"task {task_id!r} hook {rules_hook!r}")
            if table.get(prompt.name, fn) is not fn:
                raise ValueError(
                    f"task {task_id!r}: prompt {prompt.name!r} already has another rules answer ({table[prompt.name].__module__})"
                )
            table[prompt.name] = fn
    return table


def rules_table(tasks: Mapping[str, TaskPrompts], evaluation: EvalAnswers) -> dict[str, RulesFn]:
    """Prompt name -> rules answer of every prompt known without :func:`register_rules`: the
    evaluation prompts' answers (``evaluation``: the tasks' evaluation rules and judge rules) and
    those the ``tasks`` name for their own prompts. What the rules client is given."""
    table = _package_rules(evaluation)
    for name, fn in task_rules(tasks).items():
        if table.get(name, fn) is not fn:
            raise ValueError(
                f"rules table: prompt {name!r} has an answer of its own and one a task names ({fn.__module__}.{fn.__name__})"
            )
        table[name] = fn
    return table


def register_rules(prompt_name: str, fn: RulesFn) -> None:
    """Add a rules answer for a prompt defined outside this package that no task names (a task
    names the answers to its own prompts in its spec: :data:`TASK_RULES_HOOKS`). A clash with an
    evaluation prompt or another registered answer raises here; one with a task's answer where
    the table is read (:func:`get_rules_answer`)."""
    if prompt_name in EVAL_PROMPTS:
        raise ValueError(f"a rules answer for prompt {prompt_name!r} is already registered (prompts.eval_rules)")
    old = _EXTRA.get(prompt_name)
    if old is not None and old is not fn:
        raise ValueError(f"a rules answer for prompt {prompt_name!r} is already registered ({old.__module__})")
    _EXTRA[prompt_name] = fn


def _with_extra(table: Mapping[str, RulesFn]) -> dict[str, RulesFn]:
    known = dict(table)
    for name, fn in _EXTRA.items():
        if known.get(name, fn) is not fn:
            raise ValueError(f"a rules answer for prompt {name!r} is already registered ({known[name].__module__})")
        known[name] = fn
    return known


def get_rules_answer(prompt_name: str, table: Mapping[str, RulesFn]) -> RulesFn:
    """The answer of ``prompt_name`` in ``table`` (a :func:`rules_table`) or registered; an
    image-only or unknown prompt raises saying why."""
    known = _with_extra(table)
    try:
        return known[prompt_name]
    except KeyError:
        if prompt_name in IMAGE_ONLY_PROMPTS:
            raise KeyError(
                f"the rules backend does not answer prompt {prompt_name!r}: {IMAGE_ONLY_PROMPTS[prompt_name]}"
            ) from None
        raise KeyError(f"the rules backend has no answer for prompt {prompt_name!r}; known: {sorted(known)}") from None


def registered_rules(table: Mapping[str, RulesFn]) -> list[str]:
    """Names of every prompt the rules backend answers: those of ``table`` and the registered ones."""
    return sorted(_with_extra(table))
