"""Prompt catalogue, rendering (StrictUndefined), the rules backend end to end, the response cache key."""

from __future__ import annotations

import pytest
from mllm_helpers import at_candidate, ca_candidate, dc_candidate, png_bytes, re_candidate, spread_points
from pydantic import BaseModel

from prompts.catalogue import all_prompts, get_prompt, register_prompt
from prompts.clients.base import MLLMRequest
from prompts.clients.cache import cache_key
from prompts.clients.rules import RulesClient
from prompts.instruct_prompts import candidate_context
from prompts.runner import PromptInput, build_messages, run_prompt
from prompts.spec import PromptSpec, render
from storage.task_spec import task_hook
from tasks.engine.prompt_hooks import rules_table, task_prompt, task_prompt_table


def _context(candidate: dict) -> dict:
    """A candidate's prompt context as the instruct stage builds it: with its task's hook handed down."""
    return candidate_context(candidate, task_hook(str(candidate["task"]), "instruct_context"))


def test_registry_has_the_instruct_prompts_with_versions() -> None:
    names = set(all_prompts(task_prompt_table()))
    assert {"re_instruction", "ca_instructions", "at_edit_plan", "dc_ambiguity"} <= names
    spec = get_prompt("at_edit_plan", task_prompt_table())
    assert spec.version == "1" and spec.n_images == 1 and issubclass(spec.output, BaseModel)
    with pytest.raises(KeyError, match="unknown prompt 'nope'"):
        get_prompt("nope")


def test_register_conflict_and_missing_template() -> None:
    spec = get_prompt("dc_ambiguity", task_prompt_table())
    tasks = task_prompt_table()
    assert register_prompt(spec, tasks) is spec  # idempotent
    with pytest.raises(ValueError, match="already registered"):
        register_prompt(PromptSpec("dc_ambiguity", "2", spec.template, spec.output, 1), tasks)
    with pytest.raises(FileNotFoundError, match="missing.j2"):
        register_prompt(PromptSpec("x_missing", "1", "missing.j2", spec.output, 1))


def test_render_is_strict_about_missing_context() -> None:
    spec = get_prompt("dc_ambiguity", task_prompt_table())
    text = render(spec, {"class_name": "apple", "count": 42})
    assert "apple" in text and "42" in text and "has_ambiguity" in text
    with pytest.raises(KeyError, match="dc_ambiguity.*count"):
        render(spec, {"class_name": "apple"})


def test_every_task_prompt_renders_from_a_candidate(image_dir) -> None:
    img = str(image_dir / "scene.png")
    for cand in (
        re_candidate(img),
        ca_candidate(img),
        at_candidate(img, "move", 2),
        dc_candidate(img, spread_points(12)),
    ):
        spec = task_prompt(cand["task"], "instruct_prompt")
        text = render(spec, _context(cand))
        assert "{{" not in text and "None" not in text.split("Reply")[0], text


def test_rules_answers_pass_the_normal_parse_path(image_dir) -> None:
    img = str(image_dir / "scene.png")
    client = RulesClient(rules=rules_table())
    for cand in (
        re_candidate(img),
        ca_candidate(img),
        at_candidate(img, "move", 2),
        at_candidate(img, "delete", 3),
        dc_candidate(img, spread_points(12)),
    ):
        spec = task_prompt(cand["task"], "instruct_prompt")
        [out] = run_prompt(client, spec, [PromptInput(_context(cand), [])])
        assert out.status == "ok", (cand["task"], out.error, out.raw)
        assert out.attempts == 1 and out.raw and out.fields
    [at] = run_prompt(
        client,
        task_prompt("alteration_tracing", "instruct_prompt"),
        [PromptInput(_context(at_candidate(img, "delete", 3)), [])],
    )
    assert at.fields["edit_type"] == "delete" and at.fields["C"].startswith("was")


def test_rules_not_applicable_when_annotations_cannot_support_it(image_dir) -> None:
    cand = re_candidate(str(image_dir / "scene.png"), target_box=[0.0, 0.0, 64.0, 48.0])  # the whole image
    [out] = run_prompt(
        RulesClient(rules=rules_table()),
        task_prompt("relational_erasure", "instruct_prompt"),
        [PromptInput(_context(cand), [])],
    )
    assert out.status == "not_applicable" and out.fields is None and "not applicable" in out.raw


def test_images_are_checked_against_the_prompt() -> None:
    spec = get_prompt("dc_ambiguity", task_prompt_table())
    ctx = {"class_name": "apple", "count": 3}
    msgs = build_messages(spec, PromptInput(ctx, [png_bytes()]))
    assert msgs[0]["content"][0]["mime"] == "image/png" and msgs[0]["content"][-1]["type"] == "text"
    with pytest.raises(ValueError, match="takes 1 image"):
        build_messages(spec, PromptInput(ctx, []))
    with pytest.raises(ValueError, match="unsupported image format"):
        build_messages(spec, PromptInput(ctx, [b"GIF? no"]))


def test_cache_key_hashes_images_by_content_and_sampling() -> None:
    def req(img: bytes, temp: float = 0.0) -> MLLMRequest:
        return MLLMRequest(
            "p",
            "1",
            [
                {
                    "role": "user",
                    "content": [{"type": "image", "data": img, "mime": "image/png"}, {"type": "text", "text": "q"}],
                }
            ],
            temperature=temp,
        )

    a, b = png_bytes(0), png_bytes(1)
    assert cache_key("openai", "m", req(a)) == cache_key("openai", "m", req(bytes(a)))
    keys = {
        cache_key("openai", "m", req(a)),
        cache_key("openai", "m", req(b)),
        cache_key("openai", "m2", req(a)),
        cache_key("transformers", "m", req(a)),
        cache_key("openai", "m", req(a, 0.5)),
    }
    assert len(keys) == 5


def test_progress_path_keeps_order_over_many_inputs() -> None:
    """More than one progress slice (256): answers still come back one per input, in order."""
    spec = get_prompt("dc_ambiguity", task_prompt_table())
    inputs = [
        PromptInput(
            {"class_name": "apple", "count": i, "points": [[1.0, 1.0]] * (i % 3), "width": 64, "height": 48}, []
        )
        for i in range(300)
    ]
    outs = run_prompt(RulesClient(rules=rules_table()), spec, inputs, progress=True)
    assert len(outs) == 300 and all(o.status == "ok" for o in outs)
    assert outs[1].fields == {"has_ambiguity": False, "severity": "none"}
    assert outs[2].fields["severity"] == "severe"  # two points on the same spot
