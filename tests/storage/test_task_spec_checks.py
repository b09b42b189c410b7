"""A task spec the core cannot run is refused when it is made (at registration), in one line
naming the task's package and the field; every registered task's hooks load and fit their
documented signatures (``storage.task_spec.HOOKS``)."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import pytest

from storage.task_spec import HOOKS, JUDGE_RULE_NAMES, TaskError, TaskHooks, TaskSpec, all_tasks

SUBS = (("SC-1", "a", "first"), ("SC-2", "b", "second"), ("SC-3", "c", "third"))


def spec(**kw: Any) -> TaskSpec:
    base: dict[str, Any] = dict(
        id="toy_task", short="TT", label="Toy", weight=0.1, subcauses=SUBS, modules=("toy_pkg.task",)
    )
    return TaskSpec(**{**base, **kw})


def _slots(edit: dict, fields: dict, settings: Any) -> dict[str, str]:
    return {}


def _one_arg(edit: dict) -> dict[str, str]:
    return {}


def test_every_registered_task_loads_and_fits_its_hooks() -> None:
    for task in all_tasks().values():
        task.check_hooks()  # raises TaskError naming the package and field


@pytest.mark.parametrize(
    "kw,field,problem",
    [
        ({"extra": {"qa_slot": "toy_pkg.qa:qa_slots"}}, "extra['qa_slot']", "unknown hook; known: "),
        ({"extra": {"qa_slots": _one_arg}}, "extra['qa_slots']", "cannot be called as (edit, fields, settings)"),
        ({"extra": {"qa_slots": "toy_pkg_qa_slots"}}, "extra['qa_slots']", "must read 'module:attribute'"),
        (
            {"extra": {"qa_templates": "toy_pkg/templates.yaml"}},
            "extra['qa_templates']",
            "must read 'package:path/inside.yaml'",
        ),
        (
            {"extra": {"sa_judge": "prompts.offline_judge:FUZZY"}},
            "extra['sa_judge']",
            "must name a rule the core ships",
        ),
        ({"extra": {"vg_reads": ("relationships", "regions")}}, "extra['vg_reads']", "must be a tuple of"),
        ({"miners": {"visual_genome": _slots}}, "miners['visual_genome']", "cannot be called as (job)"),
        ({"subcauses": (*SUBS[:2], ("SC-4", "d", "fourth"))}, "subcauses[2]", "code 'SC-4' must be 'SC-3'"),
        ({"subcauses": (("SC-1", "", "no name"),)}, "subcauses[0]", "non-empty strings"),
    ],
)
def test_a_spec_the_core_cannot_run_is_refused_naming_package_and_field(kw: dict, field: str, problem: str) -> None:
    with pytest.raises(TaskError) as err:
        spec(**kw)
    message = str(err.value)
    assert message.startswith(f"task 'toy_task' (package toy_pkg.task): {field}: ") and problem in message
    assert "\n" not in message


def test_a_string_hook_with_the_wrong_signature_fails_when_loaded_naming_the_field() -> None:
    bad = spec(extra={"qa_slots": f"{__name__}:_one_arg"})
    with pytest.raises(
        TaskError,
        match=r"\(package toy_pkg.task\): hooks\.qa_slots: .*cannot be called as \(edit, fields, settings\)",
    ):
        bad.hook("qa_slots")
    with pytest.raises(TaskError, match=r"\(package toy_pkg.task\): hooks\.prior_terms: .*does not load"):
        spec(extra={"prior_terms": f"{__name__}:no_such_function"}).check_hooks()
    assert spec(extra={"qa_slots": f"{__name__}:_slots"}).hook("qa_slots") is _slots


def test_a_task_extends_its_subcauses_through_the_spec() -> None:
    """A fourth sub-cause is declared in the spec and accepted by the classifier's output schema
    (it used to fail in prompts/eval_prompts.py, whose labels stopped at SC-3)."""
    from prompts.eval_prompts import SubcauseLabel

    four = spec(subcauses=(*SUBS, ("SC-4", "d", "fourth")))
    assert [c for c, _, _ in four.subcauses] == ["SC-1", "SC-2", "SC-3", "SC-4"]
    assert SubcauseLabel.model_validate({"label": "sc 4"}).label == "SC-4"
    assert SubcauseLabel.model_validate({"label": "Other."}).label == "other"
    with pytest.raises(ValueError):
        SubcauseLabel.model_validate({"label": "SC-0"})


def test_the_judge_rules_a_spec_may_name_are_the_ones_the_shipped_judge_has() -> None:
    import prompts.offline_judge as judge

    assert tuple(getattr(judge, name) for name in JUDGE_RULE_NAMES) == judge.RULES
    spec(extra={"sa_judge": "prompts.offline_judge:COUNT"}).check_hooks()


def test_hook_table_documents_every_hook_the_builtins_use() -> None:
    used = {name for task in all_tasks().values() for name in task.hook_refs()}
    assert {"qa_slots", "instruct_prompt"} <= used  # read through hooks, converted from extra or declared
    assert used <= set(HOOKS)
    assert all(h.kind in ("call", "object", "data") for h in HOOKS.values())


def test_task_hooks_has_one_field_per_hook_name_and_extra_converts_into_it() -> None:
    assert [f.name for f in fields(TaskHooks)] == list(HOOKS)
    assert all(f"``{name}``" in (TaskHooks.__doc__ or "") for name in HOOKS)
    old = spec(extra={"qa_slots": f"{__name__}:_slots", "sa_judge": "prompts.offline_judge:COUNT"})
    new = spec(hooks=TaskHooks(qa_slots=f"{__name__}:_slots", sa_judge="prompts.offline_judge:COUNT"))
    assert old.hooks == new.hooks and not old.extra and old.hook("qa_slots") is _slots
    with pytest.raises(TypeError, match="qa_slot"):
        TaskHooks(qa_slot=_slots)  # type: ignore[call-arg]  # a typo fails where the spec is written
    with pytest.raises(TaskError, match=r"\(package toy_pkg.task\): hooks\.qa_slots: .*cannot be called as"):
        spec(hooks=TaskHooks(qa_slots=_one_arg))
    with pytest.raises(TaskError, match=r"\(package toy_pkg.task\): extra: qa_slots also set in hooks"):
        spec(hooks=TaskHooks(qa_slots=_slots), extra={"qa_slots": _slots})
