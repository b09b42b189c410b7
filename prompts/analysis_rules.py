"""The ``rules`` backend's answers to the analysis prompts (``prompts/analysis_prompts.py``).

Offline answers from annotations: deterministic, picked by hashing the edit so runs repeat. The
word lists they draw from are ``prompts/vocabulary.py``. Each task's spec names its answer (the
``analysis_rules`` hook), which ``prompts.rules.builtin_rules`` reads.
"""

from __future__ import annotations

from typing import Any

from prompts.locations import region_words
from prompts.rules_api import rules_answer
from prompts.vocabulary import ABSURD_ATTRIBUTES, ABSURD_OBJECTS, ATTRIBUTE_TYPE_BY_DIRECTION, CA_VALUES, COLOURS, MATERIALS, SPATIAL_PREDICATES
from storage.boxes import overlap
from storage.colours import colour_of, colours_apart
from storage.coverage import cut_names
from storage.hashing import sha256_hex
from storage.names import basic_name


def _norm(text: str) -> str:
    return " ".join(str(text).casefold().split()).strip(" .,;:!?\"'")


def _pick(options: tuple[str, ...] | list[str], key: str, n: int = 1, exclude: set[str] = frozenset()) -> list[str]:
    pool = [o for o in options if _norm(o) not in {_norm(e) for e in exclude}]
    pool.sort(key=lambda o: sha256_hex(f"{key}\x1f{o}"))
    return pool[:n]


def _a(name: str) -> str:
    return ("an " if name[:1].lower() in "aeiou" else "a ") + name


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
    others_same = [o for o in objects if _same(o["name"], removed) and o.get("box") and overlap(o["box"], box) < 0.5]
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
    at_place = {o["name"] for o in objects if not _same(o["name"], removed) and overlap(box, o.get("box")) > 0.05}
    cut = cut_names(ctx.get("cut_objects") or [])  # what the removal took too much of to be named as there
    covering = sorted(n for n in at_place if basic_name(n) not in cut)[:2]
    if at_place and not covering:
        verdict.update(verification_status="fail", verification_issues=f"the removal also cut the {', '.join(sorted(at_place))}", discard=True,
                       discard_reason=f"the removal also cut the {', '.join(sorted(at_place))}: what is left at its place cannot be stated")
    if len(covering) == 2:
        remaining = f"the {covering[0]} and the {covering[1]}, with background around them"
    else:
        remaining = f"the {covering[0]} and the background around it" if covering else "only plain background"
    attrs = [a for o in objects if _same(o["name"], removed) and overlap(o.get("box"), box) >= 0.5 for a in o.get("attributes") or []]
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
    # wrong values from the value lists the instruction used, as long as the right one, so length
    # gives nothing away
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
