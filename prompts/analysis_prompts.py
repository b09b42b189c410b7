"""The QA stage's analysis prompts (SPEC sections 4 and 6): RE analysis and CA analysis, as data.

The model sees the original and the edited image, the instruction and the annotations, checks
the edit (verification verdict + discard flag) and returns the fields the question templates
(``tasks/stages/qa/templates/*.yaml``) are filled from. Each output schema validates what the
templates rely on, so a bad answer is re-asked with the reason instead of producing a broken
question. Each task's spec names its analysis prompt (the ``analysis_prompt`` hook); the ``rules``
backend's answers are in ``prompts/analysis_rules.py``.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator, model_validator

from prompts.fields import distinct
from prompts.spec import PromptSpec

_CJK_RE = re.compile(r"[\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uff00-\uffef]")
_LEADING_PREP_RE = re.compile(r"^(on|in|at|near|beside|by|under|above|over|behind|inside|next to|along|across|around|between|below|beneath|within|among|atop|against|from|to|toward|towards)\b", re.I)
_LOCATIVE_START_RE = re.compile(r"^(on|in|at|near|beside|by|under|above|over|behind|inside|next to|along|across|around|between|below|beneath|within|among|atop|against|toward|towards|close to|in front of|on top of|to the (left|right) of)\b", re.I)
_ARTICLE_RE = re.compile(r"^(a|an|the)\s+", re.I)
VAGUE_WORDS = ("natural", "normal", "ordinary", "regular", "typical", "standard", "default", "plain", "usual", "common")


def _english(name: str, value: str) -> str:
    if _CJK_RE.search(value):
        raise ValueError(f"{name}: must be written in English")
    return value


class _Analysis(BaseModel):
    """Verification verdict + discard flag shared by both analyses; content fields may be empty only when discarded."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)

    verification_status: Literal["pass", "warning", "fail"]
    verification_issues: str = "none"
    discard: bool
    discard_reason: str = "none"

    CONTENT: ClassVar[tuple[str, ...]] = ()

    @field_validator("verification_status", mode="before")
    @classmethod
    def _lower(cls, v: Any) -> Any:
        return v.strip().strip(".").lower() if isinstance(v, str) else v

    @field_validator("discard", mode="before")
    @classmethod
    def _yes_no(cls, v: Any) -> Any:
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


class REAnalysis(_Analysis):
    """Relational erasure: what was removed, where, what is there now, and question materials."""

    B_name: str = ""
    B_count_descriptor: str = "a"
    A_location: str = ""
    remaining_at_A: str = ""
    same_type_elsewhere: bool = False
    same_type_elsewhere_detail: str = "no"
    common_knowledge: str = ""
    attribute_type: str = ""
    attribute_value: str = ""
    attribute_option_1: str = ""
    attribute_option_2: str = ""
    attribute_option_3: str = ""
    absurd_object_1: str = ""
    absurd_object_2: str = ""
    B_full_desc: str = ""
    B_variant_1: str = ""
    B_variant_2: str = ""
    B_variant_3: str = ""
    B_variant_4: str = ""
    nothing_desc: str = ""

    CONTENT: ClassVar[tuple[str, ...]] = (
        "B_name", "A_location", "remaining_at_A", "common_knowledge", "attribute_type", "attribute_value",
        "attribute_option_1", "attribute_option_2", "attribute_option_3", "absurd_object_1", "absurd_object_2",
        "B_full_desc", "B_variant_1", "B_variant_2", "B_variant_3", "B_variant_4", "nothing_desc",
    )

    @field_validator("same_type_elsewhere", mode="before")
    @classmethod
    def _yes_no_same(cls, v: Any) -> Any:
        return v.strip().strip(".").split()[0].strip(",;—-").lower() if isinstance(v, str) and v.strip() else v

    @model_validator(mode="after")
    def _check(self) -> "REAnalysis":
        self._require_content()
        if not self.usable:
            return self
        if _ARTICLE_RE.match(self.B_name):
            raise ValueError("B_name: write the object without an article (a, an, the)")
        if len(self.B_name.split()) > 12:
            raise ValueError("B_name: at most 12 words")
        if _LEADING_PREP_RE.match(self.A_location):
            raise ValueError("A_location: a noun phrase without a leading preposition (drop 'on', 'in', 'at', ...)")
        head = self.B_name.split()[-1].lower().rstrip("s")
        if len(head) > 2 and re.search(rf"\b{re.escape(head)}s?\b", self.A_location.lower()):
            raise ValueError(f"A_location: must not mention the removed object ({self.B_name!r}); use landmarks that remain")
        distinct([self.B_full_desc, self.B_variant_1, self.B_variant_2, self.B_variant_3, self.B_variant_4, self.nothing_desc], "B_full_desc, B_variant_1..4 and nothing_desc")
        distinct([self.attribute_option_1, self.attribute_option_2, self.attribute_option_3], "attribute_option_1..3")
        distinct([self.B_name, self.absurd_object_1, self.absurd_object_2], "B_name, absurd_object_1 and absurd_object_2")
        return self


class CAAnalysis(_Analysis):
    """Counterfactual attribute: the object, the original and the new attribute, locations and wrong options."""

    A_object: str = ""
    A_number: Literal["singular", "plural", "mass"] = "singular"
    attribute_type: str = ""
    B_original_attribute: str = ""
    C_new_attribute: str = ""
    D_location: str = ""
    D_alt_location: str = ""
    plausible_wrong_attribute_1: str = ""
    plausible_wrong_attribute_2: str = ""
    absurd_attribute_1: str = ""
    absurd_attribute_2: str = ""
    wrong_location_1: str = ""
    wrong_location_2: str = ""
    wrong_location_3: str = ""

    CONTENT: ClassVar[tuple[str, ...]] = (
        "A_object", "attribute_type", "B_original_attribute", "C_new_attribute", "D_location", "D_alt_location",
        "plausible_wrong_attribute_1", "plausible_wrong_attribute_2", "absurd_attribute_1", "absurd_attribute_2",
        "wrong_location_1", "wrong_location_2", "wrong_location_3",
    )

    @field_validator("A_number", mode="before")
    @classmethod
    def _number(cls, v: Any) -> Any:
        return v.strip().strip(".").lower() if isinstance(v, str) else v

    @model_validator(mode="after")
    def _check(self, info: ValidationInfo) -> "CAAnalysis":
        self._require_content()
        if not self.usable:
            return self
        if _ARTICLE_RE.match(self.A_object):
            raise ValueError("A_object: write the object without an article (a, an, the)")
        for name in ("D_location", "D_alt_location", "wrong_location_1", "wrong_location_2", "wrong_location_3"):
            if not _LOCATIVE_START_RE.match(getattr(self, name)):
                raise ValueError(f"{name}: must start with a locative preposition (in, on, at, near, ...)")
        if len(self.D_location.split()) > 10:
            raise ValueError("D_location: at most 10 words")
        if any(re.search(rf"\b{w}\b", self.B_original_attribute.lower()) for w in VAGUE_WORDS):
            raise ValueError(f"B_original_attribute: name the concrete visible attribute, not a vague word like {VAGUE_WORDS[:4]}")
        distinct([self.B_original_attribute, self.C_new_attribute, self.plausible_wrong_attribute_1, self.plausible_wrong_attribute_2],
                 "B_original_attribute, C_new_attribute and plausible_wrong_attribute_1..2")
        distinct([self.B_original_attribute, self.C_new_attribute, self.absurd_attribute_1, self.absurd_attribute_2],
                 "B_original_attribute, C_new_attribute and absurd_attribute_1..2")
        distinct([self.D_location, self.D_alt_location, self.wrong_location_1, self.wrong_location_2, self.wrong_location_3],
                 "D_location, D_alt_location and wrong_location_1..3")
        return self


RE_ANALYSIS = PromptSpec("re_analysis", "1", "re_analysis.j2", REAnalysis, 2)
CA_ANALYSIS = PromptSpec("ca_analysis", "1", "ca_analysis.j2", CAAnalysis, 2)
# A task whose questions need a model's look at the edit names its prompt in its spec
# (``analysis_prompt`` hook, storage/task_spec.py); this module keys nothing on a task id.
