"""A task's words for the evaluation prompts (``TaskSpec.eval_text``) and its sub-cause taxonomy
(``TaskSpec.subcauses``), looked up here, above ``prompts/``: the evaluation (and the lmms-eval export) read the task registry
and fills the prompt contexts, so ``prompts/eval_prompts.py`` looks no task up (issue 41)."""

from __future__ import annotations

from tasks.engine.registry import all_specs


def task_text(task: str) -> dict[str, str]:
    """``label`` / ``cause`` / ``note`` of a task for the evaluation prompts (``TaskSpec.eval_text``;
    empty for a task not registered here)."""
    spec = all_specs().get(task)
    return dict(spec.eval_text) if spec else {}


def subcauses(task: str) -> tuple[tuple[str, str, str], ...]:
    """A task's sub-cause taxonomy, (code, name, description) triples (``TaskSpec.subcauses``,
    from papers/reactbench.txt Appendix A.1 for the built-in tasks); empty when it has none."""
    spec = all_specs().get(task)
    return tuple(spec.subcauses) if spec else ()
