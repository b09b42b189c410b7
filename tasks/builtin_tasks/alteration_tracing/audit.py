"""AT's audit: the performed operation is the planned one and the control object untouched."""

from __future__ import annotations

from typing import Any

from tasks.plugin_api import EditScene, World, basic_name, intersection


def audit_checks(s: EditScene, p: list[str]) -> None:
    """An ``audit_checks`` hook: the performed operation is the planned one, the control untouched."""
    _check_at(s.world, s.target, s.fields, s.meta, s.kind, s.box, p)


def _check_at(
    world: World,
    target: dict[str, Any],
    f: dict[str, Any],
    meta: dict[str, Any],
    kind: str,
    box: list[float],
    p: list[str],
) -> None:
    c = str(f.get("C") or "").lower()
    if kind in ("move", "add"):
        dest = meta.get("destination_box")
        side = "left" if dest and dest[0] < box[0] else "right"
        if side not in c:
            p.append(f"AT: C says {c!r} but the copy went {side}")
    if kind == "replace":
        donor = world.find(meta.get("donor_box"))
        wanted = basic_name(str(f.get("replacement") or ""))
        if donor is None or not wanted or wanted not in c or donor["name"] not in world.classes(wanted):
            p.append(f"AT: C says {c!r} but the clone is a {donor and donor['name']}")
    if kind == "delete" and not world.visible(target["name"]):
        p.append("AT: delete left no other instance of its class (the set needs two)")
    cp = str(f.get("C_prime") or "").lower()
    verbs = {"delete": "removed", "add": "added", "replace": "replaced", "move": "moved"}
    if verbs.get(kind, "?") in cp:
        p.append(f"AT: C_prime {cp!r} describes what happened")
    for o in world.objects.values():
        if o["id"] != target["id"] and o["erased"]:
            p.append(
                f"AT: the edit also erased the {o['name']} ({o['touched']:.0%} of it); the questions name one change"
            )
    bp = f.get("B_prime") or ""
    for o in world.objects.values():
        if o["name"] in world.classes(bp) and o["touched"] > 0:
            p.append(f"AT: the control object {bp} was touched by the edit ({o['touched']:.0%})")
    for a in world.added:
        for o in world.objects.values():
            if o["name"] in world.classes(bp) and a.get("box") and intersection(a["box"], o["box"]) > 0:
                p.append(f"AT: the copy covers the control object {bp}")
