"""Auto-QC after every edit: did the target change, was everything else kept, is the frame intact?

Cheap CPU checks (SPEC section 5). Failing edits are kept with status ``auto_rejected`` and
these metrics, so thresholds can be re-tuned later without re-running any model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import cv2
import numpy as np

from editors.config import QCParams
from editors.masks import box_mask, dilate

PSNR_CAP = 100.0  # identical pixels: PSNR is infinite; capped so metrics stay valid JSON


@dataclass
class QCReport:
    passed: bool
    metrics: dict[str, object]
    failures: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return {"passed": self.passed, "failures": self.failures, "metrics": self.metrics}


def psnr(a: np.ndarray, b: np.ndarray, where: np.ndarray) -> float:
    """PSNR (dB) over the pixels selected by ``where`` (all channels)."""
    if not where.any():
        return PSNR_CAP
    diff = a[where].astype(np.float64) - b[where].astype(np.float64)
    mse = float(np.mean(diff * diff))
    if mse <= 1e-12:
        return PSNR_CAP
    return float(min(PSNR_CAP, 10.0 * np.log10(255.0**2 / mse)))


def ssim_map(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per-pixel SSIM of the luma channels (Gaussian window 11, sigma 1.5; Wang et al. 2004), in float32."""
    ga = cv2.cvtColor(a, cv2.COLOR_RGB2GRAY).astype(np.float32)
    gb = cv2.cvtColor(b, cv2.COLOR_RGB2GRAY).astype(np.float32)
    c1, c2 = (0.01 * 255) ** 2, (0.03 * 255) ** 2
    blur = lambda x: cv2.GaussianBlur(x, (11, 11), 1.5)  # noqa: E731
    mu_a, mu_b = blur(ga), blur(gb)
    var_a = blur(ga * ga) - mu_a * mu_a
    var_b = blur(gb * gb) - mu_b * mu_b
    cov = blur(ga * gb) - mu_a * mu_b
    return ((2 * mu_a * mu_b + c1) * (2 * cov + c2)) / ((mu_a**2 + mu_b**2 + c1) * (var_a + var_b + c2))


def mean_abs_change(a: np.ndarray, b: np.ndarray, where: np.ndarray) -> float:
    if not where.any():
        return 0.0
    return float(np.mean(np.abs(a[where].astype(np.int16) - b[where].astype(np.int16))))


def check_edit(
    original: np.ndarray,
    edited: np.ndarray,
    change_boxes: Sequence[Sequence[float]],
    params: QCParams,
    change_mask: np.ndarray | None = None,
    raw_size: tuple[int, int] | None = None,
) -> QCReport:
    """QC one edit. ``change_boxes``: every region the edit was meant to change (the target box;
    a move's source and destination; an addition's destination); ``change_mask``: the exact
    pixels, when known, measured instead of the boxes; ``raw_size``: (width, height) the editor
    returned before the stage resized it back, for the aspect check."""
    h, w = original.shape[:2]
    metrics: dict[str, object] = {"width": w, "height": h}
    failures: list[str] = []
    if edited.shape != original.shape:
        metrics["edited_shape"] = list(edited.shape)
        return QCReport(False, metrics, ["size_mismatch"])
    if raw_size is not None:
        rw, rh = raw_size
        aspect_change = abs((rw / rh) / (w / h) - 1.0)
        metrics["raw_size"] = [int(rw), int(rh)]
        metrics["aspect_change"] = round(aspect_change, 6)
        if aspect_change > params.max_aspect_change:
            failures.append("aspect_changed")
    region = np.zeros((h, w), dtype=bool)
    for box in change_boxes:
        try:
            region |= box_mask(box, w, h)
        except ValueError:
            continue
    inside = change_mask.astype(bool) if change_mask is not None and change_mask.any() else region
    outside = ~dilate(region | inside, params.dilation_px)
    metrics["change_inside"] = round(mean_abs_change(original, edited, inside), 4)
    metrics["psnr_outside"] = round(psnr(original, edited, outside), 4)
    smap = ssim_map(original, edited)
    metrics["ssim_outside"] = round(float(smap[outside].mean()) if outside.any() else 1.0, 6)
    metrics["outside_fraction"] = round(float(outside.mean()), 6)
    if metrics["change_inside"] < params.min_change_inside:
        failures.append("no_change_inside")
    if metrics["psnr_outside"] < params.min_psnr_outside:
        failures.append("low_psnr_outside")
    if metrics["ssim_outside"] < params.min_ssim_outside:
        failures.append("low_ssim_outside")
    return QCReport(not failures, metrics, failures)
