"""Prompt templates are compiled once per process, and a template edited on disk is still what
the next render and the next stage key use (prompts/spec.py)."""

from __future__ import annotations

import os
from pathlib import Path

import jinja2
import pytest
from pydantic import BaseModel

from prompts.catalogue import get_prompt
from prompts.spec import PromptSpec, environment, prompt_fingerprints, render
from storage.hashing import sha256_hex
from tasks.engine.prompt_hooks import task_prompt_table


class _Out(BaseModel):
    answer: str


@pytest.fixture
def compiles(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Names of the templates Jinja compiles from now on (the real compiler still runs)."""
    seen: list[str] = []
    real = jinja2.Environment.compile

    def counting(self: jinja2.Environment, source: str, name: str | None = None, *a: object, **k: object) -> object:
        seen.append(str(name))
        return real(self, source, name, *a, **k)

    monkeypatch.setattr(jinja2.Environment, "compile", counting)
    return seen


def _spec(folder: Path, name: str = "t_plan") -> PromptSpec:
    return PromptSpec(name, "1", "plan.j2", _Out, 1, template_dir=str(folder))


def test_many_renders_compile_each_template_once(tmp_path: Path, compiles: list[str]) -> None:
    (tmp_path / "plan.j2").write_text("Move the {{ target }}.\n")
    spec = _spec(tmp_path)
    texts = {render(spec, {"target": f"cup {i}"}) for i in range(50)}
    assert len(texts) == 50 and "Move the cup 7.\n" in texts
    assert compiles == ["plan.j2"]
    assert environment(spec.folder) is environment(Path(str(tmp_path)))  # one environment per folder


def test_built_in_prompt_renders_are_compiled_once(compiles: list[str]) -> None:
    spec = get_prompt("dc_ambiguity", task_prompt_table())
    first = render(spec, {"class_name": "apple", "count": 42})
    compiles.clear()
    for n in range(20):
        assert render(spec, {"class_name": "apple", "count": 42}) == first
    assert compiles == []


def test_a_template_edited_on_disk_is_rendered_and_fingerprinted_anew(tmp_path: Path, compiles: list[str]) -> None:
    path = tmp_path / "plan.j2"
    path.write_text("Move the {{ target }}.\n")
    spec = _spec(tmp_path)
    before = prompt_fingerprints((spec,))
    assert render(spec, {"target": "cup"}) == "Move the cup.\n"
    assert before == {"t_plan": ["1", sha256_hex(path.read_bytes())[:12]]}

    path.write_text("Shift the {{ target }} left.\n")  # another size
    assert render(spec, {"target": "cup"}) == "Shift the cup left.\n"
    after = prompt_fingerprints((spec,))
    assert after != before and after == {"t_plan": ["1", sha256_hex(path.read_bytes())[:12]]}

    # The same size written in place within one clock tick: a later modification time (what any
    # real edit gets) is enough.
    stamp = path.stat().st_mtime_ns
    path.write_text("Spin the {{ target }} left.\n".replace("Spin", "Lift"))
    os.utime(path, ns=(stamp + 1_000_000, stamp + 1_000_000))
    assert render(spec, {"target": "cup"}) == "Lift the cup left.\n"
    assert prompt_fingerprints((spec,))["t_plan"][1] == sha256_hex(path.read_bytes())[:12]

    # An editor that saves by replacing the file (a new inode) with the same size and time.
    replacement = tmp_path / "plan.j2.new"
    replacement.write_text("Tilt the {{ target }} left.\n")
    os.utime(replacement, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns))
    os.replace(replacement, path)
    assert render(spec, {"target": "cup"}) == "Tilt the cup left.\n"
    assert compiles == ["plan.j2"] * 4


def test_missing_context_still_names_the_prompt_after_caching(tmp_path: Path) -> None:
    (tmp_path / "plan.j2").write_text("Move the {{ target }} near the {{ partner }}.\n")
    spec = _spec(tmp_path, "t_strict")
    assert render(spec, {"target": "cup", "partner": "bowl"}) == "Move the cup near the bowl.\n"
    with pytest.raises(KeyError, match="t_strict.*partner"):
        render(spec, {"target": "cup"})


def test_templates_of_a_folder_can_include_each_other(tmp_path: Path) -> None:
    (tmp_path / "reply.j2").write_text("Reply in JSON.")
    (tmp_path / "plan.j2").write_text("Move the {{ target }}. {% include 'reply.j2' %}\n")
    assert render(_spec(tmp_path), {"target": "cup"}) == "Move the cup. Reply in JSON.\n"
