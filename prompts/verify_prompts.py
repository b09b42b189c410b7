"""The yes/no question an image-seeing MLLM answers to check an edit (``verify_edit``).

The edit stage asks each question on the original and on the edited image; the expected pair of
answers comes from the instruction (tasks/stages/verify_model.py). Parsing goes through the structured
parser like every other prompt, so "Answer: Yes." and ``{"answer": "no"}`` both read.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, field_validator

from prompts.spec import PromptSpec


class YesNo(BaseModel):
    model_config = ConfigDict(extra="ignore")
    answer: Literal["yes", "no"]

    @field_validator("answer", mode="before")
    @classmethod
    def _norm(cls, v: object) -> object:
        return v.strip().strip(".!").lower() if isinstance(v, str) else v


VERIFY_EDIT = PromptSpec("verify_edit", "1", "verify_edit.j2", YesNo, 1)
