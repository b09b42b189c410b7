"""Classical editors checked objectively on the sample scenes, whose object pixels are known exactly."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from edit_helpers import colour_fraction, make_request

from editors.base import EditFailure, EditResult
from editors.classical import ClassicalEditor
from editors.config import QCParams
from editors.masks import box_mask, dilate
from editors.qc import psnr

SATURATED = {"red", "blue", "green", "yellow", "orange"}


def outside_psnr(before: np.ndarray, after: np.ndarray, boxes: list, px: int = 15) -> float:
    h, w = before.shape[:2]
    region = np.zeros((h, w), bool)
    for b in boxes:
        region |= box_mask(b, w, h)
    return psnr(before, after, ~dilate(region, px))


def distinct(objs: list) -> list:
    """Objects whose colour is rare around them (so "its colour is gone" means it is gone)."""
    out = []
    for o in objs:
        image = make_request(o, "remove", "").image
        ring = dilate(o["mask"], 20) & ~dilate(o["mask"], 4)
        if colour_fraction(image, ring, o["rgb"]) < 0.1:
            out.append(o)
    return out


def mean_hue(image: np.ndarray, mask: np.ndarray) -> float:
    """Circular mean hue in degrees."""
    hsv = cv2.cvtColor(np.ascontiguousarray(image[:, :, ::-1]), cv2.COLOR_BGR2HSV)
    ang = hsv[..., 0][mask].astype(np.float64) * 2 * np.pi / 180.0
    return float(np.degrees(np.arctan2(np.sin(ang).mean(), np.cos(ang).mean())) % 360)


def hue_distance(a: float, b: float) -> float:
    d = abs(a - b) % 360
    return min(d, 360 - d)


@pytest.fixture(scope="module")
def editor() -> ClassicalEditor:
    return ClassicalEditor({})


@pytest.mark.parametrize("with_mask", [True, False], ids=["exact-mask", "box-only"])
def test_removal_erases_the_object_and_keeps_the_rest(editor, scene_objects, with_mask):
    objs = distinct(scene_objects)[:6]
    results = editor.edit_batch(
        [make_request(o, "remove", f"remove the {o['name']}", with_mask=with_mask) for o in objs]
    )
    for obj, res in zip(objs, results):
        assert isinstance(res, EditResult), res
        before = make_request(obj, "remove", "").image
        assert colour_fraction(before, obj["mask"], obj["rgb"]) > 0.7
        # the object's pixels are gone: hardly any pixel of its colour is left where it was
        assert colour_fraction(res.image, obj["mask"], obj["rgb"]) < 0.15, (obj["name"], obj["colour"])
        assert outside_psnr(before, res.image, [obj["box"]]) > 30.0
        assert res.mask is not None and res.mask[obj["mask"]].all()


def test_colour_change_moves_the_hue_inside_the_mask_only(editor, scene_objects):
    objs = [o for o in scene_objects if o["colour"] in SATURATED][:5]
    assert objs
    targets = {"red": "blue", "blue": "yellow", "green": "red", "yellow": "blue", "orange": "blue"}
    for obj in objs:
        new = targets[obj["colour"]]
        req = make_request(
            obj, "attribute", f"make the {obj['colour']} {obj['name']} {new}", original_attribute=obj["colour"]
        )
        res = editor.edit_batch([req])[0]
        assert isinstance(res, EditResult) and res.meta["value"] == new
        core = cv2.erode(obj["mask"].astype(np.uint8), np.ones((5, 5), np.uint8)).astype(bool)
        h_before, h_after = mean_hue(req.image, core), mean_hue(res.image, core)
        assert hue_distance(h_before, h_after) > 40, (obj["colour"], new, h_before, h_after)
        assert outside_psnr(req.image, res.image, [obj["box"]]) > 30.0


def test_colour_change_without_mask_uses_grabcut_and_stays_in_the_box(editor, scene_objects):
    obj = next(o for o in scene_objects if o["colour"] in SATURATED and o["box"][2] >= 20 and o["box"][3] >= 20)
    new = "green" if obj["colour"] != "green" else "red"
    req = make_request(obj, "attribute", f"paint the {obj['name']} {new}", with_mask=False)
    res = editor.edit_batch([req])[0]
    assert isinstance(res, EditResult)
    assert res.meta["mask_source"] in ("grabcut", "ellipse")
    h, w = req.image.shape[:2]
    assert np.array_equal(res.image[~box_mask(obj["box"], w, h)], req.image[~box_mask(obj["box"], w, h)])
    assert hue_distance(mean_hue(req.image, obj["mask"]), mean_hue(res.image, obj["mask"])) > 20


def test_texture_change_adds_a_pattern(editor, scene_objects):
    obj = max(scene_objects, key=lambda o: o["mask"].sum())
    req = make_request(obj, "attribute", f"make the {obj['name']} striped")
    res = editor.edit_batch([req])[0]
    assert isinstance(res, EditResult) and res.meta["operation"] == "pattern"
    grey_before = cv2.cvtColor(req.image, cv2.COLOR_RGB2GRAY)[obj["mask"]].std()
    grey_after = cv2.cvtColor(res.image, cv2.COLOR_RGB2GRAY)[obj["mask"]].std()
    assert grey_after > grey_before + 10


@pytest.mark.parametrize("with_mask", [True, False], ids=["exact-mask", "box-only"])
def test_move_puts_the_object_at_the_destination(editor, scene_objects, with_mask):
    moved = 0
    for obj in [o for o in distinct(scene_objects) if o["box"][2] >= 12 and o["box"][3] >= 12][:5]:
        req = make_request(obj, "move", f"move the {obj['name']}", seed=1, with_mask=with_mask)
        res = editor.edit_batch([req])[0]
        if isinstance(res, EditFailure):
            assert res.reason == "edit_geometry"  # no free slot next to it: a clear refusal
            continue
        dx, dy, dw, dh = res.meta["destination_box"]
        sx, sy = res.meta["source_box"][:2]
        shifted = np.zeros_like(obj["mask"])
        ys, xs = np.nonzero(obj["mask"])
        ys2, xs2 = ys + int(round(dy - sy)), xs + int(round(dx - sx))
        ok = (ys2 >= 0) & (ys2 < shifted.shape[0]) & (xs2 >= 0) & (xs2 < shifted.shape[1])
        shifted[ys2[ok], xs2[ok]] = True
        core = cv2.erode(shifted.astype(np.uint8), np.ones((5, 5), np.uint8)).astype(bool)
        if core.sum() < 20:
            continue
        # found at the target: its colour now fills the shifted mask, and it left its old place
        assert colour_fraction(res.image, core, obj["rgb"]) > 0.6, obj
        vacated = obj["mask"] & ~shifted
        if vacated.sum() > 50:
            assert colour_fraction(res.image, vacated, obj["rgb"]) < 0.3
        moved += 1
    assert moved >= 2


def test_move_honours_a_given_destination(editor, scene_objects):
    obj = next(o for o in scene_objects if o["box"][0] > 60 and o["box"][2] >= 12)
    x, y, w, h = obj["box"]
    dest = [x - 50, y, w, h]
    res = editor.edit_batch([make_request(obj, "move", "move it left", destination_box=dest)])[0]
    assert isinstance(res, EditResult) and res.meta["destination_box"] == dest


def test_add_places_a_copy_and_keeps_the_original(editor, scene_objects):
    obj = next(o for o in scene_objects if o["box"][2] >= 14 and o["box"][3] >= 14)
    req = make_request(obj, "add", f"add another {obj['name']}", seed=2)
    res = editor.edit_batch([req])[0]
    assert isinstance(res, EditResult)
    core = cv2.erode(obj["mask"].astype(np.uint8), np.ones((3, 3), np.uint8)).astype(bool)
    assert colour_fraction(res.image, core, obj["rgb"]) > 0.7  # the original is still there
    h, w = req.image.shape[:2]
    dest = box_mask(res.meta["destination_box"], w, h)
    assert colour_fraction(res.image, dest & res.mask, obj["rgb"]) > 0.5


def _donor_fields(obj, truth) -> dict:
    """replacement + donor_box: another annotated object of the image, clear of the target (classical
    replaces only with an annotated instance of the requested class)."""
    x, y, w, h = obj["box"]
    for oid, o in sorted(truth["images"][obj["image_id"]]["objects"].items()):
        b = o["box"]
        if (
            oid != obj["object_id"]
            and o["name"] != obj["name"]
            and b[2] >= 6
            and b[3] >= 6
            and not (b[0] < x + w and x < b[0] + b[2] and b[1] < y + h and y < b[1] + b[3])
        ):
            return {"replacement": o["name"], "donor_box": list(b), "_context": [{"name": o["name"], "box": list(b)}]}
    raise AssertionError("no donor in the image")


def test_replace_changes_the_object(editor, scene_objects, truth):
    obj = scene_objects[0]
    req = make_request(obj, "replace", f"replace the {obj['name']}", seed=3, **_donor_fields(obj, truth))
    res = editor.edit_batch([req])[0]
    assert isinstance(res, EditResult)
    assert np.abs(res.image[obj["mask"]].astype(int) - req.image[obj["mask"]].astype(int)).mean() > 10


def test_outputs_are_deterministic(editor, scene_objects):
    obj = scene_objects[1]
    for kind in ("remove", "attribute", "move", "replace"):
        a = editor.edit_batch([make_request(obj, kind, "x", seed=5, with_mask=False)])[0]
        b = editor.edit_batch([make_request(obj, kind, "x", seed=5, with_mask=False)])[0]
        assert type(a) is type(b)
        if isinstance(a, EditResult):
            assert a.image.tobytes() == b.image.tobytes() and a.meta == b.meta


def test_bad_requests_are_clear_failures(editor, scene_objects):
    obj = scene_objects[0]
    req = make_request(obj, "remove", "x", with_mask=False)
    req.box = (5000.0, 5000.0, 10.0, 10.0)
    out = editor.edit_batch([req, make_request(obj, "teleport", "x"), make_request(obj, "remove", "x")])
    assert isinstance(out[0], EditFailure) and out[0].reason == "edit_geometry" and "outside" in out[0].detail
    assert isinstance(out[1], EditFailure) and out[1].reason == "unknown_edit_type"
    assert isinstance(out[2], EditResult)


def test_invalid_params_name_the_key():
    from editors.base import EditorError

    with pytest.raises(EditorError, match="inpaint_method"):
        ClassicalEditor({"inpaint_method": "magic"})
    assert QCParams().dilation_px == 15


def test_move_follows_the_side_named_in_the_instruction(editor, scene_objects):
    obj = next(o for o in scene_objects if o["box"][0] > o["box"][2] + 10 and o["box"][2] >= 10)
    for seed in range(4):  # whatever the seed's default order, "left" wins when it fits
        res = editor.edit_batch(
            [make_request(obj, "move", f"move the {obj['name']} to the left of the table", seed=seed)]
        )[0]
        assert isinstance(res, EditResult) and res.meta["destination_box"][0] < obj["box"][0]
