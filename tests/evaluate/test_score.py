"""Scoring one reply: the recorded prior option decides HalluRate's numerator and denominator."""

from tasks.release.evaluate.score import score_reply


def _q(**kw):
    q = {
        "id": "q1",
        "edit_id": "e",
        "editor": "x",
        "task": "relational_erasure",
        "variant": "targeted",
        "question_set": "main",
        "qid": "Q9",
        "qtype": "MC",
        "dimension": "direct",
        "rotation": 0,
        "image_role": "edited",
        "text": "Which description matches the bun?",
        "options": ["A bare bun", "A shiny cart", "A mustard line", "Two carts"],
        "gold": "A",
    }
    q.update(kw)
    return q


def _score(q, reply, prior_terms=("mustard",)):
    return score_reply(
        q, "standard", reply, None, {"prior_terms": list(prior_terms)}, backend="b", model="m", unverified=False
    )


def test_recorded_prior_option_counts_even_without_the_name():
    # the prior distractor "A shiny cart" does not contain "mustard": text matching would miss it
    q = _q(prior_options=["B"])
    row = _score(q, "B")
    assert (row["correct"], row["prior_fallback"], row["prior_options"]) == (False, True, ["B"])
    assert _score(q, "C")["prior_fallback"] is False
    assert _score(q, "A")["prior_fallback"] is False


def test_no_recorded_prior_leaves_the_question_out():
    assert _score(_q(prior_options=[]), "C")["prior_fallback"] is None


def test_rows_without_the_column_fall_back_to_text_matching():
    legacy = _q()
    assert _score(legacy, "C")["prior_options"] == ["C"] and _score(legacy, "C")["prior_fallback"] is True
    assert _score(legacy, "B")["prior_fallback"] is False
