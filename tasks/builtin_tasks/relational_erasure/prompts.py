"""RE's prompts: the instruction (which object of the pair to erase) and the analysis of the edit,
with their answer schemas and the offline ``rules`` backend's answers (named in ``task.py``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import ClassVar

from pydantic import ValidationInfo, field_validator, model_validator

from tasks.builtin_tasks.relational_erasure.vocabulary import ABSURD_OBJECTS, SPATIAL_PREDICATES
from tasks.plugin_api import (
    ARTICLE_RE,
    COLOURS,
    MATERIALS,
    AnalysisOutput,
    EnglishStr,
    ObjectName,
    PromptOutput,
    PromptSpec,
    a_or_an,
    attribute_slot,
    basic_name,
    cut_names,
    distinct,
    mentions_preservation,
    norm_text,
    overlap,
    pick_options,
    region_words,
    rules_answer,
    same_name,
    same_word,
)

TEMPLATES = str(Path(__file__).parent / "templates")  # the prompt templates this package ships


class REInstruction(PromptOutput):
    remove: ObjectName
    keep: ObjectName
    instruction: EnglishStr

    @field_validator("instruction")
    @classmethod
    def _protects(cls, v: str) -> str:
        if len(v.split()) < 5:
            raise ValueError("too short to be an editing instruction")
        if not mentions_preservation(v):
            raise ValueError("must say what stays unchanged (e.g. 'preserve ...', 'do not alter the background')")
        return v

    @model_validator(mode="after")
    def _names_from_relation(self, info: ValidationInfo) -> REInstruction:
        ctx = info.context or {}
        pair = [ctx.get("target_name"), ctx.get("partner_name")]
        if all(pair):
            if not any(same_name(self.remove, p) for p in pair):
                raise ValueError(f"remove: must be one of the relation's entities {pair}, got {self.remove!r}")
            if same_name(self.remove, self.keep):
                raise ValueError("keep: must be the other entity of the relation, not the removed one")
        return self


RE_INSTRUCTION = PromptSpec("re_instruction", "1", "re_instruction.j2", REInstruction, 1, template_dir=TEMPLATES)


def _which(ctx: dict[str, object]) -> str:
    """The target as a phrase that singles it out when several instances exist."""
    return f"the {ctx['target_name']} in {ctx['target_location']}"


@rules_answer("re_instruction")
def re_instruction(ctx: dict[str, object]) -> dict[str, object] | None:
    if not ctx.get("target_box") or not ctx.get("partner_name"):
        return None
    area = ctx.get("target_area") or 0.0
    if area < 0.001 or area > 0.6:
        return None
    target, partner = ctx["target_name"], ctx["partner_name"]
    relation = f"{ctx['subject_name']} {ctx['predicate']} {ctx['object_name']}"
    instruction = (
        f"Remove only {_which(ctx)} (the one in the relation '{relation}'), filling its place with what would be behind it. "
        f"Preserve the {partner} and every other object unchanged; do not alter the background of the image."
    )
    return {"remove": target, "keep": partner, "instruction": instruction}


_LEADING_PREP_RE = re.compile(
    r"^(on|in|at|near|beside|by|under|above|over|behind|inside|next to|along|across|around|between|below|beneath|within|among|atop|against|from|to|toward|towards)\b",
    re.I,
)


class REAnalysis(AnalysisOutput):
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
        "B_name",
        "A_location",
        "remaining_at_A",
        "common_knowledge",
        "attribute_type",
        "attribute_value",
        "attribute_option_1",
        "attribute_option_2",
        "attribute_option_3",
        "absurd_object_1",
        "absurd_object_2",
        "B_full_desc",
        "B_variant_1",
        "B_variant_2",
        "B_variant_3",
        "B_variant_4",
        "nothing_desc",
    )

    @field_validator("same_type_elsewhere", mode="before")
    @classmethod
    def _yes_no_same(cls, v: object) -> object:
        return v.strip().strip(".").split()[0].strip(",;—-").lower() if isinstance(v, str) and v.strip() else v

    @model_validator(mode="after")
    def _check(self) -> REAnalysis:
        self._require_content()
        if not self.usable:
            return self
        if ARTICLE_RE.match(self.B_name):
            raise ValueError("B_name: write the object without an article (a, an, the)")
        if len(self.B_name.split()) > 12:
            raise ValueError("B_name: at most 12 words")
        if _LEADING_PREP_RE.match(self.A_location):
            raise ValueError("A_location: a noun phrase without a leading preposition (drop 'on', 'in', 'at', ...)")
        head = self.B_name.split()[-1].lower().rstrip("s")
        if len(head) > 2 and re.search(rf"\b{re.escape(head)}s?\b", self.A_location.lower()):
            raise ValueError(
                f"A_location: must not mention the removed object ({self.B_name!r}); use landmarks that remain"
            )
        distinct(
            [
                self.B_full_desc,
                self.B_variant_1,
                self.B_variant_2,
                self.B_variant_3,
                self.B_variant_4,
                self.nothing_desc,
            ],
            "B_full_desc, B_variant_1..4 and nothing_desc",
        )
        distinct([self.attribute_option_1, self.attribute_option_2, self.attribute_option_3], "attribute_option_1..3")
        distinct(
            [self.B_name, self.absurd_object_1, self.absurd_object_2], "B_name, absurd_object_1 and absurd_object_2"
        )
        return self


RE_ANALYSIS = PromptSpec("re_analysis", "1", "re_analysis.j2", REAnalysis, 2, template_dir=TEMPLATES)


@rules_answer("re_analysis")
def re_analysis(ctx: dict[str, object]) -> dict[str, object]:
    """RE fields from the annotations: the removed entity, the kept one, boxes -> places."""
    removed, kept = ctx["removed_name"], ctx.get("kept_name") or ""
    box, w, h = ctx.get("removed_box") or [], int(ctx["width"]), int(ctx["height"])
    key = str(ctx.get("edit_id") or ctx.get("candidate_id"))
    region = region_words(box, w, h) if box else "centre"
    objects = [o for o in ctx.get("objects", []) if o.get("name")]
    others_same = [
        o for o in objects if same_word(o["name"], removed) and o.get("box") and overlap(o["box"], box) < 0.5
    ]
    same_region = [o for o in others_same if region_words(o["box"], w, h) == region]
    verdict = {
        "verification_status": "pass",
        "verification_issues": "none",
        "discard": False,
        "discard_reason": "none",
    }
    if same_region:
        verdict.update(
            verification_status="warning",
            verification_issues=f"another {removed} is annotated in the same part of the image",
            discard=True,
            discard_reason=f"another {removed} in the {region} part of the image cannot be told apart in words",
        )
    pred = (ctx.get("predicate") or "").strip().lower()
    removed_is_subject = same_word(ctx.get("subject_name") or "", removed)
    if kept and removed_is_subject and pred in SPATIAL_PREDICATES:
        location = f"the spot {pred} the {kept} in the {region} part of the image"
    elif kept:
        location = f"the area next to the {kept} in the {region} part of the image"
    else:
        location = f"the {region} part of the image"
    at_place = {o["name"] for o in objects if not same_word(o["name"], removed) and overlap(box, o.get("box")) > 0.05}
    cut = cut_names(ctx.get("cut_objects") or [])  # what the removal took too much of to be named as there
    covering = sorted(n for n in at_place if basic_name(n) not in cut)[:2]
    if at_place and not covering:
        verdict.update(
            verification_status="fail",
            verification_issues=f"the removal also cut the {', '.join(sorted(at_place))}",
            discard=True,
            discard_reason=f"the removal also cut the {', '.join(sorted(at_place))}: what is left at its place cannot be stated",
        )
    if len(covering) == 2:
        remaining = f"the {covering[0]} and the {covering[1]}, with background around them"
    else:
        remaining = f"the {covering[0]} and the background around it" if covering else "only plain background"
    attrs = [
        a
        for o in objects
        if same_word(o["name"], removed) and overlap(o.get("box"), box) >= 0.5
        for a in o.get("attributes") or []
    ]
    slot = next((s for s in map(attribute_slot, attrs) if s), None)
    if slot:
        value = next(a for a in attrs if attribute_slot(a) == slot)
    else:
        slot, value = "colour", pick_options(COLOURS[:4], key + "colour")[0]
    vocab = COLOURS if slot == "colour" else MATERIALS
    options = [value] + pick_options(vocab, key + "options", 2, exclude={value})
    names_here = {norm_text(o["name"]) for o in objects} | {norm_text(removed), norm_text(kept)}
    absurd = pick_options(
        ABSURD_OBJECTS, key + "absurd", 2, exclude={a_or_an(n) for n in names_here} | {"an " + n for n in names_here}
    )
    subject, obj = (removed, kept) if removed_is_subject else (kept, removed)
    common = (
        f"{a_or_an(subject).capitalize()} and {a_or_an(obj)} often appear together ({subject} {pred or 'with'} {obj})."
        if kept
        else f"{a_or_an(removed).capitalize()} is a common sight in scenes like this."
    )
    base_here = f"the {kept}" if kept else "the background"
    return {
        **verdict,
        "B_name": removed,
        "B_count_descriptor": a_or_an(removed).split()[0],
        "A_location": location,
        "remaining_at_A": remaining,
        "same_type_elsewhere": bool(others_same),
        "same_type_elsewhere_detail": (
            f"yes, another {removed} in the {region_words(others_same[0]['box'], w, h)} part of the image"
            if others_same
            else "no"
        ),
        "common_knowledge": common,
        "attribute_type": slot,
        "attribute_value": value,
        "attribute_option_1": options[0],
        "attribute_option_2": options[1],
        "attribute_option_3": options[2],
        "absurd_object_1": absurd[0],
        "absurd_object_2": absurd[1],
        "B_full_desc": f"{a_or_an(removed)} in plain view by {base_here}",
        "B_variant_1": f"{a_or_an(removed)} partly hidden in shadow",
        "B_variant_2": f"two {removed}s side by side",
        "B_variant_3": f"{a_or_an(removed)} that looks broken",
        "B_variant_4": f"{a_or_an(removed)} far smaller than usual",
        "nothing_desc": f"no {removed}, only {base_here}" if kept else f"no {removed} at all",
    }
