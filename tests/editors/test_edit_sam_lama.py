"""sam-lama with a tiny SAM through segment-anything's builder and a tiny LaMa TorchScript via LAMA_MODEL."""

from __future__ import annotations

import numpy as np
import pytest
from edit_helpers import make_request

from editors.base import EditFailure, EditResult
from editors.masks import dilate
from editors.runtime import run_batch
from editors.sam_lama import SamLamaEditor, pad_to_modulo
from editors.weights import WeightsNotFound


@pytest.fixture(scope="module")
def editor(tiny_sam, tiny_lama, monkeypatch_module):
    ckpt, arch = tiny_sam
    monkeypatch_module.setenv("LAMA_MODEL", str(tiny_lama))
    ed = SamLamaEditor({"sam_checkpoint": str(ckpt), "sam_model_type": arch, "device": "cpu"})
    ed.ensure_loaded()
    return ed


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def test_removal_uses_the_best_sam_mask_dilated_and_changes_only_inside(editor, scene_objects):
    obj = scene_objects[0]
    req = make_request(obj, "remove", "remove it", with_mask=False)
    res = editor.edit_batch([req])[0]
    assert isinstance(res, EditResult) and res.image.shape == req.image.shape
    # the mask is SAM's best-scored multimask answer to the box, dilated by 15 px
    x, y, w, h = obj["box"]
    editor.predictor.set_image(req.image)
    masks, scores, _ = editor.predictor.predict(
        box=np.array([x, y, x + w - 1, y + h - 1], np.float32), multimask_output=True
    )
    best = masks[int(np.argmax(scores))]
    assert res.meta["mask_source"] in ("sam", "box_fallback")
    if res.meta["mask_source"] == "sam":
        assert res.meta["sam_choice"] == int(np.argmax(scores))
        assert np.array_equal(res.mask, dilate(best, 15))
    # composite: not one pixel outside the mask changed
    assert np.array_equal(res.image[~res.mask], req.image[~res.mask])
    assert np.abs(res.image[res.mask].astype(int) - req.image[res.mask].astype(int)).mean() > 1


def test_lama_contract_is_padded_and_cropped_back(editor):
    img = np.random.default_rng(1).integers(0, 255, (37, 53, 3), dtype=np.uint8)
    assert pad_to_modulo(img, 8).shape == (40, 56, 3)
    mask = np.zeros((37, 53), bool)
    mask[10:20, 10:30] = True
    out = editor.inpaint(img, mask)
    assert out.shape == img.shape and out.dtype == np.uint8
    assert np.abs(out[~mask].astype(int) - img[~mask].astype(int)).max() <= 1  # the tiny LaMa keeps unmasked pixels


def test_only_removal_is_supported(editor, scene_objects):
    out = run_batch(editor, [make_request(scene_objects[0], "attribute", "make it blue")])
    assert isinstance(out[0], EditFailure) and out[0].reason == "unsupported_edit_type"


def test_box_only_mode_needs_no_sam(tiny_lama, scene_objects):
    ed = SamLamaEditor({"use_sam": False, "lama_model": str(tiny_lama), "dilation_px": 4})
    res = ed.edit_batch([make_request(scene_objects[1], "remove", "x", with_mask=False)])[0]
    assert res.meta["mask_source"] == "box"


def test_missing_lama_model_says_where_to_get_it(monkeypatch, tiny_sam):
    monkeypatch.delenv("LAMA_MODEL", raising=False)
    with pytest.raises(WeightsNotFound, match="LAMA_MODEL.*big-lama.pt"):
        SamLamaEditor({"sam_checkpoint": str(tiny_sam[0])}).ensure_loaded()
    monkeypatch.setenv("LAMA_MODEL", "/nowhere/big-lama.pt")
    with pytest.raises(WeightsNotFound, match="/nowhere/big-lama.pt"):
        SamLamaEditor({"sam_checkpoint": str(tiny_sam[0])}).ensure_loaded()


def test_composite_keeps_every_pixel_outside_a_small_sam_mask(tiny_sam, tiny_models, scene_objects):
    """With a LaMa that repaints the whole frame and a SAM mask that leaves most of the image
    outside, only the editor's composite step keeps the outside pixels (this test fails when
    the composite is removed)."""
    from tiny_checkpoints import build_tiny_lama

    lama = build_tiny_lama(tiny_models / "lama-no-composite.pt", composite=False)
    ed = SamLamaEditor(
        {
            "sam_checkpoint": str(tiny_sam[0]),
            "sam_model_type": tiny_sam[1],
            "lama_model": str(lama),
            "device": "cpu",
            "dilation_px": 3,
        }
    )
    ed.ensure_loaded()
    obj = scene_objects[2]
    req = make_request(obj, "remove", "remove it", with_mask=False)
    # The random tiny SAM's logits cover the frame at SAM's default threshold 0; raising the
    # model's own mask_threshold to the 99th percentile of its best mask keeps ~1% of the pixels.
    x, y, w, h = obj["box"]
    ed.predictor.set_image(req.image)
    logits, scores, _ = ed.predictor.predict(
        box=np.array([x, y, x + w - 1, y + h - 1], np.float32), multimask_output=True, return_logits=True
    )
    ed.predictor.model.mask_threshold = float(np.quantile(logits[int(np.argmax(scores))], 0.99))
    res = ed.edit_batch([req])[0]
    assert isinstance(res, EditResult) and res.meta["mask_source"] == "sam"
    outside = ~res.mask
    assert outside.mean() > 0.5  # most of the image is outside the dilated SAM mask
    raw = ed.inpaint(req.image, res.mask)
    assert (
        np.abs(raw[outside].astype(int) - req.image[outside].astype(int)).mean() > 5
    )  # this LaMa changes the outside
    assert np.array_equal(res.image[outside], req.image[outside])  # the composite put every outside pixel back
    assert np.array_equal(res.image[res.mask], raw[res.mask])
