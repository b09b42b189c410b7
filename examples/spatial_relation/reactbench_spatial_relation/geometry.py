"""Spatial predicates: the canonical relations, how annotators' wordings map onto them, and what
each one means for two ``[x, y, w, h]`` boxes in the picture plane.

Everything here is plain geometry on annotation boxes, so the miner (choosing where a moved
object goes), the question slots (what holds after the move) and the audit (what the drawn
truth shows after the move) decide a relation with the same rule.
"""

from __future__ import annotations

from collections.abc import Sequence

from tasks.plugin_api import intersection, intersects

Box = Sequence[float]

# Canonical relations, written the way a question uses them after "is the cup ...".
PHRASES: dict[str, str] = {
    "on": "on",
    "under": "under",
    "above": "above",
    "below": "below",
    "in": "in",
    "left of": "to the left of",
    "right of": "to the right of",
    "in front of": "in front of",
    "behind": "behind",
    "next to": "next to",
}

# Annotators' wordings (after the core's predicate clean-up: lower case, single spaces) -> canonical.
# Verbs that name an action or a part ("has", "of", "riding", "attached to", "growing in") are not
# spatial statements about where one thing is relative to another, so they are left out.
WORDINGS: dict[str, str] = {
    "on": "on",
    "on top of": "on",
    "sitting on": "on",
    "standing on": "on",
    "lying on": "on",
    "laying on": "on",
    "resting on": "on",
    "placed on": "on",
    "parked on": "on",
    "atop": "on",
    "upon": "on",
    "sitting on top of": "on",
    "under": "under",
    "underneath": "under",
    "beneath": "under",
    "sitting under": "under",
    "above": "above",
    "over": "above",
    "hanging above": "above",
    "hanging over": "above",
    "flying above": "above",
    "below": "below",
    "down from": "below",
    "in": "in",
    "inside": "in",
    "inside of": "in",
    "within": "in",
    "in middle of": "in",
    "in the middle of": "in",
    "left of": "left of",
    "to left of": "left of",
    "to the left of": "left of",
    "on left side of": "left of",
    "on the left of": "left of",
    "right of": "right of",
    "to right of": "right of",
    "to the right of": "right of",
    "on right side of": "right of",
    "on the right of": "right of",
    "in front of": "in front of",
    "front of": "in front of",
    "infront of": "in front of",
    "behind": "behind",
    "in back of": "behind",
    "back of": "behind",
    "next to": "next to",
    "beside": "next to",
    "near": "next to",
    "by": "next to",
    "close to": "next to",
    "alongside": "next to",
    "adjacent to": "next to",
    "besides": "next to",
}

# "B under A" says "A on B" seen from the other end; "in" has no inverse among the predicates.
INVERSE: dict[str, str] = {
    "on": "under",
    "under": "on",
    "above": "below",
    "below": "above",
    "left of": "right of",
    "right of": "left of",
    "in front of": "behind",
    "behind": "in front of",
    "next to": "next to",
}

# The form a pair's relation is stated in: its subject is the object that moves.
PRIMARY = ("on", "above", "in", "left of", "in front of", "next to")

# Where a moved object may go relative to the other one, and the relation that then holds.
SIDES: dict[str, str] = {"left": "left of", "right": "right of", "below": "below", "above": "above"}


def canonical(predicate: str) -> str | None:
    """The canonical spatial relation of a cleaned predicate, or ``None`` (not spatial)."""
    words = " ".join(str(predicate).lower().replace("_", " ").split())
    return WORDINGS.get(words)


def primary_form(relation: str, subject: int, obj: int) -> tuple[str, int, int]:
    """(relation, subject, object) stated in the primary form: "table under cup" -> "cup on table"."""
    if relation in PRIMARY:
        return relation, subject, obj
    inverse = INVERSE.get(relation)
    if inverse in PRIMARY:
        return inverse, obj, subject
    return relation, subject, obj


def phrase(relation: str) -> str:
    return PHRASES.get(relation, relation)


def _edges(b: Box) -> tuple[float, float, float, float]:
    x, y, w, h = (float(v) for v in b[:4])
    return x, y, x + w, y + h


def holds(relation: str, s: Box, o: Box, tolerance: float = 4.0) -> bool:
    """Whether the picture shows ``s`` (subject box) ``relation`` ``o`` (object box), approximately.

    In the picture plane: "on" = resting on or overlapping the top part of the other box;
    "in" = mostly inside it; "above"/"below"/"left of"/"right of" = beyond the facing edge while
    overlapping in the other axis; "in front of"/"behind" = the boxes overlap (occlusion);
    "next to" = close, with no overlap. Two boxes that are apart with a clear gap satisfy none
    of on, under, in, in front of, behind."""
    sx0, sy0, sx1, sy1 = _edges(s)
    ox0, oy0, ox1, oy1 = _edges(o)
    x_overlap = min(sx1, ox1) - max(sx0, ox0)
    y_overlap = min(sy1, oy1) - max(sy0, oy0)
    area = max(1e-9, (sx1 - sx0) * (sy1 - sy0))
    if relation == "on":
        return x_overlap > 0 and sy1 >= oy0 - tolerance and sy0 < oy0 + (oy1 - oy0) / 2
    if relation == "under":
        return x_overlap > 0 and sy0 <= oy1 + tolerance and sy1 > oy0 + (oy1 - oy0) / 2
    if relation == "in":
        return intersection(s, o) / area >= 0.6
    if relation in ("in front of", "behind"):
        return intersects(s, o)
    if relation == "next to":
        gap = max(max(ox0 - sx1, sx0 - ox1), max(oy0 - sy1, sy0 - oy1))
        return not intersects(s, o) and gap <= max(sx1 - sx0, sy1 - sy0)
    if relation == "above":
        return sy1 <= oy0 + tolerance and x_overlap > 0
    if relation == "below":
        return sy0 >= oy1 - tolerance and x_overlap > 0
    if relation == "left of":
        return sx1 <= ox0 + tolerance and y_overlap > 0
    if relation == "right of":
        return sx0 >= ox1 - tolerance and y_overlap > 0
    raise ValueError(f"unknown spatial relation {relation!r}; known: {sorted(PHRASES)}")


def side_of(s: Box, o: Box, gap: float) -> str | None:
    """The one relation of :data:`SIDES` that holds for ``s`` relative to ``o`` with at least
    ``gap`` pixels of clearance (the boxes apart, overlapping in the other axis), else ``None``."""
    sx0, sy0, sx1, sy1 = _edges(s)
    ox0, oy0, ox1, oy1 = _edges(o)
    found = []
    if min(sy1, oy1) - max(sy0, oy0) > 0:
        if ox0 - sx1 >= gap:
            found.append("left of")
        if sx0 - ox1 >= gap:
            found.append("right of")
    if min(sx1, ox1) - max(sx0, ox0) > 0:
        if oy0 - sy1 >= gap:
            found.append("above")
        if sy0 - oy1 >= gap:
            found.append("below")
    return found[0] if len(found) == 1 else None


def place(side: str, s: Box, o: Box, gap: float) -> list[float]:
    """``s``'s box moved to ``side`` of ``o`` with ``gap`` pixels between them; along the other
    axis it keeps its own position as far as it can while still overlapping ``o`` there."""
    sx, sy, w, h = (float(v) for v in s[:4])
    ox, oy, ow, oh = (float(v) for v in o[:4])
    along_y = min(max(sy, oy), oy + oh - min(h, oh))
    along_x = min(max(sx, ox), ox + ow - min(w, ow))
    if side == "left":
        return [ox - gap - w, along_y, w, h]
    if side == "right":
        return [ox + ow + gap, along_y, w, h]
    if side == "below":
        return [along_x, oy + oh + gap, w, h]
    if side == "above":
        return [along_x, oy - gap - h, w, h]
    raise ValueError(f"unknown side {side!r}; known: {sorted(SIDES)}")


def destination(
    relation: str,
    s: Box,
    o: Box,
    others: list[Box],
    width: int,
    height: int,
    gap: float,
    max_overlap: float,
    sides: Sequence[str],
) -> tuple[list[float], str] | None:
    """Where to move ``s`` so that ``relation`` no longer holds: the first of ``sides`` whose place
    lies inside the image, clear of ``s``'s own box and of ``o``, covers at most ``max_overlap`` of
    any other annotated box (nor is covered by it), and leaves exactly one side relation true.
    Returns (box, the relation that then holds) or ``None``."""
    if relation == "next to":  # "next to" still holds a short way off: go further
        gap = max(gap, 1.5 * max(float(s[2]), float(s[3])))
    for side in sides:
        box = [round(v, 1) for v in place(side, s, o, gap)]
        x, y, w, h = box
        if x < 1 or y < 1 or x + w > width - 1 or y + h > height - 1:
            continue
        if intersects(box, s) or intersects(box, o):
            continue
        if any(intersection(box, b) > max_overlap * min(w * h, float(b[2]) * float(b[3])) for b in others):
            continue
        now = side_of(box, o, gap * 0.5)
        if now != SIDES[side] or holds(relation, box, o):
            continue
        return box, now
    return None
