"""The instruct stage's prompts (SPEC section 4): RE instruction, CA instructions, AT edit plan, DC filter.

Each prompt is a template under ``prompts/templates/`` plus the pydantic schema its answer must
satisfy. Validators that need the item (allowed edit types, the names in the relation) read it
from the validation context, which the prompt runner sets to the prompt's context. The specs are
plain values (``prompts.catalogue`` lists them; each task's spec names its own as the
``instruct_prompt`` hook); the rules answers are ``prompts/instruct_rules.py``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator, model_validator

from prompts.fields import EnglishStr, LocationPhrase, ObjectName, PastPredicate, ThreeDistinct, distinct
from prompts.locations import area_fraction, distance, location_phrase
from prompts.spec import PromptSpec
from storage.json_columns import context_objects
from storage.names import class_members
from storage.task_spec import task_hook

CA_DIRECTIONS = ("material", "colour", "texture_pattern", "state", "finish_gloss", "shape_structure")
EDIT_TYPES = ("delete", "add", "replace", "move")

_DIRECTION_SYNONYMS = {
    "material": "material",
    "material_replacement": "material",
    "colour": "colour",
    "color": "colour",
    "colour_shift": "colour",
    "color_shift": "colour",
    "texture": "texture_pattern",
    "pattern": "texture_pattern",
    "texture_pattern": "texture_pattern",
    "surface_texture_pattern": "texture_pattern",
    "surface_texture": "texture_pattern",
    "state": "state",
    "state_anomaly": "state",
    "finish": "finish_gloss",
    "gloss": "finish_gloss",
    "finish_gloss": "finish_gloss",
    "finish_gloss_reversal": "finish_gloss",
    "shape": "shape_structure",
    "structure": "shape_structure",
    "shape_structure": "shape_structure",
}


def same_name(a: str, b: str) -> bool:
    """Names match ignoring case, articles and a plural ``s``."""

    def n(s: str) -> str:
        words = [w for w in s.lower().replace("-", " ").split() if w not in ("a", "an", "the")]
        return " ".join(w[:-1] if w.endswith("s") and len(w) > 3 else w for w in words)

    return n(a) == n(b) or n(a).endswith(" " + n(b)) or n(b).endswith(" " + n(a))


def _mentions_preservation(text: str) -> bool:
    t = text.lower()
    return any(k in t for k in ("preserve", "unchanged", "do not alter", "don't alter", "keep ", "leave "))


# ---------------------------------------------------------------------------- outputs
class _Output(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class REInstruction(_Output):
    remove: ObjectName
    keep: ObjectName
    instruction: EnglishStr

    @field_validator("instruction")
    @classmethod
    def _protects(cls, v: str) -> str:
        if len(v.split()) < 5:
            raise ValueError("too short to be an editing instruction")
        if not _mentions_preservation(v):
            raise ValueError("must say what stays unchanged (e.g. 'preserve ...', 'do not alter the background')")
        return v

    @model_validator(mode="after")
    def _names_from_relation(self, info: ValidationInfo) -> "REInstruction":
        ctx = info.context or {}
        pair = [ctx.get("target_name"), ctx.get("partner_name")]
        if all(pair):
            if not any(same_name(self.remove, p) for p in pair):
                raise ValueError(f"remove: must be one of the relation's entities {pair}, got {self.remove!r}")
            if same_name(self.remove, self.keep):
                raise ValueError("keep: must be the other entity of the relation, not the removed one")
        return self


class CAInstructions(_Output):
    direction_a: str
    new_attribute_a: EnglishStr
    instruction_a: EnglishStr
    direction_b: str
    new_attribute_b: EnglishStr
    instruction_b: EnglishStr

    @field_validator("direction_a", "direction_b", mode="before")
    @classmethod
    def _direction(cls, v: Any) -> str:
        key = "_".join(str(v).lower().replace("/", " ").replace("-", " ").replace("&", " ").split())
        key = key.strip("[]_")
        if key not in _DIRECTION_SYNONYMS:
            raise ValueError(f"must be one of {', '.join(CA_DIRECTIONS)}")
        return _DIRECTION_SYNONYMS[key]

    @field_validator("instruction_a", "instruction_b")
    @classmethod
    def _protects(cls, v: str) -> str:
        if not _mentions_preservation(v):
            raise ValueError("must end with the preservation sentence ('Preserve the ... unchanged; do not alter the background ...')")
        return v

    @model_validator(mode="after")
    def _two_directions(self, info: ValidationInfo) -> "CAInstructions":
        limited = bool(((info.context or {}).get("editor_limits") or {}).get("limited"))
        if self.direction_a == self.direction_b and not limited:  # limited editors: two colours are all there is
            raise ValueError("direction_b: the two instructions must use two different directions")
        if " ".join(self.new_attribute_a.lower().split()) == " ".join(self.new_attribute_b.lower().split()):
            raise ValueError("new_attribute_b: must differ from new_attribute_a")
        original = (info.context or {}).get("attribute")
        limits = (info.context or {}).get("editor_limits") or {}
        if limits.get("limited"):  # the configured editors render only these values: ask again otherwise
            allowed = {v for vals in (limits.get("attribute_values") or {}).values() for v in vals}
            for name in ("new_attribute_a", "new_attribute_b"):
                if " ".join(getattr(self, name).lower().split()) not in allowed:
                    raise ValueError(f"{name}: the configured editors can render only one of {sorted(allowed)}")
        for name in ("new_attribute_a", "new_attribute_b"):
            if original and getattr(self, name).strip().lower() == str(original).strip().lower():
                raise ValueError(f"{name}: must differ from the object's typical attribute {original!r}")
        return self


class ATEditPlan(_Output):
    edit_type: Literal["delete", "add", "replace", "move"]
    instruction: EnglishStr
    A: LocationPhrase
    B: ObjectName
    C: PastPredicate
    A_prime: LocationPhrase
    B_prime: ObjectName
    C_prime: PastPredicate
    overall_distractors: ThreeDistinct
    location_distractors: ThreeDistinct
    object_location_distractors: ThreeDistinct
    b_prime_distractors: ThreeDistinct
    a_prime_distractors: ThreeDistinct
    c_prime_objects: ThreeDistinct
    # What a cloning editor needs (editors/capabilities.py): where a moved / added copy goes, and
    # which annotated object (class + box) a replacement copies.
    destination_box: list[float] | None = None
    replacement: str | None = None
    donor_box: list[float] | None = None

    @field_validator("edit_type", mode="before")
    @classmethod
    def _lower(cls, v: Any) -> Any:
        return v.strip().lower() if isinstance(v, str) else v

    @field_validator(
        "overall_distractors", "location_distractors", "object_location_distractors", "b_prime_distractors", "a_prime_distractors", "c_prime_objects"
    )
    @classmethod
    def _distinct(cls, v: list[str], info: ValidationInfo) -> list[str]:
        return distinct(v, info.field_name or "list")

    @model_validator(mode="after")
    def _consistent(self, info: ValidationInfo) -> "ATEditPlan":
        ctx = info.context or {}
        assigned = ctx.get("assigned_edit_type")
        if assigned:
            allowed = [assigned, *ctx.get("fallback_chain", [])]
            if self.edit_type not in allowed:
                raise ValueError(f"edit_type: must be the assigned type {assigned!r} or one of its fallbacks {allowed[1:]}")
        limits = ctx.get("editor_limits") or {}
        if limits.get("limited") and {"delete": "remove"}.get(self.edit_type, self.edit_type) not in (limits.get("kinds") or ()):
            raise ValueError(f"edit_type: the configured editors can only do {limits.get('kinds')}")
        if self.edit_type == "delete" and int(ctx.get("same_instance_count") or 0) < 2:
            raise ValueError("edit_type: delete needs at least two instances of the object; use the next fallback")
        if same_name(self.B, self.B_prime):
            raise ValueError("B_prime: must be an object of another kind than B")
        target = {"name": str(ctx.get("target_name") or self.B), "synset": ctx.get("target_synset")}
        members = class_members(self.B_prime, [target, *(o for o in ctx.get("objects") or [] if o.get("box"))])
        if any(m is target for m in members):
            raise ValueError(f"B_prime: the {self.B_prime} is the same kind of thing as the edited {target['name']} (one synset); pick another object")
        if len(members) > 1:
            raise ValueError(f"B_prime: the picture holds {len(members)} objects of the {self.B_prime}'s kind; pick an object that occurs once")
        if self.A.strip().lower() == self.A_prime.strip().lower():
            raise ValueError("A_prime: must be a different place than A")
        if self.C.strip().lower() == self.C_prime.strip().lower():
            raise ValueError("C_prime: must differ from C")
        return self


class DCAmbiguity(_Output):
    has_ambiguity: bool
    severity: Literal["none", "mild", "moderate", "severe"]

    @field_validator("severity", mode="before")
    @classmethod
    def _lower(cls, v: Any) -> Any:
        return v.strip().strip(".").lower() if isinstance(v, str) else v

    @model_validator(mode="after")
    def _consistent(self) -> "DCAmbiguity":
        if self.has_ambiguity != (self.severity in ("moderate", "severe")):
            raise ValueError("has_ambiguity must be false for severity none/mild and true for moderate/severe")
        return self

    @property
    def keep(self) -> bool:
        return self.severity in ("none", "mild")


RE_INSTRUCTION = PromptSpec("re_instruction", "1", "re_instruction.j2", REInstruction, 1)
CA_INSTRUCTIONS = PromptSpec("ca_instructions", "1", "ca_instructions.j2", CAInstructions, 1)
AT_EDIT_PLAN = PromptSpec("at_edit_plan", "1", "at_edit_plan.j2", ATEditPlan, 1)
DC_AMBIGUITY = PromptSpec("dc_ambiguity", "1", "dc_ambiguity.j2", DCAmbiguity, 1)

# Which task asks which of these is the task's business: its spec names the prompt
# (``instruct_prompt`` hook, storage/task_spec.py); this module keys nothing on a task id.


# ---------------------------------------------------------------------------- contexts
def _objects(candidate: dict[str, Any]) -> list[dict[str, Any]]:
    return [o for o in context_objects(candidate, f"candidate {candidate.get('id')!r}") if o.get("name")]


def candidate_context(candidate: dict[str, Any]) -> dict[str, Any]:
    """The template/rules context of one candidate row (names, boxes, location phrases, neighbours),
    extended by the task's ``instruct_context(candidate, ctx) -> ctx`` hook when it has one."""
    w, h = int(candidate["width"]), int(candidate["height"])
    box = list(candidate.get("target_box") or [])
    target = candidate.get("target_name") or candidate.get("class_name") or ""
    objs = _objects(candidate)
    others = [o for o in objs if o.get("id") != candidate.get("target_object_id")]
    for o in others:
        if o.get("box"):
            o["location"] = location_phrase(o["box"], w, h)
    near = sorted((o for o in others if o.get("box")), key=lambda o: (distance(o["box"], box), o["name"])) if box else others
    neighbours: list[str] = []
    for o in near:
        if o["name"] != target and o["name"] not in neighbours:
            neighbours.append(o["name"])
    partner = candidate.get("partner_name")
    target_is_subject = candidate.get("direction", "target_is_subject") != "target_is_object"
    ctx: dict[str, Any] = {
        "candidate_id": candidate.get("id"),
        "task": candidate["task"],
        "variant": candidate.get("variant"),
        "width": w,
        "height": h,
        "target_name": target,
        "target_box": box,
        "target_synset": candidate.get("target_synset"),
        "target_location": location_phrase(box, w, h) if box else "the image",
        "target_area": area_fraction(box, w, h) if box else None,
        "partner_name": partner,
        "partner_box": list(candidate.get("partner_box") or []),
        "partner_location": location_phrase(candidate["partner_box"], w, h) if candidate.get("partner_box") else None,
        "predicate": candidate.get("predicate") or "with",
        "subject_name": target if target_is_subject else (partner or ""),
        "object_name": (partner or "") if target_is_subject else target,
        "attribute": candidate.get("attribute"),
        "same_instance_count": int(candidate.get("same_instance_count") or 1),
        "assigned_edit_type": candidate.get("edit_type"),
        "fallback_chain": list(candidate.get("fallback_chain") or []),
        "count": candidate.get("count"),
        "class_name": candidate.get("class_name") or target,
        "points": candidate.get("points") or [],
        "objects": others,
        "object_names": sorted({o["name"] for o in others}),
        "neighbour_names": neighbours[:3],
    }
    extend = task_hook(str(candidate["task"]), "instruct_context")
    if extend is not None:  # what a task's prompt reads beyond these keys
        ctx = extend(candidate, ctx)
    return ctx
