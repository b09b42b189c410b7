"""Box and mask geometry shared by the editors and auto-QC (pure numpy / OpenCV, no models)."""

from __future__ import annotations

from typing import Sequence

import cv2
import numpy as np

from editors.base import Box


def clip_box(box: Sequence[float], width: int, height: int) -> tuple[int, int, int, int]:
    """Integer [x0, y0, x1, y1) of a [x, y, w, h] box clipped to the image; empty boxes raise."""
    x, y, w, h = (float(v) for v in box)
    x0, y0 = max(0, int(np.floor(x))), max(0, int(np.floor(y)))
    x1, y1 = min(width, int(np.ceil(x + w))), min(height, int(np.ceil(y + h)))
    if x1 <= x0 or y1 <= y0:
        raise ValueError(f"box {list(box)} lies outside the {width}x{height} image or has no area")
    return x0, y0, x1, y1


def box_mask(box: Sequence[float], width: int, height: int) -> np.ndarray:
    x0, y0, x1, y1 = clip_box(box, width, height)
    mask = np.zeros((height, width), dtype=bool)
    mask[y0:y1, x0:x1] = True
    return mask


def dilate(mask: np.ndarray, px: int) -> np.ndarray:
    """Grow a mask by ``px`` pixels (elliptical kernel), as removal margins and QC need."""
    if px <= 0:
        return mask.astype(bool)
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * px + 1, 2 * px + 1))
    return cv2.dilate(mask.astype(np.uint8), kernel).astype(bool)


def mask_box(mask: np.ndarray) -> Box | None:
    """The [x, y, w, h] bounding box of a mask, or None when empty."""
    ys, xs = np.nonzero(mask)
    if len(xs) == 0:
        return None
    return (float(xs.min()), float(ys.min()), float(xs.max() - xs.min() + 1), float(ys.max() - ys.min() + 1))


def grabcut_mask(image: np.ndarray, box: Sequence[float], seed: int, iterations: int = 4) -> np.ndarray | None:
    """Foreground pixels inside ``box`` by GrabCut (seeded, so deterministic); None when it fails.

    Visual Genome gives boxes, not masks; GrabCut separates the object from the box corners
    well enough for recolouring and cut-and-paste.
    """
    h, w = image.shape[:2]
    x0, y0, x1, y1 = clip_box(box, w, h)
    if (x1 - x0) < 4 or (y1 - y0) < 4 or (x0 == 0 and y0 == 0 and x1 == w and y1 == h):
        return None
    cv2.setRNGSeed(int(seed) % (2**31))
    gc = np.zeros((h, w), np.uint8)
    bgd, fgd = np.zeros((1, 65), np.float64), np.zeros((1, 65), np.float64)
    bgr = np.ascontiguousarray(image[:, :, ::-1])
    try:
        cv2.grabCut(bgr, gc, (x0, y0, x1 - x0, y1 - y0), bgd, fgd, iterations, cv2.GC_INIT_WITH_RECT)
    except cv2.error:
        return None
    fg = (gc == cv2.GC_FGD) | (gc == cv2.GC_PR_FGD)
    box_area = (x1 - x0) * (y1 - y0)
    if fg.sum() < 0.05 * box_area:
        return None
    return fg


def ellipse_mask(box: Sequence[float], width: int, height: int) -> np.ndarray:
    """The ellipse inscribed in the box: the fallback object shape when nothing better is known."""
    x0, y0, x1, y1 = clip_box(box, width, height)
    mask = np.zeros((height, width), np.uint8)
    center = ((x0 + x1 - 1) / 2.0, (y0 + y1 - 1) / 2.0)
    axes = (max(1.0, (x1 - x0) / 2.0), max(1.0, (y1 - y0) / 2.0))
    cv2.ellipse(mask, (center, (2 * axes[0], 2 * axes[1]), 0.0), 1, -1)
    return mask.astype(bool)


def object_mask(image: np.ndarray, box: Sequence[float], seed: int, given: np.ndarray | None = None, method: str = "grabcut") -> tuple[np.ndarray, str]:
    """The best mask available for the object in ``box``: given > GrabCut > inscribed ellipse/box."""
    h, w = image.shape[:2]
    if given is not None and given.any():
        return given.astype(bool), "given"
    if method == "grabcut":
        fg = grabcut_mask(image, box, seed)
        if fg is not None:
            return fg, "grabcut"
    if method == "box":
        return box_mask(box, w, h), "box"
    return ellipse_mask(box, w, h), "ellipse"
