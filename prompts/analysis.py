"""The QA stage's analysis prompts (SPEC sections 4 and 6): RE analysis and CA analysis.

The model sees the original and the edited image, the instruction and the annotations, checks
the edit (verification verdict + discard flag) and returns the fields the question templates
(``tasks/qa/templates/*.yaml``) are filled from. Each output schema validates what the
templates rely on, so a bad answer is re-asked with the reason instead of producing a broken
question. The ``rules`` backend answers both prompts from the annotations alone.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator, model_validator

from prompts.fields import distinct
from prompts.locations import region_words
from prompts.rules import rules_answer
from prompts.spec import PromptSpec, register_prompt
from storage.hashing import sha256_hex

_CJK_RE = re.compile(r"[\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uff00-\uffef]")
_LEADING_PREP_RE = re.compile(r"^(on|in|at|near|beside|by|under|above|over|behind|inside|next to|along|across|around|between|below|beneath|within|among|atop|against|from|to|toward|towards)\b", re.I)
_LOCATIVE_START_RE = re.compile(r"^(on|in|at|near|beside|by|under|above|over|behind|inside|next to|along|across|around|between|below|beneath|within|among|atop|against|toward|towards|close to|in front of|on top of|to the (left|right) of)\b", re.I)
_ARTICLE_RE = re.compile(r"^(a|an|the)\s+", re.I)
VAGUE_WORDS = ("natural", "normal", "ordinary", "regular", "typical", "standard", "default", "plain", "usual", "common")


def _norm(text: str) -> str:
    return " ".join(str(text).casefold().split()).strip(" .,;:!?\"'")


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


RE_ANALYSIS = register_prompt(PromptSpec("re_analysis", "1", "re_analysis.j2", REAnalysis, 2))
CA_ANALYSIS = register_prompt(PromptSpec("ca_analysis", "1", "ca_analysis.j2", CAAnalysis, 2))
ANALYSIS_PROMPTS: dict[str, PromptSpec] = {"relational_erasure": RE_ANALYSIS, "counterfactual_attribute": CA_ANALYSIS}


# ---------------------------------------------------------------------------- rules answers
# Offline answers from annotations: deterministic, picked by hashing the edit so runs repeat.
COLOURS = ("white", "black", "brown", "grey", "red", "blue", "green", "yellow", "orange", "pink", "purple", "silver", "tan", "beige")
MATERIALS = ("wooden", "metal", "plastic", "glass", "leather", "fabric", "stone", "rubber", "paper", "ceramic", "wood", "steel", "concrete", "brick")
ABSURD_OBJECTS = ("a grand piano", "a hot-air balloon", "an octopus", "a canoe", "a traffic cone", "a birthday cake", "a suit of armour", "a penguin", "a snowman", "a rocking horse")
ABSURD_ATTRIBUTES = ("made of smoke", "covered in feathers", "on fire", "dripping like wax", "made of jelly", "see-through like water")
ATTRIBUTE_TYPE_BY_DIRECTION = {
    "colour": "colour", "material": "material", "texture_pattern": "surface pattern", "state": "condition",
    "finish_gloss": "surface finish", "shape_structure": "shape",
}
SPATIAL_PREDICATES = ("on", "in", "under", "beneath", "below", "above", "over", "behind", "beside", "near", "next to", "inside", "in front of", "on top of", "against", "along", "at")


def _pick(options: tuple[str, ...] | list[str], key: str, n: int = 1, exclude: set[str] = frozenset()) -> list[str]:
    pool = [o for o in options if _norm(o) not in {_norm(e) for e in exclude}]
    pool.sort(key=lambda o: sha256_hex(f"{key}\x1f{o}"))
    return pool[:n]


def _a(name: str) -> str:
    return ("an " if name[:1].lower() in "aeiou" else "a ") + name


def _overlap(a: list[float] | None, b: list[float] | None) -> float:
    if not a or not b:
        return 0.0
    x0, y0 = max(a[0], b[0]), max(a[1], b[1])
    x1, y1 = min(a[0] + a[2], b[0] + b[2]), min(a[1] + a[3], b[1] + b[3])
    return max(0.0, x1 - x0) * max(0.0, y1 - y0) / max(1e-9, a[2] * a[3])


def _same(a: str, b: str) -> bool:
    def n(s: str) -> str:
        s = _norm(s)
        return s[:-1] if s.endswith("s") and len(s) > 3 else s

    return n(a) == n(b)


def _attribute_slot(value: str | None) -> str | None:
    v = _norm(value or "")
    if v in COLOURS:
        return "colour"
    if v in MATERIALS:
        return "material"
    return None


@rules_answer("re_analysis")
def re_analysis(ctx: dict[str, Any]) -> dict[str, Any]:
    """RE fields from the annotations: the removed entity, the kept one, boxes -> places."""
    removed, kept = ctx["removed_name"], ctx.get("kept_name") or ""
    box, w, h = ctx.get("removed_box") or [], int(ctx["width"]), int(ctx["height"])
    key = str(ctx.get("edit_id") or ctx.get("candidate_id"))
    region = region_words(box, w, h) if box else "centre"
    objects = [o for o in ctx.get("objects", []) if o.get("name")]
    others_same = [o for o in objects if _same(o["name"], removed) and o.get("box") and _overlap(o["box"], box) < 0.5]
    same_region = [o for o in others_same if region_words(o["box"], w, h) == region]
    verdict = {"verification_status": "pass", "verification_issues": "none", "discard": False, "discard_reason": "none"}
    if same_region:
        verdict.update(verification_status="warning", verification_issues=f"another {removed} is annotated in the same part of the image",
                       discard=True, discard_reason=f"another {removed} in the {region} part of the image cannot be told apart in words")
    pred = (ctx.get("predicate") or "").strip().lower()
    removed_is_subject = _same(ctx.get("subject_name") or "", removed)
    if kept and removed_is_subject and pred in SPATIAL_PREDICATES:
        location = f"the spot {pred} the {kept} in the {region} part of the image"
    elif kept:
        location = f"the area next to the {kept} in the {region} part of the image"
    else:
        location = f"the {region} part of the image"
    covering = sorted({o["name"] for o in objects if not _same(o["name"], removed) and _overlap(box, o.get("box")) > 0.05})[:2]
    if len(covering) == 2:
        remaining = f"the {covering[0]} and the {covering[1]}, with background around them"
    else:
        remaining = f"the {covering[0]} and the background around it" if covering else "only plain background"
    attrs = [a for o in objects if _same(o["name"], removed) and _overlap(o.get("box"), box) >= 0.5 for a in o.get("attributes") or []]
    slot = next((s for s in map(_attribute_slot, attrs) if s), None)
    if slot:
        value = next(a for a in attrs if _attribute_slot(a) == slot)
    else:
        slot, value = "colour", _pick(COLOURS[:4], key + "colour")[0]
    vocab = COLOURS if slot == "colour" else MATERIALS
    options = [value] + _pick(vocab, key + "options", 2, exclude={value})
    names_here = {_norm(o["name"]) for o in objects} | {_norm(removed), _norm(kept)}
    absurd = _pick(ABSURD_OBJECTS, key + "absurd", 2, exclude={_a(n) for n in names_here} | {"an " + n for n in names_here})
    subject, obj = (removed, kept) if removed_is_subject else (kept, removed)
    common = (f"{_a(subject).capitalize()} and {_a(obj)} often appear together ({subject} {pred or 'with'} {obj})." if kept
              else f"{_a(removed).capitalize()} is a common sight in scenes like this.")
    base_here = f"the {kept}" if kept else "the background"
    return {
        **verdict,
        "B_name": removed,
        "B_count_descriptor": _a(removed).split()[0],
        "A_location": location,
        "remaining_at_A": remaining,
        "same_type_elsewhere": bool(others_same),
        "same_type_elsewhere_detail": (f"yes, another {removed} in the {region_words(others_same[0]['box'], w, h)} part of the image" if others_same else "no"),
        "common_knowledge": common,
        "attribute_type": slot,
        "attribute_value": value,
        "attribute_option_1": options[0],
        "attribute_option_2": options[1],
        "attribute_option_3": options[2],
        "absurd_object_1": absurd[0],
        "absurd_object_2": absurd[1],
        "B_full_desc": f"{_a(removed)} in plain view by {base_here}",
        "B_variant_1": f"{_a(removed)} partly hidden in shadow",
        "B_variant_2": f"two {removed}s side by side",
        "B_variant_3": f"{_a(removed)} that looks broken",
        "B_variant_4": f"{_a(removed)} far smaller than usual",
        "nothing_desc": f"no {removed}, only {base_here}" if kept else f"no {removed} at all",
    }


@rules_answer("ca_analysis")
def ca_analysis(ctx: dict[str, Any]) -> dict[str, Any]:
    """CA fields from the annotations and the instruction's new attribute."""
    name, box, w, h = ctx["target_name"], ctx.get("target_box") or [], int(ctx["width"]), int(ctx["height"])
    key = str(ctx.get("edit_id") or ctx.get("candidate_id"))
    original, new = str(ctx.get("original_attribute") or ""), str(ctx.get("new_attribute") or "")
    direction = str(ctx.get("direction") or "")
    verdict = {"verification_status": "pass", "verification_issues": "none", "discard": False, "discard_reason": "none"}
    if not original or not new:
        return {**verdict, "verification_status": "fail", "discard": True, "discard_reason": "the original or the new attribute is unknown"}
    slot = ATTRIBUTE_TYPE_BY_DIRECTION.get(direction, "appearance")
    original_slot = _attribute_slot(original)
    if original_slot is not None and original_slot != direction:
        slot = "appearance"  # the annotated attribute sits in another slot than the edit: ask about the look
    region = region_words(box, w, h) if box else "centre"
    vert = "upper" if (box and box[1] + box[3] / 2 < h / 2) else "lower"
    alt = f"in the {vert} half of the image"
    from prompts.instruct_rules import CA_VALUES  # same value lists the instruction used

    # wrong values as long as the right one, so length gives nothing away
    from prompts.colours import colour_of, colours_apart

    shown = colour_of(new)  # a wrong option must not read as the colour the object now shows
    pool = [v for v in list(CA_VALUES.get(direction, ())) + ["slightly faded", "two-toned"] if _norm(v) not in {_norm(original), _norm(new)}
            and not (shown and colour_of(v) and not colours_apart(colour_of(v), shown))]
    pool.sort(key=lambda v: (abs(len(v) - len(new)), sha256_hex(f"{key}\x1fwrong\x1f{v}")))
    wrong = pool[:2]
    absurd = _pick(ABSURD_ATTRIBUTES, key + "absurd", 2, exclude={original, new})
    regions = ["upper left", "upper right", "lower left", "lower right", "centre", "upper middle", "lower middle", "middle left", "middle right"]
    wrong_regions = _pick([r for r in regions if r != region], key + "loc", 3)
    conflict = [o for o in ctx.get("objects", []) if _same(o["name"], name) and original.lower() in [str(a).lower() for a in o.get("attributes") or []]
                and o.get("box") and ("upper" if o["box"][1] + o["box"][3] / 2 < h / 2 else "lower") == vert]
    if conflict:
        verdict.update(verification_status="warning", discard=True, discard_reason=f"another {original} {name} is in the {vert} half of the image")
    return {
        **verdict,
        "A_object": name,
        "A_number": "singular",
        "attribute_type": slot,
        "B_original_attribute": original,
        "C_new_attribute": new,
        "D_location": f"in the {region} part of the image",
        "D_alt_location": alt,
        "plausible_wrong_attribute_1": wrong[0],
        "plausible_wrong_attribute_2": wrong[1],
        "absurd_attribute_1": absurd[0],
        "absurd_attribute_2": absurd[1],
        "wrong_location_1": f"in the {wrong_regions[0]} part of the image",
        "wrong_location_2": f"in the {wrong_regions[1]} part of the image",
        "wrong_location_3": f"in the {wrong_regions[2]} part of the image",
    }
