"""Inline question edits at QA review: validation and the event rows that record them.

A question's current state is its generated form with every ``question_edit`` and
``question_validity`` event applied in order; nothing is changed in place.
"""

from __future__ import annotations

import json
import string
from typing import Any

EDITABLE = ("text", "options", "gold")
YES_NO = ("Yes", "No")
MAX_TEXT = 2000


class QuestionError(ValueError):
    """An inline edit that would make a question invalid; names the question and the field."""

    def __init__(self, question_id: str, field: str, message: str):
        super().__init__(f"question {question_id}: {field}: {message}")
        self.question_id = question_id
        self.field = field
        self.message = message


def question_state(generated: list[dict[str, Any]], events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The questions as they stand after the recorded inline edits (generation order kept)."""
    by_id = {
        q["id"]: {**q, "options": list(q.get("options") or []), "valid": True, "edited": False} for q in generated
    }
    for ev in events:
        q = by_id.get(ev["question_id"])
        if q is None:
            continue
        if ev["kind"] == "question_edit":
            q.update({k: v for k, v in ev["after"].items() if k in EDITABLE})
            q["edited"] = True
        elif ev["kind"] == "question_validity":
            q["valid"] = bool(ev["after"]["valid"])
    return [by_id[q["id"]] for q in generated]


def normalize_update(question: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    """Clean and check one question's edited fields against its type; raises :class:`QuestionError`."""
    qid = question["id"]
    qtype = question["qtype"]
    out: dict[str, Any] = {}
    text = str(update.get("text", question["text"])).strip()
    if not text:
        raise QuestionError(qid, "text", "the question text is empty")
    if len(text) > MAX_TEXT:
        raise QuestionError(qid, "text", f"longer than {MAX_TEXT} characters")
    out["text"] = text
    gold = str(update.get("gold", question["gold"])).strip()
    if qtype == "MC":
        raw = update.get("options", question.get("options") or [])
        options = [str(o).strip() for o in raw if str(o).strip()]
        if len(options) < 2:
            raise QuestionError(qid, "options", "a multiple-choice question needs at least two non-empty options")
        if len(set(o.lower() for o in options)) != len(options):
            raise QuestionError(qid, "options", "options must be distinct")
        letters = string.ascii_uppercase[: len(options)]
        gold = gold.upper()
        if gold not in letters:
            raise QuestionError(
                qid, "gold", f"the gold answer must be the letter of an option ({', '.join(letters)}), got {gold!r}"
            )
        out["options"] = options
    elif qtype == "YN":
        match = [y for y in YES_NO if y.lower() == gold.lower()]
        if not match:
            raise QuestionError(qid, "gold", f"a yes/no question's gold answer must be Yes or No, got {gold!r}")
        gold = match[0]
    elif not gold:
        raise QuestionError(qid, "gold", "the gold answer is empty")
    out["gold"] = gold
    return out


def apply_question_update(question: dict[str, Any], update: dict[str, Any]) -> list[dict[str, Any]]:
    """Event rows (kind, question_id, before/after JSON) for one question's inline edit; empty
    when nothing changed. A question marked invalid skips content checks."""
    events: list[dict[str, Any]] = []
    qid = question["id"]
    invalid = bool(update.get("invalid", not question.get("valid", True)))
    if not invalid and any(k in update for k in EDITABLE):
        after = normalize_update(question, update)
        before = {k: question.get(k) if k != "options" else list(question.get("options") or []) for k in after}
        if question["qtype"] != "MC":
            after.pop("options", None)
            before.pop("options", None)
        if after != before:
            events.append(
                {
                    "kind": "question_edit",
                    "question_id": qid,
                    "before_json": json.dumps(before, sort_keys=True, ensure_ascii=False),
                    "after_json": json.dumps(after, sort_keys=True, ensure_ascii=False),
                }
            )
    was_valid = bool(question.get("valid", True))
    if was_valid == invalid:  # validity flipped
        events.append(
            {
                "kind": "question_validity",
                "question_id": qid,
                "before_json": json.dumps({"valid": was_valid}),
                "after_json": json.dumps({"valid": not invalid}),
            }
        )
    return events
