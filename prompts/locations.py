"""Box -> words: location phrases the rules backend and prompts use instead of coordinates."""

from __future__ import annotations

from collections.abc import Sequence

Box = Sequence[float]  # [x, y, w, h], Visual Genome convention


def box_center(box: Box) -> tuple[float, float]:
    x, y, w, h = (float(v) for v in box[:4])
    return x + w / 2.0, y + h / 2.0


def region_words(box: Box, width: int, height: int) -> str:
    """``"upper left"``, ``"centre"``, ``"lower right"``... from the box centre in thirds of the image."""
    cx, cy = box_center(box)
    col = min(2, max(0, int(3 * cx / max(1, width))))
    row = min(2, max(0, int(3 * cy / max(1, height))))
    vert = ("upper", "middle", "lower")[row]
    horiz = ("left", "centre", "right")[col]
    if vert == "middle" and horiz == "centre":
        return "centre"
    if vert == "middle":
        return f"middle {horiz}"
    if horiz == "centre":
        return f"{vert} middle"
    return f"{vert} {horiz}"


def location_phrase(box: Box, width: int, height: int) -> str:
    """A noun phrase without a leading preposition: ``"the lower left part of the image"``."""
    return f"the {region_words(box, width, height)} part of the image"


def area_fraction(box: Box, width: int, height: int) -> float:
    return max(0.0, float(box[2])) * max(0.0, float(box[3])) / max(1.0, float(width) * float(height))


def distance(a: Box, b: Box) -> float:
    (ax, ay), (bx, by) = box_center(a), box_center(b)
    return ((ax - bx) ** 2 + (ay - by) ** 2) ** 0.5
