"""CA's prompts: two attribute instructions per object and the analysis of each edit, with their
answer schemas and the offline ``rules`` backend's answers (named in ``task.py``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import ValidationInfo, field_validator, model_validator

from tasks.builtin_tasks.counterfactual_attribute.vocabulary import (
    ABSURD_ATTRIBUTES,
    ATTRIBUTE_TYPE_BY_DIRECTION,
    CA_VALUES,
    MADE_DIRECTIONS,
    NATURAL_DIRECTIONS,
    NATURAL_HINTS,
)
from tasks.plugin_api import (
    ARTICLE_RE,
    COUNTER_COLOURS,
    AnalysisOutput,
    EnglishStr,
    PromptOutput,
    PromptSpec,
    attribute_slot,
    colour_of,
    colour_word,
    colours_apart,
    distinct,
    mentions_preservation,
    norm_text,
    pick,
    pick_options,
    region_words,
    rules_answer,
    same_word,
    sha256_hex,
)

TEMPLATES = str(Path(__file__).parent / "templates")  # the prompt templates this package ships


CA_DIRECTIONS = ("material", "colour", "texture_pattern", "state", "finish_gloss", "shape_structure")


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


class CAInstructions(PromptOutput):
    direction_a: str
    new_attribute_a: EnglishStr
    instruction_a: EnglishStr
    direction_b: str
    new_attribute_b: EnglishStr
    instruction_b: EnglishStr

    @field_validator("direction_a", "direction_b", mode="before")
    @classmethod
    def _direction(cls, v: object) -> str:
        key = "_".join(str(v).lower().replace("/", " ").replace("-", " ").replace("&", " ").split())
        key = key.strip("[]_")
        if key not in _DIRECTION_SYNONYMS:
            raise ValueError(f"must be one of {', '.join(CA_DIRECTIONS)}")
        return _DIRECTION_SYNONYMS[key]

    @field_validator("instruction_a", "instruction_b")
    @classmethod
    def _protects(cls, v: str) -> str:
        if not mentions_preservation(v):
            raise ValueError(
                "must end with the preservation sentence ('Preserve the ... unchanged; do not alter the background ...')"
            )
        return v

    @model_validator(mode="after")
    def _two_directions(self, info: ValidationInfo) -> CAInstructions:
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


CA_INSTRUCTIONS = PromptSpec("ca_instructions", "1", "ca_instructions.j2", CAInstructions, 1, template_dir=TEMPLATES)


def _protect(neighbours: list[str]) -> str:
    names = [n for n in neighbours if n][:3]
    if not names:
        return "Preserve all surrounding objects in the image unchanged; do not alter the background of the image."
    listed = ", ".join(f"the {n}" for n in names)
    return f"Preserve {listed}, and other surrounding objects in the image unchanged; do not alter the background of the image."


# New materials a grader could still call the annotated one ("Is the car metal?" of a car made
# of hammered copper is Yes): never drawn as its replacement.
_METAL, _STONE, _WOOD, _FIBRE = (
    ("brushed steel", "hammered copper"),
    ("rough grey stone", "polished marble"),
    ("bamboo slats", "cork", "woven wicker"),
    ("knitted wool", "braided rope"),
)
NEAR_MATERIALS: dict[str, tuple[str, ...]] = {
    "metal": _METAL,
    "steel": _METAL,
    "stone": _STONE,
    "concrete": _STONE,
    "brick": (*_STONE, "terracotta clay"),
    "ceramic": ("terracotta clay", "polished marble"),
    "wood": _WOOD,
    "wooden": _WOOD,
    "paper": ("corrugated cardboard",),
    "fabric": _FIBRE,
    "glass": ("clear glass",),
}


def _natural(name: str) -> bool:
    return any(h in name.lower() for h in NATURAL_HINTS)


@rules_answer("ca_instructions")
def ca_instructions(ctx: dict[str, object]) -> dict[str, object] | None:
    if not ctx.get("target_box") or not ctx.get("attribute"):
        return None
    area = ctx.get("target_area") or 0.0
    if area < 0.01 or area > 0.85:
        return None
    name, cid, original = ctx["target_name"], str(ctx["candidate_id"]), str(ctx["attribute"]).lower()
    limits = ctx.get("editor_limits") or {}
    if limits.get("limited"):
        return _ca_renderable(ctx, limits)
    # Instruction a replaces the annotated attribute with one of its own kind, so the questions
    # that call the original gone are true of the edit (recolouring a "parked" car leaves it
    # parked); b takes another of the six directions, as the design asks, and only an analysis
    # that reads the original of that kind off the photo (a model, not these rules) can keep it.
    kind = attribute_slot(original)
    if kind is None:
        return None
    base = colour_word(original) if kind == "colour" else None
    near = NEAR_MATERIALS.get(norm_text(original), ()) if kind == "material" else ()
    order = list(NATURAL_DIRECTIONS if _natural(name) else MADE_DIRECTIONS)
    second = pick([d for d in order if d != kind][:4], cid + ":d2")
    out: dict[str, object] = {}
    for slot, direction in (("a", kind), ("b", second)):
        values = [
            v
            for v in CA_VALUES[direction]
            if original not in v
            and v not in original
            and v not in near
            and not (base and direction == kind and (colour_of(v) is None or not colours_apart(colour_of(v), base)))
        ]
        value = pick(values, f"{cid}:{slot}")
        out[f"direction_{slot}"] = direction
        out[f"new_attribute_{slot}"] = value
        out[f"instruction_{slot}"] = (
            f"{_ca_sentence(direction, name, ctx['target_location'], value)} {_protect(ctx['neighbour_names'])}"
        )
    return out


def _ca_renderable(ctx: dict[str, object], limits: dict[str, object]) -> dict[str, object] | None:
    """CA for editors that only recolour: two counter-commonsense named colours, and only when the
    dominant attribute is itself a colour (so "is it still <original>?" is answered by the pixels)."""
    name, cid, original = ctx["target_name"], str(ctx["candidate_id"]), str(ctx["attribute"]).strip().lower()
    allowed = set((limits.get("attribute_values") or {}).get("colour") or ())
    base = colour_word(original)
    if base is None or not allowed:
        return None
    seen = {colour_word(str(a)) for o in ctx["objects"] if o.get("name") == name for a in o.get("attributes") or []}
    pool = [c for c in COUNTER_COLOURS if c in allowed and colours_apart(c, base) and c not in seen]
    if len(pool) < 2:
        return None
    first = pick(pool, cid + ":c1")
    second = pick([c for c in pool if colours_apart(c, first)], cid + ":c2")
    out: dict[str, object] = {}
    for slot, value in (("a", first), ("b", second)):
        out[f"direction_{slot}"] = "colour"
        out[f"new_attribute_{slot}"] = value
        out[f"instruction_{slot}"] = (
            f"{_ca_sentence('colour', name, ctx['target_location'], value)} {_protect(ctx['neighbour_names'])}"
        )
    return out


def _ca_sentence(direction: str, name: str, where: str, value: str) -> str:
    if direction == "material":
        return f"Make the {name} in {where} out of {value}, keeping its shape, size and position, so that it looks as if it had always been made that way."
    if direction == "colour":
        return f"Change the colour of the whole {name} in {where} to {value}, as its natural colour rather than a coat of paint."
    if direction == "texture_pattern":
        return f"Give the surface of the {name} in {where} {value} that looks like part of the object itself, not a sticker."
    if direction == "state":
        return f"Show the {name} in {where} {value}, in a moderate, photorealistic way."
    if direction == "finish_gloss":
        return f"Give the whole {name} in {where} a {value}, photorealistic and consistent with the scene lighting."
    return f"Change the {name} in {where} so that it has {value}, while it stays recognisable as a {name}."


_LOCATIVE_START_RE = re.compile(
    r"^(on|in|at|near|beside|by|under|above|over|behind|inside|next to|along|across|around|between|below|beneath|within|among|atop|against|toward|towards|close to|in front of|on top of|to the (left|right) of)\b",
    re.I,
)


VAGUE_WORDS = (
    "natural",
    "normal",
    "ordinary",
    "regular",
    "typical",
    "standard",
    "default",
    "plain",
    "usual",
    "common",
)


class CAAnalysis(AnalysisOutput):
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
        "A_object",
        "attribute_type",
        "B_original_attribute",
        "C_new_attribute",
        "D_location",
        "D_alt_location",
        "plausible_wrong_attribute_1",
        "plausible_wrong_attribute_2",
        "absurd_attribute_1",
        "absurd_attribute_2",
        "wrong_location_1",
        "wrong_location_2",
        "wrong_location_3",
    )

    @field_validator("A_number", mode="before")
    @classmethod
    def _number(cls, v: object) -> object:
        return v.strip().strip(".").lower() if isinstance(v, str) else v

    @model_validator(mode="after")
    def _check(self, info: ValidationInfo) -> CAAnalysis:
        self._require_content()
        if not self.usable:
            return self
        if ARTICLE_RE.match(self.A_object):
            raise ValueError("A_object: write the object without an article (a, an, the)")
        for name in ("D_location", "D_alt_location", "wrong_location_1", "wrong_location_2", "wrong_location_3"):
            if not _LOCATIVE_START_RE.match(getattr(self, name)):
                raise ValueError(f"{name}: must start with a locative preposition (in, on, at, near, ...)")
        if len(self.D_location.split()) > 10:
            raise ValueError("D_location: at most 10 words")
        if any(re.search(rf"\b{w}\b", self.B_original_attribute.lower()) for w in VAGUE_WORDS):
            raise ValueError(
                f"B_original_attribute: name the concrete visible attribute, not a vague word like {VAGUE_WORDS[:4]}"
            )
        distinct(
            [
                self.B_original_attribute,
                self.C_new_attribute,
                self.plausible_wrong_attribute_1,
                self.plausible_wrong_attribute_2,
            ],
            "B_original_attribute, C_new_attribute and plausible_wrong_attribute_1..2",
        )
        distinct(
            [self.B_original_attribute, self.C_new_attribute, self.absurd_attribute_1, self.absurd_attribute_2],
            "B_original_attribute, C_new_attribute and absurd_attribute_1..2",
        )
        distinct(
            [
                self.D_location,
                self.D_alt_location,
                self.wrong_location_1,
                self.wrong_location_2,
                self.wrong_location_3,
            ],
            "D_location, D_alt_location and wrong_location_1..3",
        )
        return self


CA_ANALYSIS = PromptSpec("ca_analysis", "1", "ca_analysis.j2", CAAnalysis, 2, template_dir=TEMPLATES)


@rules_answer("ca_analysis")
def ca_analysis(ctx: dict[str, object]) -> dict[str, object]:
    """CA fields from the annotations and the instruction's new attribute."""
    name, box, w, h = ctx["target_name"], ctx.get("target_box") or [], int(ctx["width"]), int(ctx["height"])
    key = str(ctx.get("edit_id") or ctx.get("candidate_id"))
    original, new = str(ctx.get("original_attribute") or ""), str(ctx.get("new_attribute") or "")
    direction = str(ctx.get("direction") or "")
    verdict = {
        "verification_status": "pass",
        "verification_issues": "none",
        "discard": False,
        "discard_reason": "none",
    }
    if not original or not new:
        return {
            **verdict,
            "verification_status": "fail",
            "discard": True,
            "discard_reason": "the original or the new attribute is unknown",
        }
    slot = ATTRIBUTE_TYPE_BY_DIRECTION.get(direction, "appearance")
    original_slot = attribute_slot(original)
    if original_slot != direction:
        # Q1-Q4 and Q7 say the original attribute is gone: true only when the edit replaced it
        # with a value of the same kind (a recoloured "parked" car is still parked)
        kind = f"a {original_slot}" if original_slot else "neither a colour nor a material"
        return {
            **verdict,
            "verification_status": "fail",
            "discard": True,
            "discard_reason": f"the edit changes the {direction or 'unknown attribute'}, but the annotated attribute {original!r} is {kind}: "
            "the edit does not make it untrue",
        }
    region = region_words(box, w, h) if box else "centre"
    vert = "upper" if (box and box[1] + box[3] / 2 < h / 2) else "lower"
    alt = f"in the {vert} half of the image"
    # wrong values from the value lists the instruction used, as long as the right one, so length
    # gives nothing away
    shown = colour_of(new)  # a wrong option must not read as the colour the object now shows
    pool = [
        v
        for v in list(CA_VALUES.get(direction, ())) + ["slightly faded", "two-toned"]
        if norm_text(v) not in {norm_text(original), norm_text(new)}
        and not (shown and colour_of(v) and not colours_apart(colour_of(v), shown))
    ]
    pool.sort(key=lambda v: (abs(len(v) - len(new)), sha256_hex(f"{key}\x1fwrong\x1f{v}")))
    wrong = pool[:2]
    absurd = pick_options(ABSURD_ATTRIBUTES, key + "absurd", 2, exclude={original, new})
    regions = [
        "upper left",
        "upper right",
        "lower left",
        "lower right",
        "centre",
        "upper middle",
        "lower middle",
        "middle left",
        "middle right",
    ]
    wrong_regions = pick_options([r for r in regions if r != region], key + "loc", 3)
    conflict = [
        o
        for o in ctx.get("objects", [])
        if same_word(o["name"], name)
        and original.lower() in [str(a).lower() for a in o.get("attributes") or []]
        and o.get("box")
        and ("upper" if o["box"][1] + o["box"][3] / 2 < h / 2 else "lower") == vert
    ]
    if conflict:
        verdict.update(
            verification_status="warning",
            discard=True,
            discard_reason=f"another {original} {name} is in the {vert} half of the image",
        )
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
