"""Every request body the review app accepts, as a pydantic model with bounds.

Types are checked strictly (a note must be a string, reasons a list of known codes), lists
and strings have maximum lengths, and the request as a whole is capped by
:data:`MAX_BODY_BYTES` before it is read. Rules that need the queue (a rejection needs a
reason, ``other`` needs a note, inline question edits) are checked by the queue itself.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator
from starlette.datastructures import FormData

from tasks.review.rules import REASONS

MAX_BODY_BYTES = 256 * 1024  # a QA form with every question edited fits many times over
MAX_NOTE = 4000
MAX_TEXT = 2000
MAX_OPTIONS = 26  # lettered A..Z
MAX_QUESTIONS = 100
MAX_EVENT_ID = 2**63 - 1  # event ids are 64-bit integers in the database

Verdict = Literal["accept", "reject"]
Reason = Literal[tuple(REASONS)]  # type: ignore[valid-type]
Note = Annotated[str, StringConstraints(max_length=MAX_NOTE)]
Token = Annotated[str, StringConstraints(max_length=200)]
Text = Annotated[str, StringConstraints(max_length=MAX_TEXT)]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class DecisionBody(_Body):
    """``POST /api/items/{id}/decision`` (JSON)."""

    verdict: Verdict
    reasons: list[Reason] = Field(default_factory=list, max_length=len(REASONS))
    note: Note = ""

    @field_validator("note", mode="before")
    @classmethod
    def _none_is_empty(cls, v: object) -> object:
        return "" if v is None else v


class QuestionUpdate(_Body):
    """One question's inline edit on the QA review page."""

    invalid: bool = False
    text: Text | None = None
    gold: Text | None = None
    options: list[Text] | None = Field(default=None, max_length=MAX_OPTIONS)


class DecisionForm(_Body):
    """``POST /review/{stage}/item/{id}/decide`` (form)."""

    csrf_token: Token
    verdict: Verdict
    reasons: list[Reason] = Field(default_factory=list, max_length=len(REASONS))
    note: Note = ""
    questions: dict[Annotated[str, StringConstraints(max_length=64)], QuestionUpdate] = Field(
        default_factory=dict, max_length=MAX_QUESTIONS
    )


class AdjudicationForm(_Body):
    csrf_token: Token
    verdict: Verdict
    note: Note = ""


class LoginForm(_Body):
    csrf_token: Token = ""
    secret: Token = ""


def decision_form_data(form: FormData, with_questions: bool) -> dict[str, object]:
    """The decide form as a dict for :class:`DecisionForm`: ``reason`` fields become
    ``reasons``; QA pages post ``qids`` and ``q-<id>-text|options|gold|invalid`` per question."""
    data: dict[str, object] = {k: str(v) for k, v in form.items() if k in ("csrf_token", "verdict", "note")}
    data["reasons"] = [str(r) for r in form.getlist("reason")]
    if with_questions:
        questions: dict[str, dict[str, object]] = {}
        for qid in form.getlist("qids")[: MAX_QUESTIONS + 1]:
            qid = str(qid)
            upd: dict[str, object] = {"invalid": form.get(f"q-{qid}-invalid") == "1"}
            for name in ("text", "gold"):
                if f"q-{qid}-{name}" in form:
                    upd[name] = str(form.get(f"q-{qid}-{name}"))
            if f"q-{qid}-options" in form:
                upd["options"] = str(form.get(f"q-{qid}-options")).splitlines()
            questions[qid] = upd
        data["questions"] = questions
    return data


def known_fields(form: FormData, allowed: tuple[str, ...]) -> dict[str, object]:
    """The form's fields that a model takes (browsers may add others, e.g. submit buttons)."""
    return {k: str(v) for k, v in form.items() if k in allowed}
