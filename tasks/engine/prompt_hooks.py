"""What the tasks hand down to ``prompts/``: each task's prompts and their rules answers, its
evaluation rules and its offline judge rule, resolved here from the task registry.

Why here: ``prompts/`` (the catalogue, the rules table, the evaluation answers) sits below the task
room and looks no task up (issue 41, ``tests/flows/test_runtime_layers.py``). The stages and the
evaluation call these functions, which load the tasks' hooks, and pass the tables down as
arguments (``prompts.catalogue.TaskPrompts``, ``prompts.eval_rules.EvalAnswers``, the rules
client's ``rules``), datatrove-style.
"""

from __future__ import annotations

from collections.abc import Mapping

from prompts.catalogue import TASK_PROMPT_HOOKS, TaskPrompts, task_prompts
from prompts.clients.base import MLLMClient
from prompts.clients.factory import RULES_BACKEND, make_client
from prompts.config import MLLMConfig
from prompts.eval_rules import EvalAnswers
from prompts.offline_judge import OVERLAP
from prompts.rules import TASK_RULES_HOOKS
from prompts.rules import rules_table as build_rules_table
from prompts.rules_api import RulesFn
from prompts.spec import PromptSpec
from storage.fs import RunFS
from storage.task_spec import TaskSpec
from tasks.engine.registry import all_specs

EVAL_RULES = "eval_rules"  # spec hooks read for the evaluation (storage/task_spec.py)
SA_JUDGE = "sa_judge"


def _prompt_of(spec: TaskSpec, hook: str) -> PromptSpec | None:
    if not spec.has(hook):
        return None
    prompt = spec.hook(hook)
    if not isinstance(prompt, PromptSpec):
        raise TypeError(f"task {spec.id!r}: hook {hook!r} gives {type(prompt).__name__}, not a PromptSpec")
    return prompt


def task_prompt(task_id: str, hook: str) -> PromptSpec | None:
    """The prompt the task ``task_id`` names as ``hook`` (``instruct_prompt`` / ``analysis_prompt``),
    or ``None`` when the task is not registered or has no such prompt."""
    spec = all_specs().get(task_id)
    return _prompt_of(spec, hook) if spec is not None else None


def _prompts(spec: TaskSpec, hooks: tuple[str, ...] = TASK_PROMPT_HOOKS) -> dict[str, PromptSpec]:
    return {hook: p for hook in hooks if (p := _prompt_of(spec, hook)) is not None}


def prompts_of(spec: TaskSpec) -> TaskPrompts:
    """The task's prompts and their rules answers, loaded."""
    rules: dict[str, RulesFn] = {hook: spec.hook(hook) for hook in TASK_RULES_HOOKS if spec.has(hook)}
    return TaskPrompts(_prompts(spec), rules)


def task_prompt_table() -> dict[str, TaskPrompts]:
    """Every registered task's :class:`TaskPrompts`, by id, in benchmark order."""
    return {task_id: prompts_of(spec) for task_id, spec in all_specs().items()}


def registered_task_prompts(hook: str | None = None) -> dict[str, PromptSpec]:
    """Name -> spec of the prompts the registered tasks name (``hook``: only that hook's), in
    benchmark order (what a stage's key fingerprints)."""
    hooks = (hook,) if hook else TASK_PROMPT_HOOKS
    return task_prompts({task_id: TaskPrompts(_prompts(spec, hooks)) for task_id, spec in all_specs().items()}, hook)


def eval_answers() -> EvalAnswers:
    """The evaluation prompts' rules answers with every registered task's ``eval_rules`` and ``sa_judge``."""
    specs = all_specs()
    return EvalAnswers(
        rules={t: s.hook(EVAL_RULES) for t, s in specs.items() if s.has(EVAL_RULES)},
        judges={t: s.hook(SA_JUDGE) for t, s in specs.items() if s.has(SA_JUDGE)},
    )


def judge_rule(task: object) -> str:
    """The offline judge's rule for the task's short answers (its ``sa_judge`` hook, one of
    ``prompts.offline_judge.RULES``); ``OVERLAP`` for a task without one (or unknown)."""
    spec = all_specs().get(str(task))
    return spec.hook(SA_JUDGE) if spec is not None and spec.has(SA_JUDGE) else OVERLAP


def rules_table() -> dict[str, RulesFn]:
    """The rules backend's table over the registered tasks: what a rules client is given."""
    return build_rules_table(task_prompt_table(), eval_answers())


def client_for(cfg: MLLMConfig, cache_dir: RunFS | None, *, no_cache: bool = False) -> MLLMClient:
    """``prompts.clients.factory.make_client`` with the registered tasks' rules table handed down
    (resolved for the rules backend only: the other backends read no task hook)."""
    table: Mapping[str, RulesFn] | None = rules_table() if cfg.backend == RULES_BACKEND else None
    return make_client(cfg, cache_dir, no_cache=no_cache, rules=table)
