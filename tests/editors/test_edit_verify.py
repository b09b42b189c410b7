"""Pixel verification: good edits pass, crafted bad ones (wrong colour, removal that left the
object, move that did not move) fail; requests outside an editor's capabilities are refused."""

from __future__ import annotations

import numpy as np
from edit_helpers import make_request

from editors.base import EditFailure, EditResult
from editors.classical import ClassicalEditor
from editors.config import VerifyParams
from editors.verify import EditCheck, verify_edit

P = VerifyParams()


def _editor() -> ClassicalEditor:
    return ClassicalEditor({})


def _chromatic(scene_objects):
    return next(o for o in scene_objects if o["colour"] in ("red", "blue", "green", "yellow"))


def test_recolour_to_the_named_colour_passes_and_a_wrong_colour_fails(scene_objects):
    obj = _chromatic(scene_objects)
    new = "purple" if obj["colour"] != "purple" else "orange"
    req = make_request(obj, "attribute", f"make it {new}", new_attribute=new)
    res = _editor().edit_batch([req])[0]
    assert isinstance(res, EditResult)
    good = verify_edit(
        EditCheck(req.image, res.image, "attribute", req.box, req.fields, res.meta, res.mask, object_mask=obj["mask"]),
        P,
    )
    assert good.passed, good.failures
    # the same pixels claimed as another colour: rejected, naming the colour
    bad = verify_edit(
        EditCheck(
            req.image,
            res.image,
            "attribute",
            req.box,
            {"new_attribute": "green"},
            {},
            res.mask,
            object_mask=obj["mask"],
        ),
        P,
    )
    assert not bad.passed and "green" in bad.failures[0]
    # an unedited image claimed as the new colour
    same = verify_edit(
        EditCheck(
            req.image, req.image.copy(), "attribute", req.box, req.fields, res.meta, res.mask, object_mask=obj["mask"]
        ),
        P,
    )
    assert not same.passed


def test_removal_that_left_the_object_fails(scene_objects):
    obj = scene_objects[0]
    req = make_request(obj, "remove", "remove it")
    res = _editor().edit_batch([req])[0]
    good = verify_edit(
        EditCheck(req.image, res.image, "remove", req.box, {}, res.meta, res.mask, object_mask=obj["mask"]), P
    )
    assert good.passed, good.failures
    bad = verify_edit(
        EditCheck(req.image, req.image.copy(), "remove", req.box, {}, res.meta, res.mask, object_mask=obj["mask"]), P
    )
    assert not bad.passed and any("still there" in f for f in bad.failures)


def test_removal_fails_when_another_instance_of_the_class_overlaps(scene_objects):
    obj = scene_objects[0]
    req = make_request(obj, "remove", "remove it")
    res = _editor().edit_batch([req])[0]
    x, y, w, h = obj["box"]
    twin = {
        "name": obj["name"] + "s",
        "box": [x + w * 0.6, y, w, h],
    }  # same class, another spelling, half outside the hole
    out = verify_edit(
        EditCheck(
            req.image,
            res.image,
            "remove",
            req.box,
            {"_context": [twin]},
            res.meta,
            res.mask,
            target_name=obj["name"],
            object_mask=obj["mask"],
        ),
        P,
    )
    assert not out.passed and any("still overlaps" in f for f in out.failures)


def test_move_that_did_not_move_fails(scene_objects):
    obj = next(o for o in scene_objects if o["box"][0] + 2.5 * o["box"][2] < o["mask"].shape[1])
    x, y, w, h = obj["box"]
    dest = [x + w + 6, y, w, h]
    req = make_request(obj, "move", "move it to the right", destination_box=dest)
    res = _editor().edit_batch([req])[0]
    assert isinstance(res, EditResult)
    good = verify_edit(
        EditCheck(req.image, res.image, "move", req.box, req.fields, res.meta, res.mask, object_mask=obj["mask"]), P
    )
    assert good.passed, good.failures
    bad = verify_edit(
        EditCheck(
            req.image, req.image.copy(), "move", req.box, req.fields, res.meta, res.mask, object_mask=obj["mask"]
        ),
        P,
    )
    assert not bad.passed and any("not found at the destination" in f for f in bad.failures)
    assert any("still at its source" in f for f in bad.failures)


def test_classical_refuses_what_it_cannot_render(scene_objects):
    obj = scene_objects[0]
    ed = _editor()
    glass = ed.edit_batch([make_request(obj, "attribute", "make it glass", new_attribute="clear glass")])[0]
    assert isinstance(glass, EditFailure) and glass.reason == "unsupported_edit"
    assert "classical" in glass.detail and "new_attribute" in glass.detail
    swap = ed.edit_batch([make_request(obj, "replace", "replace it with a candle", replacement="candle")])[0]
    assert isinstance(swap, EditFailure) and swap.reason == "unsupported_edit" and "replacement" in swap.detail
    assert ClassicalEditor.capabilities().to_json()["attribute_values"]["colour"]


def test_replace_with_an_annotated_instance_passes_verification(scene_objects, truth):
    obj = scene_objects[0]
    image = truth["images"][obj["image_id"]]
    x, y, w, h = obj["box"]
    others = [
        dict(o, box=o["box"])
        for oid, o in image["objects"].items()
        if oid != obj["object_id"]
        and o["name"] != obj["name"]
        and not (
            o["box"][0] < x + w
            and x < o["box"][0] + o["box"][2]
            and o["box"][1] < y + h
            and y < o["box"][1] + o["box"][3]
        )
        and o["box"][2] >= 6
        and o["box"][3] >= 6
        and o["box"][2] * o["box"][3] < 0.2 * w * h * 20
    ]
    donor = others[0]
    fields = {
        "replacement": donor["name"],
        "donor_box": donor["box"],
        "_context": [{"name": donor["name"], "box": donor["box"]}],
    }
    req = make_request(obj, "replace", f"replace it with the {donor['name']}", **fields)
    res = _editor().edit_batch([req])[0]
    assert isinstance(res, EditResult), res
    out = verify_edit(
        EditCheck(req.image, res.image, "replace", req.box, req.fields, res.meta, res.mask, object_mask=obj["mask"]), P
    )
    assert out.passed, out.failures
    wrong = dict(fields, replacement="giraffe")
    assert not verify_edit(
        EditCheck(req.image, res.image, "replace", req.box, wrong, res.meta, res.mask, object_mask=obj["mask"]), P
    ).passed
    assert np.abs(res.image.astype(int) - req.image.astype(int)).sum() > 0


# --------------------------------------------------------------------------- claims the questions rest on
def _moved(obj):
    x, y, w, h = obj["box"]
    dest = [x + w + 6, y, w, h]
    req = make_request(obj, "move", "move it to the right", destination_box=dest)
    res = _editor().edit_batch([req])[0]
    assert isinstance(res, EditResult)
    return req, res, dest


def test_an_edit_that_covers_another_annotated_object_fails_and_records_what_it_cut(scene_objects):
    obj = next(o for o in scene_objects if o["box"][0] + 2.5 * o["box"][2] < o["mask"].shape[1])
    req, res, dest = _moved(obj)
    clean = verify_edit(
        EditCheck(req.image, res.image, "move", req.box, req.fields, res.meta, res.mask, object_mask=obj["mask"]), P
    )
    assert clean.passed, clean.failures
    # an annotated sign under the copy's place: covered nearly whole by the changed region
    under = {"name": "sign", "box": [dest[0] + 1, dest[1] + 1, dest[2] - 2, dest[3] - 2]}
    out = verify_edit(
        EditCheck(
            req.image,
            res.image,
            "move",
            req.box,
            dict(req.fields, _context=[under]),
            res.meta,
            res.mask,
            object_mask=obj["mask"],
        ),
        P,
    )
    assert not out.passed and any("also covers" in f and "sign" in f for f in out.failures), out.failures
    cut = out.checks["cut_objects"]
    assert [c["name"] for c in cut] == ["sign"] and cut[0]["cut"] > 0.3
    # a neighbour the margin only grazes is recorded with its small share, and passes
    x, y, w, h = obj["box"]
    grazed = {"name": "lamp", "box": [x - 40, y, 41, h]}
    ok = verify_edit(
        EditCheck(
            req.image,
            res.image,
            "move",
            req.box,
            dict(req.fields, _context=[grazed]),
            res.meta,
            res.mask,
            object_mask=obj["mask"],
        ),
        P,
    )
    assert ok.passed, ok.failures
    assert all(c["cut"] < 0.3 for c in ok.checks["cut_objects"])


def test_an_edit_that_touches_the_control_class_fails(scene_objects):
    obj = next(o for o in scene_objects if o["box"][0] + 2.5 * o["box"][2] < o["mask"].shape[1])
    req, res, dest = _moved(obj)
    x, y, w, h = obj["box"]
    far = {"name": "stone", "box": [2.0, 2.0, 8.0, 8.0], "synset": "stone.n.02"}
    # a "rock" sharing the control's synset, grazed by the changed region: "the stone" could mean it
    rock = {"name": "rock", "box": [x - 6, y - 6, 8.0, 8.0], "synset": "stone.n.02"}
    fields = dict(req.fields, _context=[far, rock])
    ok = verify_edit(
        EditCheck(
            req.image,
            res.image,
            "move",
            req.box,
            dict(req.fields, _context=[far]),
            res.meta,
            res.mask,
            object_mask=obj["mask"],
            untouched=["stone"],
            target_name=obj["name"],
        ),
        P,
    )
    assert ok.passed, ok.failures
    out = verify_edit(
        EditCheck(
            req.image,
            res.image,
            "move",
            req.box,
            fields,
            res.meta,
            res.mask,
            object_mask=obj["mask"],
            untouched=["stone"],
            target_name=obj["name"],
        ),
        P,
    )
    assert not out.passed and any("control" in f and "rock" in f for f in out.failures), out.failures
    # the edited target itself of the control's class (a synonym by synset): refused too
    same = verify_edit(
        EditCheck(
            req.image,
            res.image,
            "move",
            req.box,
            dict(req.fields, _context=[far], _target_synset="stone.n.02"),
            res.meta,
            res.mask,
            object_mask=obj["mask"],
            untouched=["stone"],
            target_name=obj["name"],
        ),
        P,
    )
    assert not same.passed and any("is of the class" in f for f in same.failures), same.failures


def test_a_target_that_cannot_be_seen_fails():
    image = np.full((60, 80, 3), 90, np.uint8)
    image[10:50, 10:70] = (200, 30, 30)  # a flat red car; the "cup" annotated inside it is hidden behind it
    box = (30.0, 20.0, 10.0, 12.0)
    edited = image.copy()
    edited[20:32, 30:40] = 90
    mask = np.zeros((60, 80), bool)
    mask[18:34, 28:42] = True
    out = verify_edit(EditCheck(image, edited, "remove", box, {}, {}, mask, target_name="cup"), P)
    assert not out.passed and any("cannot be seen" in f for f in out.failures), out.failures
    image[20:32, 30:40] = (240, 240, 240)  # now the cup shows
    seen = verify_edit(EditCheck(image, edited, "remove", box, {}, {}, mask, target_name="cup"), P)
    assert not any("cannot be seen" in f for f in seen.failures), seen.failures
