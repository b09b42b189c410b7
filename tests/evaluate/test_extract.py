"""Answer extraction against messy real-world outputs: every reply shape of ``reply_shapes`` gets
the verdict a careful human grader gives it (hedges none, self-corrections their final answer)."""

import pytest

from prompts.eval_parsing import answer_segment, extract_choice, extract_number, extract_range, extract_yes_no, mentions, negated_mention
from reply_shapes import CHOICE, COUNT, MC_OPTIONS, RANGES, SEGMENTS, YES_NO


def test_the_tables_are_large_enough():
    assert len(YES_NO) >= 60 and len(CHOICE) >= 60 and len(COUNT) + len(RANGES) + len(SEGMENTS) >= 60


@pytest.mark.parametrize("text,cot,want", YES_NO)
def test_yes_no(text, cot, want):
    assert extract_yes_no(text, cot) == want


@pytest.mark.parametrize("text,cot,want", CHOICE)
def test_choice(text, cot, want):
    assert extract_choice(text, MC_OPTIONS, cot) == want


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
