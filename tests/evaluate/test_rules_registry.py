"""The rules backend's registry is written down in prompts.rules, not filled by import side effects."""

import pytest

from prompts import rules
from prompts.catalogue import all_prompts
from tasks.engine.prompt_hooks import rules_table, task_prompt_table


def test_every_prompt_has_a_rules_answer_and_marks_agree():
    table = rules_table()
    prompts = all_prompts(task_prompt_table())
    answered = set(table) | set(rules.IMAGE_ONLY_PROMPTS)
    assert set(prompts) <= answered, sorted(set(prompts) - answered)
    assert not set(table) & set(rules.IMAGE_ONLY_PROMPTS)
    for name, fn in table.items():
        assert getattr(fn, "rules_prompt", name) == name


def test_importing_a_module_registers_nothing():
    from prompts.rules_api import rules_answer

    @rules_answer("not_a_prompt_anywhere")
    def fn(ctx):
        return {}

    assert "not_a_prompt_anywhere" not in rules.registered_rules(rules_table())
    with pytest.raises(KeyError, match="no answer for prompt 'not_a_prompt_anywhere'"):
        rules.get_rules_answer("not_a_prompt_anywhere", rules_table())


def test_register_rules_is_explicit_and_refuses_a_second_answer():
    def plugin(ctx):
        return {"answer": "x"}

    rules.register_rules("plugin_prompt_for_test", plugin)
    try:
        assert rules.get_rules_answer("plugin_prompt_for_test", rules_table()) is plugin
        with pytest.raises(ValueError, match="already registered"):
            rules.register_rules("eval_sa_judge", plugin)
    finally:
        rules._EXTRA.pop("plugin_prompt_for_test", None)
