"""Rules answers for the instruct prompts: what a careful annotator could say from annotations alone.

Choices that need variety (CA directions and values, AT substitutes) are drawn by hashing the
candidate id, so answers are deterministic and independent of processing order. The word lists
are ``prompts/vocabulary.py``. Each task's spec names its answer (the ``instruct_rules`` hook), which
``prompts.rules.builtin_rules`` reads.
"""

from __future__ import annotations

import math
from typing import Any

from prompts.locations import box_center, region_words
from prompts.rules_api import rules_answer
from prompts.vocabulary import CA_VALUES, MADE_DIRECTIONS, NATURAL_DIRECTIONS, NATURAL_HINTS, SUBSTITUTES
from storage.boxes import grown, intersects
from storage.colours import COUNTER_COLOURS, colour_word, colours_apart
from storage.hashing import sha256_hex
from storage.names import same_class


def _pick(seq: tuple[str, ...] | list[str], key: str) -> str:
    return seq[int(sha256_hex(key), 16) % len(seq)]


def _natural(name: str) -> bool:
    return any(h in name.lower() for h in NATURAL_HINTS)


def _protect(neighbours: list[str]) -> str:
    names = [n for n in neighbours if n][:3]
    if not names:
        return "Preserve all surrounding objects in the image unchanged; do not alter the background of the image."
    listed = ", ".join(f"the {n}" for n in names)
    return f"Preserve {listed}, and other surrounding objects in the image unchanged; do not alter the background of the image."


def _which(ctx: dict[str, Any]) -> str:
    """The target as a phrase that singles it out when several instances exist."""
    return f"the {ctx['target_name']} in {ctx['target_location']}"


@rules_answer("re_instruction")
def re_instruction(ctx: dict[str, Any]) -> dict[str, Any] | None:
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


@rules_answer("ca_instructions")
def ca_instructions(ctx: dict[str, Any]) -> dict[str, Any] | None:
    if not ctx.get("target_box") or not ctx.get("attribute"):
        return None
    area = ctx.get("target_area") or 0.0
    if area < 0.01 or area > 0.85:
        return None
    name, cid, original = ctx["target_name"], str(ctx["candidate_id"]), str(ctx["attribute"]).lower()
    limits = ctx.get("editor_limits") or {}
    if limits.get("limited"):
        return _ca_renderable(ctx, limits)
    order = list(NATURAL_DIRECTIONS if _natural(name) else MADE_DIRECTIONS)
    first = _pick(order[:3], cid + ":d1")
    second = _pick([d for d in order if d != first][:4], cid + ":d2")
    out: dict[str, Any] = {}
    for slot, direction in (("a", first), ("b", second)):
        values = [v for v in CA_VALUES[direction] if original not in v and v not in original]
        value = _pick(values, f"{cid}:{slot}")
        out[f"direction_{slot}"] = direction
        out[f"new_attribute_{slot}"] = value
        out[f"instruction_{slot}"] = f"{_ca_sentence(direction, name, ctx['target_location'], value)} {_protect(ctx['neighbour_names'])}"
    return out


def _ca_renderable(ctx: dict[str, Any], limits: dict[str, Any]) -> dict[str, Any] | None:
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
    first = _pick(pool, cid + ":c1")
    second = _pick([c for c in pool if colours_apart(c, first)], cid + ":c2")
    out: dict[str, Any] = {}
    for slot, value in (("a", first), ("b", second)):
        out[f"direction_{slot}"] = "colour"
        out[f"new_attribute_{slot}"] = value
        out[f"instruction_{slot}"] = f"{_ca_sentence('colour', name, ctx['target_location'], value)} {_protect(ctx['neighbour_names'])}"
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


# ---------------------------------------------------------------------------- AT
def _control_object(ctx: dict[str, Any], changed: list[list[float]], also_changed: tuple[str, ...] = ()) -> dict[str, Any] | None:
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
    return max(clear, key=lambda o: (math.hypot(box_center(o["box"])[0] - cx, box_center(o["box"])[1] - cy), o["name"]))


def _chosen_type(ctx: dict[str, Any]) -> str | None:
    for t in [ctx.get("assigned_edit_type"), *ctx.get("fallback_chain", [])]:
        if t == "delete" and ctx.get("same_instance_count", 1) < 2:
            continue
        if t == "move" and not ctx.get("neighbour_names"):
            continue
        if t in ("delete", "add", "replace", "move"):
            return t
    return None


def _side(ctx: dict[str, Any], ref_box: list[float]) -> str:
    tx, _ = box_center(ctx["target_box"])
    rx, _ = box_center(ref_box)
    return "left" if rx >= tx else "right"


@rules_answer("at_edit_plan")
def at_edit_plan(ctx: dict[str, Any]) -> dict[str, Any] | None:
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
        "delete": ("was removed from the scene", f"Remove the {name} in {where}; fill the gap with the surrounding background and change nothing else."),
        "add": (
            f"had a new identical copy added to its {_side(ctx, near_box) == 'left' and 'right' or 'left'}",
            f"Add one more {name} right next to the {name} in {where}, resting naturally on the same surface; change nothing else.",
        ),
        "replace": (f"was replaced with a {substitute}", f"Replace the {name} in {where} with a {substitute} of similar size and lighting; change nothing else."),
        "move": (
            f"was moved to the {_side(ctx, near_box)} side of the {near_name}",
            f"Move the {name} in {where} a short distance to the {_side(ctx, near_box)} side of the {near_name}; fill its old place with the background and change nothing else.",
        ),
    }
    c, instruction = changes[etype]
    wrong = [t for t in ("replace", "move", "add", "delete") if t != etype]
    c_prime = changes[_pick(wrong, cid + ":cprime")][0]
    if c_prime == c:
        c_prime = "was turned upside down"
    b_prime = far["name"]
    a_prime = f"the area around the {b_prime} in the {region_words(far['box'], ctx['width'], ctx['height'])} of the image"
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
        "overall_distractors": [f"The {n} in the {region_words(far['box'], ctx['width'], ctx['height'])} of the image {ch}." for n, ch in zip(others, ("was turned around to face the other way", "changed its colour to a darker shade", "had a second copy placed beside it"))],
        "location_distractors": [f"The {name} at {a} changed colour.", f"The {name} at {a} was turned upside down.", f"Something next to the {name} at {a} was removed."],
        **_trace_distractors(ctx, a_prime, b_prime, others),
    }


def _trace_distractors(ctx: dict[str, Any], a_prime: str, b_prime: str, others: list[str]) -> dict[str, Any]:
    """The wrong options every AT plan shares: other objects by place, other fates of B' and A'."""
    return {
        "object_location_distractors": [f"the {n} at the {_region_of(ctx, n)} of the image" for n in others],
        "b_prime_distractors": [f"The {b_prime} changed colour.", f"The {b_prime} was moved slightly.", f"The {b_prime} was removed."],
        "a_prime_distractors": [f"An object was added at {a_prime}.", f"An object at {a_prime} was removed.", f"An object at {a_prime} changed colour."],
        "c_prime_objects": others,
    }


def _free_slot(ctx: dict[str, Any], key: str) -> tuple[str, list[float]] | None:
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


def _donor(ctx: dict[str, Any], key: str) -> dict[str, Any] | None:
    """Another annotated object (other class, similar size, clear of the target) to replace it with."""
    tb = ctx["target_box"]
    name = ctx["target_name"]
    pool = []
    for o in ctx["objects"]:
        b = o.get("box")
        if not b or o["name"] == name or b[2] < 6 or b[3] < 6 or intersects(grown(b, 4), tb):
            continue
        ratio = (b[2] * b[3]) / max(1.0, tb[2] * tb[3])
        if 0.4 <= ratio <= 2.5 and sum(1 for p in ctx["objects"] if p.get("box") and p is not o and intersects(p["box"], b)) == 0:
            pool.append(o)
    pool.sort(key=lambda o: sha256_hex(f"{key}\x1f{o['name']}\x1f{o['box']}"))
    return pool[0] if pool else None


def _at_renderable(ctx: dict[str, Any], limits: dict[str, Any]) -> dict[str, Any] | None:
    """AT for editors that clone and inpaint: the edit type the configured editors can do, a clone
    destination that is free and named in the instruction, a replacement by another annotated
    object (``replacement`` + ``donor_box``), and control objects clear of every changed place."""
    kinds = set(limits.get("kinds") or ())
    clone = bool(limits.get("clone_from_image"))
    name, cid, where = ctx["target_name"], str(ctx["candidate_id"]), ctx["target_location"]
    w, h = ctx["width"], ctx["height"]
    plan: dict[str, Any] | None = None
    for t in [ctx.get("assigned_edit_type"), *ctx.get("fallback_chain", [])]:
        if t == "delete" and "remove" in kinds and ctx.get("same_instance_count", 1) >= 2:
            plan = {"edit_type": "delete", "C": "was removed from the scene",
                    "instruction": f"Remove the {name} in {where}; fill the gap with the surrounding background and change nothing else.",
                    "changed": [ctx["target_box"]]}
        elif t in ("add", "move") and t in kinds and clone:
            slot = _free_slot(ctx, cid + ":slot")
            if slot is None:
                continue
            side, dest = slot
            if t == "add":
                plan = {"edit_type": "add", "C": f"had a new identical copy added to its {side}", "destination_box": dest,
                        "instruction": f"Add one more {name} right next to the {name} in {where}, on its {side} side; change nothing else.",
                        "changed": [ctx["target_box"], dest]}
            else:
                plan = {"edit_type": "move", "C": f"was moved a short distance to the {side}", "destination_box": dest,
                        "instruction": f"Move the {name} in {where} a short distance to the {side}; fill its old place with the background and change nothing else.",
                        "changed": [ctx["target_box"], dest]}
        elif t == "replace" and "replace" in kinds and clone:
            donor = _donor(ctx, cid + ":donor")
            if donor is None:
                continue
            plan = {"edit_type": "replace", "C": f"was replaced with {_with_a(donor['name'])}", "replacement": donor["name"], "donor_box": list(donor["box"]),
                    "instruction": f"Replace the {name} in {where} with a copy of the {donor['name']}{_in_place(donor.get('location'))}, scaled to fit; change nothing else.",
                    "changed": [ctx["target_box"]]}
        if plan is not None:
            break
    if plan is None:
        return None
    changed = [grown(b, 15) for b in plan.pop("changed")]
    names = [n for n in ctx["object_names"] if n != name]
    far = _control_object(ctx, changed, tuple(n for n in [plan.get("replacement")] if n))
    if far is None or len(names) < 4:
        return None
    region = region_words(ctx["target_box"], w, h)
    etype = plan["edit_type"]
    wrong_changes = {
        "delete": ["was replaced with a differently shaped one", "was moved a short distance to the left", "had a new identical copy added to its right"],
        "add": ["was replaced with a differently shaped one", "was moved a short distance to the left", "was removed from the scene"],
        "replace": ["was moved a short distance to the left", "had a new identical copy added to its right"],
        "move": ["was replaced with a differently shaped one", "had a new identical copy added to its right"],
    }[etype]
    c_prime = _pick(wrong_changes, cid + ":cprime")
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
        "overall_distractors": [f"The {n} in the {_region_of(ctx, n)} of the image {ch}." for n, ch in zip(others, ("was turned around to face the other way", "changed its colour to a darker shade", "had a second copy placed beside it"))],
        "location_distractors": [f"The {name} at {a} changed colour.", f"The {name} at {a} was turned upside down.", f"The {name} at {a} grew twice as large."],
        **_trace_distractors(ctx, a_prime, b_prime, others),
    }


def _with_a(name: str) -> str:
    return ("an " if name[:1].lower() in "aeiou" else "a ") + name


def _region_of(ctx: dict[str, Any], name: str) -> str:
    for o in ctx["objects"]:
        if o["name"] == name and o.get("box"):
            return region_words(o["box"], ctx["width"], ctx["height"])
    return "centre"


# ---------------------------------------------------------------------------- DC
@rules_answer("dc_ambiguity")
def dc_ambiguity(ctx: dict[str, Any]) -> dict[str, Any] | None:
    """Crowding as the ambiguity signal: median nearest-neighbour distance over the even spacing."""
    import numpy as np

    pts = np.asarray([[float(p[0]), float(p[1])] for p in ctx.get("points") or []], dtype=np.float64).reshape(-1, 2)
    w, h = ctx["width"], ctx["height"]
    outside = int(np.sum((pts[:, 0] < 0) | (pts[:, 0] > w) | (pts[:, 1] < 0) | (pts[:, 1] > h)))
    if len(pts) < 2:
        severity = "none"
    else:
        nn = np.empty(len(pts))
        for s in range(0, len(pts), 512):  # blocks keep memory flat for thousands of points
            d = np.hypot(pts[s : s + 512, None, 0] - pts[None, :, 0], pts[s : s + 512, None, 1] - pts[None, :, 1])
            d[np.arange(d.shape[0]), np.arange(s, s + d.shape[0])] = np.inf
            nn[s : s + d.shape[0]] = d.min(axis=1)
        spacing = math.sqrt(w * h / len(pts))
        ratio = float(np.sort(nn)[len(nn) // 2]) / max(spacing, 1e-9)
        severity = "none" if ratio >= 0.35 else "mild" if ratio >= 0.2 else "moderate" if ratio >= 0.1 else "severe"
    if outside and severity in ("none", "mild"):
        severity = "moderate"
    return {"has_ambiguity": severity in ("moderate", "severe"), "severity": severity}
