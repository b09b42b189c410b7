"""Geometry of ``[x, y, w, h]`` boxes (annotation pixels): the one copy the miners, prompts,
editors and tasks share, so two overlap rules cannot drift apart. Values are not rounded here;
a caller that records a rounded number (the verification report) rounds it itself."""

from __future__ import annotations

import math
from collections.abc import Sequence

Box = Sequence[float]


def intersection(a: Box, b: Box) -> float:
    """Area the two boxes share (0 when they are apart)."""
    ix = max(0.0, min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1]))
    return ix * iy


def iou(a: Box, b: Box) -> float:
    """Intersection over union (0 for two empty boxes)."""
    inter = intersection(a, b)
    union = a[2] * a[3] + b[2] * b[3] - inter
    return inter / union if union > 0 else 0.0


def overlap(a: Box | None, b: Box | None) -> float:
    """The fraction of ``a`` that ``b`` covers (0 when either box is missing)."""
    if not a or not b:
        return 0.0
    return intersection(a, b) / max(1e-9, a[2] * a[3])


def intersects(a: Box, b: Box) -> bool:
    """Whether the boxes share an area (touching edges do not count)."""
    return min(a[0] + a[2], b[0] + b[2]) > max(a[0], b[0]) and min(a[1] + a[3], b[1] + b[3]) > max(a[1], b[1])


def grown(box: Box, px: float) -> list[float]:
    """``box`` with a margin of ``px`` on every side."""
    return [box[0] - px, box[1] - px, box[2] + 2 * px, box[3] + 2 * px]


def clip_box(box: Sequence[float], width: int, height: int) -> tuple[int, int, int, int]:
    """Integer [x0, y0, x1, y1) of a [x, y, w, h] box clipped to the image; empty boxes raise."""
    x, y, w, h = (float(v) for v in box)
    x0, y0 = max(0, math.floor(x)), max(0, math.floor(y))
    x1, y1 = min(width, math.ceil(x + w)), min(height, math.ceil(y + h))
    if x1 <= x0 or y1 <= y0:
        raise ValueError(f"box {list(box)} lies outside the {width}x{height} image or has no area")
    return x0, y0, x1, y1
