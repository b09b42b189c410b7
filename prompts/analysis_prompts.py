"""What the QA stage's analysis prompts (SPEC sections 4 and 6) share: the verdict and discard
fields every analysis answer carries (:class:`AnalysisOutput`) and the English check.

In an analysis the model sees the original and the edited image, the instruction and the
annotations, checks the edit (verification verdict + discard flag) and returns the fields the
task's question templates are filled from. Each task's spec names its analysis prompt (the
``analysis_prompt`` hook; the built-ins' RE and CA analyses are in
``tasks/builtin_tasks/<id>/prompts.py``), whose output schema validates what its templates rely
on, so a bad answer is re-asked with the reason instead of producing a broken question.
"""

from __future__ import annotations

import re
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, field_validator

_CJK_RE = re.compile(r"[\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uff00-\uffef]")
ARTICLE_RE = re.compile(r"^(a|an|the)\s+", re.I)


def _english(name: str, value: str) -> str:
    if _CJK_RE.search(value):
        raise ValueError(f"{name}: must be written in English")
    return value


class AnalysisOutput(BaseModel):
    """Verification verdict + discard flag shared by both analyses; content fields may be empty only when discarded."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)

    verification_status: Literal["pass", "warning", "fail"]
    verification_issues: str = "none"
    discard: bool
    discard_reason: str = "none"

    CONTENT: ClassVar[tuple[str, ...]] = ()

    @field_validator("verification_status", mode="before")
    @classmethod
    def _lower(cls, v: object) -> object:
        return v.strip().strip(".").lower() if isinstance(v, str) else v

    @field_validator("discard", mode="before")
    @classmethod
    def _yes_no(cls, v: object) -> object:
        return v.strip().strip(".").lower() if isinstance(v, str) else v

    @property
    def usable(self) -> bool:
        return not self.discard and self.verification_status != "fail"

    def _require_content(self) -> None:
        if not self.usable:
            return
        missing = [n for n in self.CONTENT if not str(getattr(self, n) or "").strip()]
        if missing:
            raise ValueError(f"fields {missing} must be filled unless discard is yes")
        for n in self.CONTENT:
            _english(n, str(getattr(self, n)))


# A task whose questions need a model's look at the edit names its prompt in its spec
# (``analysis_prompt`` hook, storage/task_spec.py); this module keys nothing on a task id.
