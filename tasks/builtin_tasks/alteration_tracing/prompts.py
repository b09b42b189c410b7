"""AT's prompt: the edit plan (operation, object, place, control object and the question
materials), its answer schema and the offline ``rules`` backend's answer (named in ``task.py``)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Literal

from pydantic import ValidationInfo, field_validator, model_validator

from tasks.builtin_tasks.alteration_tracing.vocabulary import SUBSTITUTES
from tasks.plugin_api import (
    EnglishStr,
    LocationPhrase,
    ObjectName,
    PastPredicate,
    PromptOutput,
    PromptSpec,
    ThreeDistinct,
    box_center,
    class_members,
    distinct,
    grown,
    intersects,
    pick,
    region_words,
    rules_answer,
    same_class,
    same_name,
    sha256_hex,
)

TEMPLATES = str(Path(__file__).parent / "templates")  # the prompt templates this package ships


EDIT_TYPES = ("delete", "add", "replace", "move")


class ATEditPlan(PromptOutput):
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
    def _lower(cls, v: object) -> object:
        return v.strip().lower() if isinstance(v, str) else v

    @field_validator(
        "overall_distractors",
        "location_distractors",
        "object_location_distractors",
        "b_prime_distractors",
        "a_prime_distractors",
        "c_prime_objects",
    )
    @classmethod
    def _distinct(cls, v: list[str], info: ValidationInfo) -> list[str]:
        return distinct(v, info.field_name or "list")

    @model_validator(mode="after")
    def _consistent(self, info: ValidationInfo) -> ATEditPlan:
        ctx = info.context or {}
        assigned = ctx.get("assigned_edit_type")
        if assigned:
            allowed = [assigned, *ctx.get("fallback_chain", [])]
            if self.edit_type not in allowed:
                raise ValueError(
                    f"edit_type: must be the assigned type {assigned!r} or one of its fallbacks {allowed[1:]}"
                )
        limits = ctx.get("editor_limits") or {}
        if limits.get("limited") and {"delete": "remove"}.get(self.edit_type, self.edit_type) not in (
            limits.get("kinds") or ()
        ):
            raise ValueError(f"edit_type: the configured editors can only do {limits.get('kinds')}")
        if self.edit_type == "delete" and int(ctx.get("same_instance_count") or 0) < 2:
            raise ValueError("edit_type: delete needs at least two instances of the object; use the next fallback")
        if same_name(self.B, self.B_prime):
            raise ValueError("B_prime: must be an object of another kind than B")
        target = {"name": str(ctx.get("target_name") or self.B), "synset": ctx.get("target_synset")}
        members = class_members(self.B_prime, [target, *(o for o in ctx.get("objects") or [] if o.get("box"))])
        if any(m is target for m in members):
            raise ValueError(
                f"B_prime: the {self.B_prime} is the same kind of thing as the edited {target['name']} (one synset); pick another object"
            )
        if len(members) > 1:
            raise ValueError(
                f"B_prime: the picture holds {len(members)} objects of the {self.B_prime}'s kind; pick an object that occurs once"
            )
        if self.A.strip().lower() == self.A_prime.strip().lower():
            raise ValueError("A_prime: must be a different place than A")
        if self.C.strip().lower() == self.C_prime.strip().lower():
            raise ValueError("C_prime: must differ from C")
        return self


AT_EDIT_PLAN = PromptSpec("at_edit_plan", "1", "at_edit_plan.j2", ATEditPlan, 1, template_dir=TEMPLATES)


def _control_object(
    ctx: dict[str, object], changed: list[list[float]], also_changed: tuple[str, ...] = ()
) -> dict[str, object] | None:
    """The control object B' the questions say stayed the same: the one instance of its class in
    the picture (a question naming "the stone" must mean one object; a "rock" sharing its synset
    counts), of a class other than the target's and the ``also_changed`` ones (a replacement), with
    every instance of its class clear of the ``changed`` boxes; the farthest from the target."""
    target = {"name": ctx["target_name"], "synset": ctx.get("target_synset")}
    objects = [o for o in ctx["objects"] if o.get("box")]
    busy = [target, *({"name": n} for n in also_changed)]
    clear = []
    for o in objects:
        if any(same_class(o, b) for b in busy):
            continue
        members = [p for p in objects if same_class(p, o)]
        if len(members) == 1 and not any(intersects(o["box"], c) for c in changed):
            clear.append(o)
    if not clear:
        return None
    cx, cy = box_center(ctx["target_box"])
    return max(
        clear, key=lambda o: (math.hypot(box_center(o["box"])[0] - cx, box_center(o["box"])[1] - cy), o["name"])
    )


def _chosen_type(ctx: dict[str, object]) -> str | None:
    for t in [ctx.get("assigned_edit_type"), *ctx.get("fallback_chain", [])]:
        if t == "delete" and ctx.get("same_instance_count", 1) < 2:
            continue
        if t == "move" and not ctx.get("neighbour_names"):
            continue
        if t in ("delete", "add", "replace", "move"):
            return t
    return None


def _side(ctx: dict[str, object], ref_box: list[float]) -> str:
    tx, _ = box_center(ctx["target_box"])
    rx, _ = box_center(ref_box)
    return "left" if rx >= tx else "right"


@rules_answer("at_edit_plan")
def at_edit_plan(ctx: dict[str, object]) -> dict[str, object] | None:
    if not ctx.get("target_box"):
        return None
    limits = ctx.get("editor_limits") or {}
    if limits.get("limited"):
        return _at_renderable(ctx, limits)
    etype = _chosen_type(ctx)
    name, cid, where = ctx["target_name"], str(ctx["candidate_id"]), ctx["target_location"]
    far = _control_object(ctx, [grown(ctx["target_box"], 15)])
    names = [n for n in ctx["object_names"] if n != name]
    if etype is None or far is None or len(names) < 4:
        return None
    region = region_words(ctx["target_box"], ctx["width"], ctx["height"])
    near_name = ctx["neighbour_names"][0] if ctx["neighbour_names"] else names[0]
    near_box = next((o["box"] for o in ctx["objects"] if o["name"] == near_name and o.get("box")), far["box"])
    substitute = SUBSTITUTES.get(name.split()[-1], f"differently shaped {name}")
    changes = {
        "delete": (
            "was removed from the scene",
            f"Remove the {name} in {where}; fill the gap with the surrounding background and change nothing else.",
        ),
        "add": (
            f"had a new identical copy added to its {_side(ctx, near_box) == 'left' and 'right' or 'left'}",
            f"Add one more {name} right next to the {name} in {where}, resting naturally on the same surface; change nothing else.",
        ),
        "replace": (
            f"was replaced with a {substitute}",
            f"Replace the {name} in {where} with a {substitute} of similar size and lighting; change nothing else.",
        ),
        "move": (
            f"was moved to the {_side(ctx, near_box)} side of the {near_name}",
            f"Move the {name} in {where} a short distance to the {_side(ctx, near_box)} side of the {near_name}; fill its old place with the background and change nothing else.",
        ),
    }
    c, instruction = changes[etype]
    wrong = [t for t in ("replace", "move", "add", "delete") if t != etype]
    c_prime = changes[pick(wrong, cid + ":cprime")][0]
    if c_prime == c:
        c_prime = "was turned upside down"
    b_prime = far["name"]
    a_prime = (
        f"the area around the {b_prime} in the {region_words(far['box'], ctx['width'], ctx['height'])} of the image"
    )
    a = f"the {region} part of the image"
    others = [n for n in names if n != b_prime][:3] or names[:3]
    while len(others) < 3:
        others.append(names[len(others)])
    return {
        "edit_type": etype,
        "instruction": instruction,
        "A": a,
        "B": name,
        "C": c,
        "A_prime": a_prime,
        "B_prime": b_prime,
        "C_prime": c_prime,
        "overall_distractors": [
            f"The {n} in the {region_words(far['box'], ctx['width'], ctx['height'])} of the image {ch}."
            for n, ch in zip(others, OTHER_CHANGES)
        ],
        "location_distractors": [
            f"The {name} at {a} changed colour.",
            f"The {name} at {a} was turned upside down.",
            f"Something next to the {name} at {a} was removed.",
        ],
        **_trace_distractors(ctx, a_prime, b_prime, others),
    }


def _trace_distractors(ctx: dict[str, object], a_prime: str, b_prime: str, others: list[str]) -> dict[str, object]:
    """The wrong options every AT plan shares: other objects by place, other fates of B' and A'."""
    return {
        "object_location_distractors": [f"the {n} at the {_region_of(ctx, n)} of the image" for n in others],
        "b_prime_distractors": [
            f"The {b_prime} changed colour.",
            f"The {b_prime} was moved slightly.",
            f"The {b_prime} was removed.",
        ],
        "a_prime_distractors": [
            f"An object was added at {a_prime}.",
            f"An object at {a_prime} was removed.",
            f"An object at {a_prime} changed colour.",
        ],
        "c_prime_objects": others,
    }


def _free_slot(ctx: dict[str, object], key: str) -> tuple[str, list[float]] | None:
    """(side, box) of a place right or left of the target, inside the image, touching no annotated
    object: where a clone can go without hiding anything the questions talk about."""
    x, y, bw, bh = ctx["target_box"]
    gap = max(4.0, 0.15 * max(bw, bh))
    sides = [("right", [x + bw + gap, y, bw, bh]), ("left", [x - bw - gap, y, bw, bh])]
    if int(sha256_hex(key), 16) % 2:
        sides.reverse()
    boxes = [o["box"] for o in ctx["objects"] if o.get("box")] + [ctx["target_box"]]
    for side, cand in sides:
        if cand[0] < 2 or cand[1] < 2 or cand[0] + cand[2] > ctx["width"] - 2 or cand[1] + cand[3] > ctx["height"] - 2:
            continue
        if not any(intersects(grown(cand, 3), b) for b in boxes):
            return side, [round(v, 1) for v in cand]
    return None


def _in_place(location: str | None) -> str:
    """The words that say where a donor object is ("in the upper left part ..."), or none."""
    return f" in {location}" if location else ""


def _donor(ctx: dict[str, object], key: str) -> dict[str, object] | None:
    """Another annotated object (other class, similar size, clear of the target) to replace it with."""
    tb = ctx["target_box"]
    name = ctx["target_name"]
    pool = []
    for o in ctx["objects"]:
        b = o.get("box")
        if not b or o["name"] == name or b[2] < 6 or b[3] < 6 or intersects(grown(b, 4), tb):
            continue
        ratio = (b[2] * b[3]) / max(1.0, tb[2] * tb[3])
        if (
            0.4 <= ratio <= 2.5
            and sum(1 for p in ctx["objects"] if p.get("box") and p is not o and intersects(p["box"], b)) == 0
        ):
            pool.append(o)
    pool.sort(key=lambda o: sha256_hex(f"{key}\x1f{o['name']}\x1f{o['box']}"))
    return pool[0] if pool else None


OTHER_CHANGES = (  # the overall distractors: changes said of objects left alone
    "was turned around to face the other way",
    "changed its colour to a darker shade",
    "had a second copy placed beside it",
)
WRONG_CHANGES: dict[str, list[str]] = {  # per edit type: changes that did not happen
    "delete": [
        "was replaced with a differently shaped one",
        "was moved a short distance to the left",
        "had a new identical copy added to its right",
    ],
    "add": [
        "was replaced with a differently shaped one",
        "was moved a short distance to the left",
        "was removed from the scene",
    ],
    "replace": ["was moved a short distance to the left", "had a new identical copy added to its right"],
    "move": ["was replaced with a differently shaped one", "had a new identical copy added to its right"],
}


def _at_renderable(ctx: dict[str, object], limits: dict[str, object]) -> dict[str, object] | None:
    """AT for editors that clone and inpaint: the edit type the configured editors can do, a clone
    destination that is free and named in the instruction, a replacement by another annotated
    object (``replacement`` + ``donor_box``), and control objects clear of every changed place."""
    name, cid = ctx["target_name"], str(ctx["candidate_id"])
    w, h = ctx["width"], ctx["height"]
    plan = _at_plan(ctx, limits)
    if plan is None:
        return None
    changed = [grown(b, 15) for b in plan.pop("changed")]
    names = [n for n in ctx["object_names"] if n != name]
    far = _control_object(ctx, changed, tuple(n for n in [plan.get("replacement")] if n))
    if far is None or len(names) < 4:
        return None
    region = region_words(ctx["target_box"], w, h)
    etype = plan["edit_type"]
    c_prime = pick(WRONG_CHANGES[etype], cid + ":cprime")
    b_prime = far["name"]
    far_region = region_words(far["box"], w, h)
    a_prime = f"the area around the {b_prime} in the {far_region} of the image"
    a = f"the {region} part of the image"
    others = [n for n in names if n != b_prime and n != plan.get("replacement")][:3]
    if len(others) < 3:
        return None
    return {
        **plan,
        "A": a,
        "B": name,
        "A_prime": a_prime,
        "B_prime": b_prime,
        "C_prime": c_prime,
        "overall_distractors": [
            f"The {n} in the {_region_of(ctx, n)} of the image {ch}." for n, ch in zip(others, OTHER_CHANGES)
        ],
        "location_distractors": [
            f"The {name} at {a} changed colour.",
            f"The {name} at {a} was turned upside down.",
            f"The {name} at {a} grew twice as large.",
        ],
        **_trace_distractors(ctx, a_prime, b_prime, others),
    }


def _at_plan(ctx: dict[str, object], limits: dict[str, object]) -> dict[str, object] | None:
    """The first edit type of the assigned one and its fallbacks that the configured editors can
    draw here, with its instruction and the boxes it changes; None when none can."""
    kinds = set(limits.get("kinds") or ())
    clone = bool(limits.get("clone_from_image"))
    name, cid, where = ctx["target_name"], str(ctx["candidate_id"]), ctx["target_location"]
    plan: dict[str, object] | None = None
    for t in [ctx.get("assigned_edit_type"), *ctx.get("fallback_chain", [])]:
        if t == "delete" and "remove" in kinds and ctx.get("same_instance_count", 1) >= 2:
            plan = {
                "edit_type": "delete",
                "C": "was removed from the scene",
                "instruction": f"Remove the {name} in {where}; fill the gap with the surrounding background and change nothing else.",
                "changed": [ctx["target_box"]],
            }
        elif t in ("add", "move") and t in kinds and clone:
            slot = _free_slot(ctx, cid + ":slot")
            if slot is None:
                continue
            side, dest = slot
            if t == "add":
                plan = {
                    "edit_type": "add",
                    "C": f"had a new identical copy added to its {side}",
                    "destination_box": dest,
                    "instruction": f"Add one more {name} right next to the {name} in {where}, on its {side} side; change nothing else.",
                    "changed": [ctx["target_box"], dest],
                }
            else:
                plan = {
                    "edit_type": "move",
                    "C": f"was moved a short distance to the {side}",
                    "destination_box": dest,
                    "instruction": f"Move the {name} in {where} a short distance to the {side}; fill its old place with the background and change nothing else.",
                    "changed": [ctx["target_box"], dest],
                }
        elif t == "replace" and "replace" in kinds and clone:
            donor = _donor(ctx, cid + ":donor")
            if donor is None:
                continue
            plan = {
                "edit_type": "replace",
                "C": f"was replaced with {_with_a(donor['name'])}",
                "replacement": donor["name"],
                "donor_box": list(donor["box"]),
                "instruction": f"Replace the {name} in {where} with a copy of the {donor['name']}{_in_place(donor.get('location'))}, scaled to fit; change nothing else.",
                "changed": [ctx["target_box"]],
            }
        if plan is not None:
            break
    return plan


def _with_a(name: str) -> str:
    return ("an " if name[:1].lower() in "aeiou" else "a ") + name


def _region_of(ctx: dict[str, object], name: str) -> str:
    for o in ctx["objects"]:
        if o["name"] == name and o.get("box"):
            return region_words(o["box"], ctx["width"], ctx["height"])
    return "centre"
