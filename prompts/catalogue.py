"""The catalogue of prompts: every built-in prompt spec, listed here, plus those plugins register.

The prompt modules define their specs as plain values and register nothing; this module names
them, so which prompts exist is written down in one place instead of being discovered by
importing modules for their side effects. Callers that know their prompt import its spec
directly; callers that hold only a name (the CLI, the rules backend's tests, plugins) ask here.
"""

from __future__ import annotations

from functools import lru_cache

from prompts import analysis_prompts, eval_prompts, instruct_prompts, verify_prompts
from prompts.spec import TEMPLATE_DIR, PromptSpec

_EXTRA: dict[str, PromptSpec] = {}


def _checked(spec: PromptSpec) -> PromptSpec:
    if not (TEMPLATE_DIR / spec.template).is_file():
        raise FileNotFoundError(f"prompt {spec.name!r}: template {spec.template!r} not found in {TEMPLATE_DIR}")
    return spec


@lru_cache(maxsize=1)
def builtin_prompts() -> dict[str, PromptSpec]:
    """Name -> spec of every prompt this package defines (each template checked to exist)."""
    specs = [
        *instruct_prompts.TASK_PROMPTS.values(),
        *analysis_prompts.ANALYSIS_PROMPTS.values(),
        verify_prompts.VERIFY_EDIT,
        *eval_prompts.ANSWER_SPECS.values(),
        eval_prompts.SA_JUDGE,
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


def register_prompt(spec: PromptSpec) -> PromptSpec:
    """Add a prompt defined outside this package (e.g. a plugin); re-registering the identical spec is allowed."""
    old = {**builtin_prompts(), **_EXTRA}.get(spec.name)
    if old is not None:
        if old != spec:
            raise ValueError(f"prompt {spec.name!r} is already registered with a different spec ({old.version} vs {spec.version})")
        return old
    _EXTRA[spec.name] = _checked(spec)
    return spec


def get_prompt(name: str) -> PromptSpec:
    """The spec named ``name``; an unknown name raises listing the known ones."""
    table = {**builtin_prompts(), **_EXTRA}
    try:
        return table[name]
    except KeyError:
        raise KeyError(f"unknown prompt {name!r}; registered: {sorted(table)}") from None


def all_prompts() -> dict[str, PromptSpec]:
    """Name -> spec of every known prompt, built-in and registered, sorted by name."""
    return dict(sorted({**builtin_prompts(), **_EXTRA}.items()))
