"""Box and mask geometry shared by the editors and auto-QC (pure numpy / OpenCV, no models)."""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np

from editors.base import Box
from storage.annotation.boxes import clip_box
from storage.annotation.coverage import box_mask

__all__ = ["box_mask", "clip_box"]  # re-exported: the editors' geometry in one import


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


FLAT_STD = 2.0  # grey levels: a box whose pixels vary less holds nothing GrabCut could separate
GRABCUT_MAX_SIDE = 320  # GrabCut runs on a crop around the box, downscaled to at most this side
GRABCUT_MARGIN = 0.25  # of the box size, at least 8 px: the background GrabCut learns from


def is_flat(region: np.ndarray, max_std: float = FLAT_STD) -> bool:
    """True when no channel of ``region`` varies by more than ``max_std`` grey levels."""
    pixels = region.reshape(-1, region.shape[-1] if region.ndim == 3 else 1).astype(np.float32)
    return bool(pixels.size == 0 or float(pixels.std(axis=0).max()) < max_std)


def grabcut_mask(image: np.ndarray, box: Sequence[float], seed: int, iterations: int = 4) -> np.ndarray | None:
    """Foreground pixels inside ``box`` by GrabCut (seeded, so deterministic); None when it fails.

    Visual Genome gives boxes, not masks; GrabCut separates the object from the box corners
    well enough for recolouring and cut-and-paste. Its cost is bounded here: a flat box (a
    wall, overcast sky, a grey placeholder image: GrabCut took 78 s on a uniform 800x600 image)
    is refused at once, GrabCut sees only a crop around the box downscaled to
    ``GRABCUT_MAX_SIDE``, and the iterations stop when the item's time budget is spent.
    """
    from editors.budget import check_deadline

    h, w = image.shape[:2]
    x0, y0, x1, y1 = clip_box(box, w, h)
    if (x1 - x0) < 4 or (y1 - y0) < 4 or (x0 == 0 and y0 == 0 and x1 == w and y1 == h):
        return None
    if is_flat(image[y0:y1, x0:x1]):
        return None
    mx, my = max(8, int((x1 - x0) * GRABCUT_MARGIN)), max(8, int((y1 - y0) * GRABCUT_MARGIN))
    cx0, cy0, cx1, cy1 = max(0, x0 - mx), max(0, y0 - my), min(w, x1 + mx), min(h, y1 + my)
    crop = np.ascontiguousarray(image[cy0:cy1, cx0:cx1, ::-1])  # BGR for OpenCV
    scale = min(1.0, GRABCUT_MAX_SIDE / max(crop.shape[:2]))
    if scale < 1.0:
        crop = cv2.resize(
            crop,
            (max(1, round(crop.shape[1] * scale)), max(1, round(crop.shape[0] * scale))),
            interpolation=cv2.INTER_AREA,
        )
    rx0, ry0 = int((x0 - cx0) * scale), int((y0 - cy0) * scale)
    rx1, ry1 = (
        min(crop.shape[1], max(rx0 + 2, round((x1 - cx0) * scale))),
        min(crop.shape[0], max(ry0 + 2, round((y1 - cy0) * scale))),
    )
    if rx0 == 0 and ry0 == 0 and rx1 == crop.shape[1] and ry1 == crop.shape[0]:
        return None  # the box fills the crop: no background to learn from
    cv2.setRNGSeed(int(seed) % (2**31))
    gc = np.zeros(crop.shape[:2], np.uint8)
    bgd, fgd = np.zeros((1, 65), np.float64), np.zeros((1, 65), np.float64)
    try:
        for it in range(max(1, iterations)):
            check_deadline("GrabCut")
            mode = cv2.GC_INIT_WITH_RECT if it == 0 else cv2.GC_EVAL
            cv2.grabCut(crop, gc, (rx0, ry0, rx1 - rx0, ry1 - ry0), bgd, fgd, 1, mode)
    except cv2.error:
        return None
    fg_small = ((gc == cv2.GC_FGD) | (gc == cv2.GC_PR_FGD)).astype(np.uint8)
    if scale < 1.0:
        fg_small = cv2.resize(fg_small, (cx1 - cx0, cy1 - cy0), interpolation=cv2.INTER_NEAREST)
    fg = np.zeros((h, w), dtype=bool)
    fg[cy0:cy1, cx0:cx1] = fg_small.astype(bool)
    fg[:y0, :] = False
    fg[y1:, :] = False
    fg[:, :x0] = False
    fg[:, x1:] = False
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


def object_mask(
    image: np.ndarray, box: Sequence[float], seed: int, given: np.ndarray | None = None, method: str = "grabcut"
) -> tuple[np.ndarray, str]:
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
