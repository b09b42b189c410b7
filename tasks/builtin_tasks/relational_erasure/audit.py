"""RE's audit: every gold answer about the erased object checked against the sample's drawn truth."""

from __future__ import annotations

import re
from typing import Any

from tasks.plugin_api import EditScene, World


def audit_checks(s: EditScene, p: list[str]) -> None:
    """An ``audit_checks`` hook: the erased object's class is gone from its place, what remains is there."""
    _check_re(s.world, s.before, s.target, s.analysis, s.questions, p)


def _check_re(
    world: World,
    before: World,
    target: dict[str, Any],
    a: dict[str, Any],
    questions: list[dict[str, Any]],
    p: list[str],
) -> None:
    name = a.get("B_name") or target["name"]
    left = world.visible(name, target["box"])
    if left:
        p.append(f"RE: a {name} is still visible at the erased place ({[o['box'] for o in left]})")
    rem = str(a.get("remaining_at_A") or "")
    for n in re.findall(r"the ([a-z ]+?)(?= and | with|,|$)", rem):
        if "background" not in n and not world.visible(n.strip()):
            p.append(f"RE: remaining_at_A names the {n.strip()}, which is gone")
    for k in ("absurd_object_1", "absurd_object_2"):
        n = re.sub(r"^(a|an) ", "", str(a.get(k) or ""))
        if n and world.visible(n):
            p.append(f"RE: the absurd object {n!r} is in the picture")
