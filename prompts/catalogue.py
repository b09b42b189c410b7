"""The catalogue of prompts: the core's own prompt specs (verification, evaluation), listed here, plus those tasks and plugins bring.

The prompt modules define their specs as plain values and register nothing; this module names
them, so which prompts exist is written down in one place instead of being discovered by
importing modules for their side effects. Callers that know their prompt import its spec
directly; callers that hold only a name (the CLI, the rules backend's tests, plugins) ask here.

A task names its own prompts in its spec (``storage/task_spec.py``): the hooks in
:data:`TASK_PROMPT_HOOKS` (``instruct_prompt``, ``analysis_prompt``). This module looks no task
up (issue 41): the task room resolves those hooks (``tasks/engine/prompt_hooks.py``) and hands
each task's :class:`TaskPrompts` down, so a third-party task brings its prompts by naming them,
without a call to :func:`register_prompt`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from types import MappingProxyType

from prompts import eval_prompts, verify_prompts
from prompts.rules_api import RulesFn
from prompts.spec import PromptSpec

# The spec hooks that name a task's prompts: the instruct stage's (one per candidate) and the qa
# stage's analysis of an edit (absent where the questions need no model, e.g. from an edit plan).
TASK_PROMPT_HOOKS = ("instruct_prompt", "analysis_prompt")

_EXTRA: dict[str, PromptSpec] = {}


@dataclass(frozen=True)
class TaskPrompts:
    """One task's prompts and their rules answers, its hooks already loaded by the task room:
    ``prompts`` (hook of :data:`TASK_PROMPT_HOOKS` -> spec) and ``rules`` (``instruct_rules`` /
    ``analysis_rules`` -> the rules backend's answer, ``prompts.rules.TASK_RULES_HOOKS``). Only
    the hooks the task sets are present."""

    prompts: Mapping[str, PromptSpec] = field(default_factory=dict)
    rules: Mapping[str, RulesFn] = field(default_factory=dict)


# What a caller without tasks passes: the built-in and registered prompts only.
NO_TASKS: Mapping[str, TaskPrompts] = MappingProxyType({})


def _checked(spec: PromptSpec) -> PromptSpec:
    if not spec.path.is_file():
        raise FileNotFoundError(f"prompt {spec.name!r}: template {spec.template!r} not found in {spec.folder}")
    return spec


@lru_cache(maxsize=1)
def builtin_prompts() -> dict[str, PromptSpec]:
    """Name -> spec of every prompt this package defines (each template checked to exist)."""
    specs = [
        verify_prompts.VERIFY_EDIT,
        *eval_prompts.ANSWER_SPECS.values(),
        eval_prompts.SA_JUDGE,
        eval_prompts.EXTRACT,
        eval_prompts.SUBCAUSE,
        eval_prompts.SUBCAUSE_PAIR,
        eval_prompts.SPAN_DETECT,
    ]
    table: dict[str, PromptSpec] = {}
    for spec in specs:
        if spec.name in table:
            raise ValueError(f"prompt {spec.name!r} is listed twice in the catalogue")
        table[spec.name] = _checked(spec)
    return table


def task_prompt(tasks: Mapping[str, TaskPrompts], task_id: str, hook: str) -> PromptSpec | None:
    """The prompt the task ``task_id`` names as ``hook`` (one of :data:`TASK_PROMPT_HOOKS`), or
    ``None`` when ``tasks`` does not hold the task or it has no such prompt."""
    own = tasks.get(task_id)
    return own.prompts.get(hook) if own is not None else None


def task_prompts(tasks: Mapping[str, TaskPrompts], hook: str | None = None) -> dict[str, PromptSpec]:
    """Name -> spec of the prompts the ``tasks`` name (``hook``: only that hook's), in the order of
    ``tasks`` (benchmark order); two tasks naming different specs under one name raise."""
    table: dict[str, PromptSpec] = {}
    for task_id, own in tasks.items():
        for name in (hook,) if hook else TASK_PROMPT_HOOKS:
            spec = own.prompts.get(name)
            if spec is None:
                continue
            if table.get(spec.name, spec) != spec:
                raise ValueError(f"task {task_id!r}: prompt {spec.name!r} differs from the one another task names")
            table[spec.name] = spec
    return table


def _known(tasks: Mapping[str, TaskPrompts]) -> dict[str, PromptSpec]:
    table = dict(builtin_prompts())
    for name, spec in task_prompts(tasks).items():
        old = table.get(name)
        if old is not None and old != spec:
            raise ValueError(
                f"prompt {name!r}: a task names a spec that differs from the built-in one ({old.version} vs {spec.version})"
            )
        table[name] = spec if old is not None else _checked(spec)
    return table


def _with_extra(known: dict[str, PromptSpec]) -> dict[str, PromptSpec]:
    """``known`` and the registered prompts; a registered spec that differs from a known one raises
    (the known ones checked at :func:`register_prompt` may lack the tasks' prompts)."""
    for name, spec in _EXTRA.items():
        old = known.get(name)
        if old is not None and old != spec:
            raise ValueError(
                f"prompt {name!r} is already registered with a different spec ({old.version} vs {spec.version})"
            )
        known[name] = spec if old is None else old
    return known


def register_prompt(spec: PromptSpec, tasks: Mapping[str, TaskPrompts] = NO_TASKS) -> PromptSpec:
    """Add a prompt defined outside this package that no task names (a task's own prompts are
    named in its spec); re-registering the identical spec is allowed. ``tasks``: the tasks' prompts
    to check against as well (a clash with one is otherwise found at lookup)."""
    old = _with_extra(_known(tasks)).get(spec.name)
    if old is not None:
        if old != spec:
            raise ValueError(
                f"prompt {spec.name!r} is already registered with a different spec ({old.version} vs {spec.version})"
            )
        return old
    _EXTRA[spec.name] = _checked(spec)
    return spec


def get_prompt(name: str, tasks: Mapping[str, TaskPrompts] = NO_TASKS) -> PromptSpec:
    """The spec named ``name`` among the built-in, the ``tasks``' and the registered prompts; an
    unknown name raises listing the known ones."""
    table = _with_extra(_known(tasks))
    try:
        return table[name]
    except KeyError:
        raise KeyError(f"unknown prompt {name!r}; registered: {sorted(table)}") from None


def all_prompts(tasks: Mapping[str, TaskPrompts] = NO_TASKS) -> dict[str, PromptSpec]:
    """Name -> spec of every known prompt, built-in, named by one of ``tasks``, and registered, sorted by name."""
    return dict(sorted(_with_extra(_known(tasks)).items()))
