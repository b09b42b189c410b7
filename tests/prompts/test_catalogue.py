"""The prompt catalogue lists every spec the prompt modules define; defining one registers nothing."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import prompts
from prompts import catalogue
from prompts.spec import PromptSpec
from tasks.engine.prompt_hooks import task_prompt_table


def _defined_specs() -> dict[str, PromptSpec]:
    """Every PromptSpec held at module level in ``prompts``, alone or as a dict value."""
    found: dict[str, PromptSpec] = {}
    for info in pkgutil.iter_modules(prompts.__path__):
        module = importlib.import_module(f"prompts.{info.name}")
        for value in vars(module).values():
            for spec in value.values() if isinstance(value, dict) else [value]:
                if isinstance(spec, PromptSpec):
                    found[spec.name] = spec
    return found


def test_the_catalogue_lists_every_spec_the_prompt_modules_define() -> None:
    defined = _defined_specs()
    assert defined and defined == catalogue.builtin_prompts()


def test_a_plugin_prompt_is_registered_explicitly() -> None:
    base = catalogue.get_prompt("dc_ambiguity", task_prompt_table())
    spec = PromptSpec("plugin_prompt_for_test", "1", base.template, base.output, 1, template_dir=base.template_dir)
    assert "plugin_prompt_for_test" not in catalogue.all_prompts()
    try:
        assert catalogue.register_prompt(spec) is spec
        assert catalogue.get_prompt("plugin_prompt_for_test") is spec
    finally:
        catalogue._EXTRA.pop("plugin_prompt_for_test", None)
    with pytest.raises(KeyError, match="unknown prompt 'plugin_prompt_for_test'"):
        catalogue.get_prompt("plugin_prompt_for_test")
