"""The catalogue of prompts: the core's own prompt specs (verification, evaluation), listed here, plus those tasks and plugins bring.

The prompt modules define their specs as plain values and register nothing; this module names
them, so which prompts exist is written down in one place instead of being discovered by
importing modules for their side effects. Callers that know their prompt import its spec
directly; callers that hold only a name (the CLI, the rules backend's tests, plugins) ask here.

A task names its own prompts in its spec (``storage/task_spec.py``): the hooks in
:data:`TASK_PROMPT_HOOKS` (``instruct_prompt``, ``analysis_prompt``). Those are in the catalogue
without a call to :func:`register_prompt`, so a third-party task brings its prompts by naming
them; :func:`task_prompt` is how the stages find the prompt of a task.
"""

from __future__ import annotations

from functools import lru_cache

from prompts import eval_prompts, verify_prompts
from prompts.spec import PromptSpec
from storage.task_spec import all_tasks, task_hook

# The spec hooks that name a task's prompts: the instruct stage's (one per candidate) and the qa
# stage's analysis of an edit (absent where the questions need no model, e.g. from an edit plan).
TASK_PROMPT_HOOKS = ("instruct_prompt", "analysis_prompt")

_EXTRA: dict[str, PromptSpec] = {}


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


def task_prompt(task_id: str, hook: str) -> PromptSpec | None:
    """The prompt the task ``task_id`` names as ``hook`` (one of :data:`TASK_PROMPT_HOOKS`), or
    ``None`` when the task is not registered or has no such prompt."""
    prompt = task_hook(task_id, hook)
    if prompt is None:
        return None
    if not isinstance(prompt, PromptSpec):
        raise TypeError(f"task {task_id!r}: hook {hook!r} gives {type(prompt).__name__}, not a PromptSpec")
    return prompt


def task_prompts(hook: str | None = None) -> dict[str, PromptSpec]:
    """Name -> spec of the prompts registered tasks name (``hook``: only that hook's), in benchmark
    order of the tasks; two tasks naming different specs under one name raise."""
    table: dict[str, PromptSpec] = {}
    for task_id in all_tasks():
        for name in (hook,) if hook else TASK_PROMPT_HOOKS:
            spec = task_prompt(task_id, name)
            if spec is None:
                continue
            if table.get(spec.name, spec) != spec:
                raise ValueError(f"task {task_id!r}: prompt {spec.name!r} differs from the one another task names")
            table[spec.name] = spec
    return table


def _known() -> dict[str, PromptSpec]:
    table = dict(builtin_prompts())
    for name, spec in task_prompts().items():
        old = table.get(name)
        if old is not None and old != spec:
            raise ValueError(
                f"prompt {name!r}: a task names a spec that differs from the built-in one ({old.version} vs {spec.version})"
            )
        table[name] = spec if old is not None else _checked(spec)
    return table


def register_prompt(spec: PromptSpec) -> PromptSpec:
    """Add a prompt defined outside this package that no task names (a task's own prompts are
    named in its spec); re-registering the identical spec is allowed."""
    old = {**_known(), **_EXTRA}.get(spec.name)
    if old is not None:
        if old != spec:
            raise ValueError(
                f"prompt {spec.name!r} is already registered with a different spec ({old.version} vs {spec.version})"
            )
        return old
    _EXTRA[spec.name] = _checked(spec)
    return spec


def get_prompt(name: str) -> PromptSpec:
    """The spec named ``name``; an unknown name raises listing the known ones."""
    table = {**_known(), **_EXTRA}
    try:
        return table[name]
    except KeyError:
        raise KeyError(f"unknown prompt {name!r}; registered: {sorted(table)}") from None


def all_prompts() -> dict[str, PromptSpec]:
    """Name -> spec of every known prompt, built-in, named by a task, and registered, sorted by name."""
    return dict(sorted({**_known(), **_EXTRA}.items()))
