"""CA's audit: the gold colours checked against the sample's drawn truth."""

from __future__ import annotations

from typing import Any

from tasks.plugin_api import EditScene, World, colour_of, colours_apart, region_words


def audit_checks(s: EditScene, p: list[str]) -> None:
    """An ``audit_checks`` hook: the object shows the new colour, apart from the original."""
    _check_ca(s.world, s.target, s.analysis, p, s.before)
    if any(q["qid"] == "Q4" and q["qtype"] == "YN" and q["gold"] == "Yes" for q in s.questions):
        # the balancing twin of Q4 says "is <new>, not <absurd>": the absurd one must not be what is shown
        absurd, shown = colour_of(s.analysis.get("absurd_attribute_1") or ""), s.target.get("colour")
        if absurd is not None and shown and not colours_apart(absurd, shown):
            p.append(
                f"CA: Q4 twin: absurd attribute {s.analysis.get('absurd_attribute_1')!r} reads as the shown {shown!r}"
            )


def _check_ca(world: World, target: dict[str, Any], a: dict[str, Any], p: list[str], before: World) -> None:
    new, orig = colour_of(a.get("C_new_attribute") or ""), colour_of(a.get("B_original_attribute") or "")
    shown = target.get("colour")
    if new is None or new != shown:
        p.append(f"CA: gold new colour {a.get('C_new_attribute')!r} but the {target['name']} shows {shown!r}")
    if orig is None or before.objects[target["id"]]["colour"] != orig:
        p.append(
            f"CA: original attribute {a.get('B_original_attribute')!r} is not the drawn colour {before.objects[target['id']]['colour']!r}"
        )
    elif shown and not colours_apart(shown, orig):
        p.append(f"CA: new colour {shown!r} cannot be told from the original {orig!r}")
    for k in ("plausible_wrong_attribute_1", "plausible_wrong_attribute_2"):
        c = colour_of(a.get(k) or "")
        if c and shown and not colours_apart(c, shown):
            p.append(f"CA: wrong option {a.get(k)!r} reads as the shown {shown!r}")
    half = "upper" if target["box"][1] + target["box"][3] / 2 < world.h / 2 else "lower"
    region = region_words(target["box"], world.w, world.h)
    for o in world.objects.values():
        if o["id"] == target["id"] or o["name"] != target["name"] or o["colour"] != orig or o["erased"]:
            continue
        oh = "upper" if o["box"][1] + o["box"][3] / 2 < world.h / 2 else "lower"
        if oh == half or region_words(o["box"], world.w, world.h) == region:
            p.append(f"CA: another {orig} {o['name']} is in the {oh} half / {region} (Q3/Q7/Q11 say there is none)")
