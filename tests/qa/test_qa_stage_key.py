"""The qa stage key covers what shapes its output: question templates and analysis prompts."""

from __future__ import annotations

import pytest

from flows.config import config_from_dict
from storage.fs import RunFS
from storage.hashing import config_hash
from tasks.engine.base import RunContext
from tasks.stages.qa import QAStage, templates


def _key(tmp_path) -> str:
    ctx = RunContext(RunFS.open(str(tmp_path)), config_from_dict({}))
    return config_hash(QAStage().config_section(ctx))


def test_editing_a_question_template_changes_the_key(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = _key(tmp_path)
    real = templates._read_text
    monkeypatch.setattr(
        templates, "_read_text", lambda name: real(name) + ("\n# reworded" if name == "dense_counting" else "")
    )
    assert _key(tmp_path) != before


def test_key_names_the_analysis_prompts(tmp_path) -> None:
    section = QAStage().config_section(RunContext(RunFS.open(str(tmp_path)), config_from_dict({})))
    assert set(section["prompts"]) == {"re_analysis", "ca_analysis"}
    assert all(len(v) == 2 and v[0] for v in section["prompts"].values())
