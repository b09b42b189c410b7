"""Answer extraction against messy real-world outputs."""

import pytest

from prompts.eval_parsing import extract_choice, extract_number, extract_range, extract_yes_no, mentions, negated_mention

OPTS = ["a red cup", "a blue cup", "a cat", "none of the above"]


@pytest.mark.parametrize(
    "text,cot,want",
    [
        ("Yes", False, "Yes"),
        ("no.", False, "No"),
        ("**No**, there is no mustard on the bun.", False, "No"),
        ("Yes, there is a cup on the table.", False, "Yes"),
        ("```\nYES\n```", False, "Yes"),
        ("<think>maybe yes, maybe no</think>No", False, "No"),
        ("Let me look. The bun has ketchup. I see no mustard line.\nFinal answer: No", True, "No"),
        ("Step 1: the table... yes the cup is there? Looking closer it was removed.\nAnswer: no", True, "No"),
        ("There is no dog in the picture.", False, "No"),
        ("不是，图中没有狗。", False, "No"),
        ("是的，有一只猫。", False, "Yes"),
        ("I cannot tell.", False, None),
        ("", False, None),
        ("Yes and no: it depends.", False, "Yes"),
    ],
)
def test_yes_no(text, cot, want):
    assert extract_yes_no(text, cot) == want


@pytest.mark.parametrize(
    "text,cot,want",
    [
        ("B", False, "B"),
        ("(C)", False, "C"),
        ("**D**", False, "D"),
        ("D. none of the above", False, "D"),
        ("The answer is B.", False, "B"),
        ("Answer: (a)", False, "A"),
        ("A cat sits on the mat, so the answer is C.", False, "C"),
        ("A cat sits on the mat.", False, "C"),  # option text quoted: "a cat"
        ("I think it is a blue cup.", False, "B"),
        ("Looking at the table I compare A and B. A is red... Final answer: B", True, "B"),
        ("Option D", False, "D"),
        ("It could be (A) or (B).", False, None),
        ("I am not sure.", False, None),
        ("E", False, None),  # only four options
    ],
)
def test_choice(text, cot, want):
    assert extract_choice(text, OPTS, cot) == want


def test_numbers_and_ranges():
    assert extract_number("There are 17 cupcakes.") == 17
    assert extract_number("I count twelve apples") == 12
    assert extract_number("Counting row by row: 4, 8, 12.\nFinal answer: 12", cot=True) == 12
    assert extract_number("1,024 beads") == 1024
    assert extract_number("none") is None
    assert extract_range("Between 15 and 20") == (15, 20)
    assert extract_range("roughly 20-24 birds") == (20, 24)
    assert extract_range("about 30 to 25") == (25, 30)
    assert extract_range("exactly 20") is None


def test_mentions_and_negation():
    assert mentions("Two wheels are visible", "wheel")
    assert not mentions("a wheelbarrow", "wheel")
    assert negated_mention("There is no mustard on the bun.", "mustard")
    assert not negated_mention("The mustard is yellow.", "mustard")
    assert not negated_mention("No ketchup, but the mustard is there.", "mustard")
