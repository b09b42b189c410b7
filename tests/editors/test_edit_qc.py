"""Auto-QC metrics against known answers, and its verdicts."""

from __future__ import annotations

import numpy as np
import pytest

from editors.config import QCParams
from editors.qc import PSNR_CAP, check_edit, psnr, ssim_map


@pytest.fixture(scope="module")
def image() -> np.ndarray:
    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:120, 0:160]
    base = np.stack([xx * 1.2, yy * 1.5, (xx + yy) * 0.6], -1) + rng.normal(0, 6, (120, 160, 3))
    return np.clip(base, 0, 255).astype(np.uint8)


def test_psnr_matches_the_formula(image):
    everywhere = np.ones(image.shape[:2], bool)
    assert psnr(image, image, everywhere) == PSNR_CAP
    shifted = np.clip(image.astype(int) + 5, 0, 255).astype(np.uint8)
    mse = np.mean((shifted.astype(float) - image) ** 2)
    assert psnr(image, shifted, everywhere) == pytest.approx(10 * np.log10(255**2 / mse), rel=1e-9)


def test_ssim_is_one_for_identical_and_drops_with_noise(image):
    assert np.allclose(ssim_map(image, image), 1.0)
    noisy = np.clip(image + np.random.default_rng(1).normal(0, 40, image.shape), 0, 255).astype(np.uint8)
    assert ssim_map(image, noisy).mean() < 0.6


def test_an_edit_inside_the_box_passes(image):
    edited = image.copy()
    edited[40:70, 50:90] = 255 - edited[40:70, 50:90]
    rep = check_edit(image, edited, [[50, 40, 40, 30]], QCParams())
    assert rep.passed, rep
    assert rep.metrics["psnr_outside"] == PSNR_CAP and rep.metrics["change_inside"] > 50


def test_failures_are_named(image):
    params = QCParams()
    assert check_edit(image, image.copy(), [[50, 40, 40, 30]], params).failures == ["no_change_inside"]
    spill = image.copy()
    spill[40:70, 50:90] = 0
    spill[:, :20] = 255 - spill[:, :20]  # a band far from the box changed too
    rep = check_edit(image, spill, [[50, 40, 40, 30]], params)
    assert "low_psnr_outside" in rep.failures and "low_ssim_outside" in rep.failures
    small = image[:100]
    assert check_edit(image, small, [[50, 40, 40, 30]], params).failures == ["size_mismatch"]
    changed = image.copy()
    changed[40:70, 50:90] = 0
    rep = check_edit(image, changed, [[50, 40, 40, 30]], params, raw_size=(200, 100))
    assert rep.failures == ["aspect_changed"] and rep.metrics["aspect_change"] > 0.4


def test_change_just_beside_the_box_is_tolerated_by_the_dilation(image):
    edited = image.copy()
    edited[40:70, 50:100] = 0  # 10 px beyond the box's right edge, inside the 15 px margin
    assert check_edit(image, edited, [[50, 40, 40, 30]], QCParams()).passed
    assert not check_edit(image, edited, [[50, 40, 40, 30]], QCParams(dilation_px=2)).passed
