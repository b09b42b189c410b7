"""Answer extraction against messy real-world outputs: every reply shape of ``reply_shapes`` gets
the verdict a careful human grader gives it (hedges none, self-corrections their final answer)."""

import pytest
from reply_shapes import CHOICE, CHOICE_OBJECTS, COUNT, MC_OBJECTS, MC_OPTIONS, RANGES, SEGMENTS, YES_NO

from prompts.eval_parsing import (
    answer_segment,
    extract_choice,
    extract_number,
    extract_range,
    extract_yes_no,
    mentions,
    negated_mention,
)


def test_the_tables_are_large_enough():
    assert len(YES_NO) >= 60 and len(CHOICE) >= 60 and len(COUNT) + len(RANGES) + len(SEGMENTS) >= 60


@pytest.mark.parametrize("text,cot,want", YES_NO)
def test_yes_no(text, cot, want):
    assert extract_yes_no(text, cot) == want


@pytest.mark.parametrize("text,cot,want", CHOICE)
def test_choice(text, cot, want):
    assert extract_choice(text, MC_OPTIONS, cot) == want


@pytest.mark.parametrize("text,cot,want", CHOICE_OBJECTS)
def test_choice_by_option_text(text, cot, want):
    assert extract_choice(text, MC_OBJECTS, cot) == want


@pytest.mark.parametrize("text,cot,want", COUNT)
def test_count(text, cot, want):
    assert extract_number(text, cot) == want


@pytest.mark.parametrize("text,cot,want", RANGES)
def test_range(text, cot, want):
    assert extract_range(text, cot) == want


@pytest.mark.parametrize("text,cot,want", SEGMENTS)
def test_short_answer_segment(text, cot, want):
    assert answer_segment(text, cot) == want


def test_choice_respects_the_number_of_options():
    assert extract_choice("E", MC_OPTIONS + ["a dog"]) == "E"
    assert extract_choice("e", MC_OPTIONS) is None
    assert extract_choice("B is correct", None) == "B"  # no options: letters A-E


def test_mentions_and_negation():
    assert mentions("Two wheels are visible", "wheel")
    assert not mentions("a wheelbarrow", "wheel")
    assert negated_mention("There is no mustard on the bun.", "mustard")
    assert not negated_mention("The mustard is yellow.", "mustard")
    assert not negated_mention("No ketchup, but the mustard is there.", "mustard")


def test_the_shipped_copy_gives_the_same_verdicts(tmp_path, monkeypatch):
    """What an export ships (``tasks.release.export.shipped_scoring``) reads every reply shape alike and
    runs without the project: its judge imports the shipped parser, not ``prompts``."""
    import importlib
    import sys

    from tasks.release.export.shipped_scoring import scoring_files

    for name, text in scoring_files().items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    for mod in ("reactbench_parsing", "reactbench_judge"):
        monkeypatch.delitem(sys.modules, mod, raising=False)
    parsing = importlib.import_module("reactbench_parsing")
    judge = importlib.import_module("reactbench_judge")
    assert parsing.__file__.startswith(str(tmp_path)) and judge.extract_number is parsing.extract_number
    assert [parsing.extract_yes_no(t, c) for t, c, _ in YES_NO] == [w for _, _, w in YES_NO]
    assert [parsing.extract_choice(t, MC_OPTIONS, c) for t, c, _ in CHOICE] == [w for _, _, w in CHOICE]
    assert [parsing.extract_number(t, c) for t, c, _ in COUNT] == [w for _, _, w in COUNT]
    assert (
        judge.offline_judge("21", "20... actually no, 21", {"count": "21"}, rule=judge.COUNT)["verdict"] == "correct"
    )
    assert judge.offline_judge("21", "21 or 22", {"count": "21"}, rule=judge.COUNT)["verdict"] == "hallucination"
