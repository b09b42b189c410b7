"""Pixel verification of a performed edit against its instruction, before anyone reviews it.

Auto-QC (editors/qc.py) measures *where* pixels changed; this module checks *whether the edit
is the one the questions will describe*. One verifier per edit kind, all cheap CPU checks:

- every kind: the target can be seen (its box, with a small margin, is not one flat colour: an
  annotated object drawn over by another, or absent, is refused before questions name it);
- every kind that overwrites pixels (all but a recolour, which stays inside the object's mask): no
  other annotated object lost more than ``storage.annotation.coverage.BOX_LOST_ABOVE`` of its box to the changed region ("change nothing else"; the covered fractions are recorded as
  ``cut_objects`` for the qa stage's claims), and no instance of a control object's class (the
  task's ``untouched_objects`` hook: alteration tracing's B') shares a pixel with it;
- remove: the target region changed, the outside was kept, the object's appearance is gone
  from its box, and no other annotated instance of the target's class overlaps the erased box;
- attribute (colour): the circular-mean hue, mean saturation and value inside the object mask
  match the named colour within :class:`editors.config.VerifyParams` tolerances; (pattern): the
  value contrast inside the mask rose while the hue stayed;
- move / add: the object's appearance is found at the destination by template matching, and
  for a move it is gone from the source (for an add it is still there);
- replace: the clone comes from an annotated instance of the requested class, its appearance is
  at the target box and the original object's is not.

A :class:`Verdict` goes into the edit row's ``qc_json`` (``verification``); a failed one makes
the edit ``auto_rejected``, and the qa stage, which passes over it, records a ``verify_failed``
reject naming the failed check (``tasks/stages/qa/unverified.py``; edit/rejects keep holding only
requests that yielded no edit).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import cv2
import numpy as np

from editors.base import EditRequest, EditResult
from editors.capabilities import VALUE_KEYS, donor_for
from editors.config import VerifyParams
from editors.masks import box_mask, clip_box, dilate, is_flat
from editors.masks import object_mask as donor_mask_of
from editors.qc import mean_abs_change, psnr
from storage.annotation.boxes import grown, intersects, iou
from storage.annotation.colours import NAMED_COLOURS, colour_word, hue_distance
from storage.annotation.coverage import BOX_LOST_ABOVE, covered, touches
from storage.annotation.names import basic_name, class_members

SEEN_MARGIN_PX = 4  # a target shows when its box, with this margin, is more than one flat colour

PATTERN_WORDS = {
    "striped",
    "stripes",
    "stripy",
    "checkered",
    "checked",
    "plaid",
    "dotted",
    "dots",
    "spotted",
    "spotty",
}


@dataclass
class Verdict:
    """Passed or not, the measured values, and one reason per failed check."""

    passed: bool
    checks: dict[str, object] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    method: str = "pixels"

    def to_json(self) -> dict[str, object]:
        return {"passed": self.passed, "method": self.method, "checks": self.checks, "failures": self.failures}


def _bool_mask(mask: np.ndarray | None, shape: tuple[int, int]) -> np.ndarray | None:
    if mask is None or mask.shape != shape or not mask.any():
        return None
    return mask.astype(bool)


def hsv_stats(image: np.ndarray, mask: np.ndarray) -> tuple[float, float, float]:
    """(circular-mean hue 0-179, mean saturation, mean value) of the masked pixels (OpenCV scales)."""
    hsv = cv2.cvtColor(np.ascontiguousarray(image[:, :, ::-1]), cv2.COLOR_BGR2HSV)
    px = hsv[mask].astype(np.float64)
    ang = px[:, 0] * 2 * np.pi / 180.0
    w = px[:, 1] + 1e-6  # weigh hue by saturation: grey pixels carry no hue
    hue = float(np.degrees(np.arctan2((np.sin(ang) * w).sum(), (np.cos(ang) * w).sum())) % 360) / 2.0
    return hue, float(px[:, 1].mean()), float(px[:, 2].mean())


def matches_colour(stats: tuple[float, float, float], name: str, hue_tol: float) -> tuple[bool, str]:
    """Whether (hue, sat, val) reads as the named colour; the reason when it does not."""
    hue, sat, val = stats
    centre, (s0, s1, v0, v1) = NAMED_COLOURS[name]
    if not (s0 <= sat <= s1):
        return False, f"mean saturation {sat:.0f} outside [{s0:.0f}, {s1:.0f}] for {name}"
    if not (v0 <= val <= v1):
        return False, f"mean value {val:.0f} outside [{v0:.0f}, {v1:.0f}] for {name}"
    if centre is not None and hue_distance(hue, centre) > hue_tol:
        return (
            False,
            f"mean hue {hue:.0f} is {hue_distance(hue, centre):.0f} from {name} ({centre}), tolerance {hue_tol:.0f}",
        )
    return True, ""


def similarity(
    patch: np.ndarray,
    image: np.ndarray,
    box: Sequence[float],
    search_px: int,
    mask: np.ndarray | None = None,
    scale: float = 64.0,
) -> float:
    """How well ``patch`` (its ``mask`` pixels: the object, not the background it stood on) is found
    in ``box`` of ``image``, shifted by up to ``search_px``: 1 - mean absolute RGB difference / ``scale``
    at the best shift (1 = identical; <= 0 = nothing alike). Flat-coloured objects have no texture
    for a correlation to lock on, so colour difference is the measure."""
    h, w = image.shape[:2]
    x0, y0, x1, y1 = clip_box(box, w, h)
    bw, bh = x1 - x0, y1 - y0
    if bw < 2 or bh < 2:
        return 0.0
    pmask = np.ones(patch.shape[:2], bool) if mask is None else mask.astype(bool)
    if patch.shape[:2] != (bh, bw):
        patch = cv2.resize(patch, (bw, bh), interpolation=cv2.INTER_AREA)
        pmask = cv2.resize(pmask.astype(np.uint8), (bw, bh), interpolation=cv2.INTER_NEAREST).astype(bool)
    if not pmask.any():
        return 0.0
    ref = patch[pmask].astype(np.float32)
    best = -1.0
    step = max(1, search_px // 3)
    for dy in range(-search_px, search_px + 1, step):
        for dx in range(-search_px, search_px + 1, step):
            if y0 + dy < 0 or x0 + dx < 0 or y1 + dy > h or x1 + dx > w:
                continue
            win = image[y0 + dy : y1 + dy, x0 + dx : x1 + dx][pmask].astype(np.float32)
            best = max(best, 1.0 - float(np.abs(win - ref).mean()) / scale)
    return round(best, 4)


def donor_mask(image: np.ndarray, box: Sequence[float]) -> tuple[np.ndarray, str]:
    """The donor object's pixels inside its box (GrabCut, seed 0: the object, not its background)."""
    return donor_mask_of(image, box, 0, None, "grabcut")


def _crop(image: np.ndarray, box: Sequence[float]) -> np.ndarray:
    h, w = image.shape[:2]
    x0, y0, x1, y1 = clip_box(box, w, h)
    return image[y0:y1, x0:x1]


def _class_left(
    fields: Mapping[str, object], target_name: str | None, box: Sequence[float], hole: np.ndarray
) -> list[dict[str, object]]:
    """Other annotated instances of the target's class that overlap its box and were not erased."""
    want = basic_name(target_name or "")
    h, w = hole.shape
    left = []
    for o in fields.get("_context", []) or []:
        if not isinstance(o, dict) or not o.get("box") or basic_name(str(o.get("name") or "")) != want:
            continue
        obox = box_mask(o["box"], w, h)
        if not (obox & box_mask(box, w, h)).any():
            continue
        if (obox & ~hole).sum() > 0.5 * max(1, obox.sum()):
            left.append(o)
    return left


def _others(fields: Mapping[str, object], box: Sequence[float]) -> list[dict[str, object]]:
    """The candidate's other annotated objects with a box (the target itself left out)."""
    return [
        o
        for o in fields.get("_context", []) or []
        if isinstance(o, dict)
        and o.get("box")
        and not all(abs(float(a) - float(b)) <= 1.0 for a, b in zip(o["box"], box))
    ]


def cut_objects(fields: Mapping[str, object], box: Sequence[float], changed: np.ndarray) -> list[dict[str, object]]:
    """Every other annotated object whose box the changed region enters: name, box and the
    covered fraction of the box (recorded, so the qa stage can tell which objects a question may
    still name as there: ``storage.annotation.coverage.BOX_REMAINS_AT_MOST``)."""
    h, w = changed.shape
    out = []
    for o in _others(fields, box):
        cut = covered(box_mask(o["box"], w, h), changed)
        if cut > 0:
            out.append({"name": str(o.get("name") or ""), "box": [float(v) for v in o["box"]], "cut": round(cut, 4)})
    return out


def _untouched_failures(
    fields: Mapping[str, object],
    box: Sequence[float],
    target_name: str | None,
    changed: np.ndarray,
    placed: list[Sequence[float]],
    untouched: Sequence[str],
) -> list[str]:
    """Why the edit breaks a control object the questions say stayed the same: an instance of its
    class (a synonym sharing its synset included) shares a pixel of its box with the changed
    region, or lies under a copy the edit placed."""
    h, w = changed.shape
    target = {"name": target_name or "", "synset": fields.get("_target_synset"), "box": list(box)}
    out = []
    for name in untouched:
        for o in class_members(name, [target, *_others(fields, box)]):
            if o is target:
                out.append(
                    f"control: the edited {target_name} is of the class of the {name} the questions say is unchanged"
                )
            elif touches(box_mask(o["box"], w, h), changed) or any(intersects(o["box"], p) for p in placed):
                out.append(
                    f"control: the edit touches the {o.get('name')} at {[round(float(v)) for v in o['box']]}, "
                    f"which the questions say is unchanged (as the {name})"
                )
    return out


@dataclass(frozen=True)
class EditCheck:
    """One performed edit as the verifier reads it: the images, what was asked and what the editor says.

    ``mask``: the pixels the editor says it changed; ``object_mask``: the target's exact pixels when
    known (else the editor's mask inside the box stands for them); ``untouched``: names of control
    objects the questions will say stayed the same (the task's ``untouched_objects`` hook, resolved
    by the edit stage)."""

    original: np.ndarray
    edited: np.ndarray
    kind: str | None
    box: Sequence[float] | None
    fields: Mapping[str, object]
    meta: Mapping[str, object]
    mask: np.ndarray | None
    target_name: str | None = None
    object_mask: np.ndarray | None = None
    seed: int = 0
    untouched: Sequence[str] = ()


@dataclass
class _Checking:
    """What the per-kind checks share: the edit, its box in pixels, the target's own pixels and
    patch, the changed mask, and the checks and failures written so far."""

    edit: EditCheck
    box: Sequence[float]
    params: VerifyParams
    boxm: np.ndarray
    changed: np.ndarray | None
    obj: np.ndarray
    patch: np.ndarray
    pmask: np.ndarray
    checks: dict[str, object] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)


def verify_edit(edit: EditCheck, params: VerifyParams) -> Verdict:
    """Check one performed edit against what it was asked to do (see the module doc)."""
    box, kind = edit.box, edit.kind
    if box is None or kind not in _KIND_CHECKS:
        return Verdict(True, {"skipped": f"nothing to verify for edit kind {kind!r}"})
    h, w = edit.original.shape[:2]
    boxm = box_mask(box, w, h)
    obj = _bool_mask(edit.object_mask, (h, w))
    if obj is None:  # the object's own pixels, separated from its box as the editors do
        obj = donor_mask_of(edit.original, box, edit.seed, None, "grabcut")[0] & boxm
        if obj.sum() < 0.05 * boxm.sum():
            obj = boxm
    c = _Checking(
        edit,
        box,
        params,
        boxm,
        _bool_mask(edit.mask, (h, w)),
        obj,
        _crop(edit.original, box),
        _crop(obj.astype(np.uint8), box).astype(bool),
    )
    if is_flat(_crop(edit.original, grown(box, SEEN_MARGIN_PX))):
        c.failures.append(
            f"{kind}: the {edit.target_name or 'target'} cannot be seen: its box and {SEEN_MARGIN_PX} px around it are one flat colour "
            "(drawn over by another object, or not there)"
        )
    _KIND_CHECKS[kind](c)
    if kind != "attribute":  # a recolour changes the object's own pixels only: its mask is checked above
        _check_region(c, _changed_region(kind, c.changed, boxm, edit.meta, edit.fields, w, h))
    return Verdict(not c.failures, c.checks, c.failures)


def _check_remove(c: _Checking) -> None:
    """The target region changed, the outside was kept, the object is gone and no other of its class overlaps."""
    e, p, checks = c.edit, c.params, c.checks
    hole = c.changed if c.changed is not None else dilate(c.boxm, 4)
    checks["change_inside"] = round(mean_abs_change(e.original, e.edited, c.obj), 3)
    checks["psnr_outside"] = round(psnr(e.original, e.edited, ~dilate(hole | c.boxm, p.margin_px)), 3)
    checks["object_similarity"] = round(similarity(c.patch, e.edited, c.box, 0, c.pmask), 4)
    left = _class_left(e.fields, e.target_name, c.box, hole)
    checks["same_class_left"] = [list(o["box"]) for o in left]
    if checks["change_inside"] < p.min_change:
        c.failures.append(
            f"removal: the target region barely changed (mean change {checks['change_inside']} < {p.min_change})"
        )
    if checks["psnr_outside"] < p.min_psnr_outside:
        c.failures.append(f"removal: the outside was not kept (PSNR {checks['psnr_outside']} < {p.min_psnr_outside})")
    if checks["object_similarity"] >= p.max_similarity_gone:
        c.failures.append(
            f"removal: the object is still there (similarity {checks['object_similarity']} >= {p.max_similarity_gone})"
        )
    if left:
        c.failures.append(
            f"removal: another {basic_name(e.target_name or '')!r} still overlaps the erased box at {checks['same_class_left']}"
        )


def _check_attribute(c: _Checking) -> None:
    """A recolour reads as the named colour inside the object; a pattern raised the value contrast, hue kept."""
    e, p, obj = c.edit, c.params, c.obj
    fields, meta = e.fields, e.meta
    value = next((str(fields[k]) for k in VALUE_KEYS if fields.get(k)), str(meta.get("value") or ""))
    word = colour_word(value) or (str(meta.get("value")) if meta.get("operation") == "colour" else None)
    pattern = meta.get("operation") == "pattern" or any(w in value.lower().split() for w in PATTERN_WORDS)
    if word in NAMED_COLOURS:
        stats = hsv_stats(e.edited, obj)
        c.checks.update(
            colour=word,
            hue=round(stats[0], 2),
            saturation=round(stats[1], 2),
            value=round(stats[2], 2),
            hue_tolerance=p.hue_tolerance,
        )
        ok, why = matches_colour(stats, word, p.hue_tolerance)
        if not ok:
            c.failures.append(f"recolour: the object does not read as {word}: {why}")
    elif pattern:
        before, after = hsv_stats(e.original, obj), hsv_stats(e.edited, obj)
        v0 = float(cv2.cvtColor(np.ascontiguousarray(e.original[:, :, ::-1]), cv2.COLOR_BGR2HSV)[..., 2][obj].std())
        v1 = float(cv2.cvtColor(np.ascontiguousarray(e.edited[:, :, ::-1]), cv2.COLOR_BGR2HSV)[..., 2][obj].std())
        c.checks.update(pattern=value, value_std_before=round(v0, 2), value_std_after=round(v1, 2))
        if v1 - v0 < p.min_pattern_contrast:
            c.failures.append(
                f"pattern: the value contrast inside the object rose by {v1 - v0:.1f} < {p.min_pattern_contrast}"
            )
        if before[1] > 60 and hue_distance(before[0], after[0]) > p.hue_tolerance:
            c.failures.append("pattern: the object's hue changed, not only its pattern")
    else:
        c.failures.append(f"attribute: no pixel check knows the value {value!r}; it cannot be verified")


def _check_move_add(c: _Checking) -> None:
    """The object is found at the destination; a move left its source, an add kept it."""
    e, p, kind = c.edit, c.params, c.edit.kind
    fields, meta = e.fields, e.meta
    dest = meta.get("destination_box") or fields.get("destination_box")
    if dest is None:
        c.failures.append(f"{kind}: no destination recorded by the editor or the instruction")
        return
    wanted = fields.get("destination_box")
    if wanted is not None and meta.get("destination_box") is not None:
        c.checks["destination_agrees"] = round(iou(wanted, meta["destination_box"]), 4)
        if c.checks["destination_agrees"] < 0.5:
            c.failures.append(
                f"{kind}: the object went to {meta['destination_box']}, the instruction asked for {list(wanted)}"
            )
    at_dest = similarity(c.patch, e.edited, dest, p.search_px, c.pmask)
    at_src = similarity(c.patch, e.edited, c.box, 0, c.pmask)
    c.checks.update(similarity_at_destination=round(at_dest, 4), similarity_at_source=round(at_src, 4))
    if at_dest < p.min_similarity_found:
        c.failures.append(
            f"{kind}: the object is not found at the destination (similarity {at_dest:.2f} < {p.min_similarity_found})"
        )
    if kind == "move" and at_src >= p.max_similarity_gone:
        c.failures.append(
            f"move: the object is still at its source (similarity {at_src:.2f} >= {p.max_similarity_gone})"
        )
    if kind == "add" and at_src < p.min_similarity_found:
        c.failures.append(f"add: the original object is no longer at its place (similarity {at_src:.2f})")


def _check_replace(c: _Checking) -> None:
    """The clone comes from an annotated instance of the requested class and is at the target box; the original is not."""
    e, p, fields = c.edit, c.params, c.edit.fields
    donor, why = donor_for(fields, c.box)
    if donor is None and e.meta.get("donor_box") is None:
        c.failures.append(f"replace: {why}")
        return
    dbox = donor["box"] if donor is not None else e.meta["donor_box"]
    if donor is None:
        c.failures.append(f"replace: the clone's class is not the requested one ({why})")
    donor_patch = _crop(e.original, dbox)
    dmask, _ = donor_mask(e.original, dbox)
    found = similarity(donor_patch, e.edited, c.box, p.search_px, _crop(dmask.astype(np.uint8), dbox).astype(bool))
    gone = similarity(c.patch, e.edited, c.box, 0, c.pmask)
    c.checks.update(
        replacement=str(fields.get("replacement")),
        donor_box=list(dbox),
        similarity_donor_at_target=round(found, 4),
        similarity_original_at_target=round(gone, 4),
    )
    if found < p.min_similarity_found:
        c.failures.append(
            f"replace: the {fields.get('replacement')!r} is not found in the target box (similarity {found:.2f})"
        )
    if gone >= p.max_similarity_gone and found < gone:
        c.failures.append(f"replace: the original object is still in its box (similarity {gone:.2f})")


def _check_region(c: _Checking, region: np.ndarray | None) -> None:
    """Nothing else annotated lost too much of its box to the changed region; no control object was touched."""
    if region is None:
        return
    e, kind = c.edit, c.edit.kind
    cut = cut_objects(e.fields, c.box, region)
    c.checks["cut_objects"] = cut
    lost = sorted({o["name"] for o in cut if o["cut"] > BOX_LOST_ABOVE})
    c.checks["also_changed"] = lost
    if lost:
        c.failures.append(
            f"{kind}: the edit also covers more than {BOX_LOST_ABOVE:.0%} of the annotated {', '.join(lost)}"
        )
    dest = e.meta.get("destination_box") or e.fields.get("destination_box")
    placed = [dest] if kind in ("move", "add") and dest is not None else []
    c.failures += _untouched_failures(e.fields, c.box, e.target_name, region, placed, e.untouched)


_KIND_CHECKS: dict[str, Callable[[_Checking], None]] = {
    "remove": _check_remove,
    "attribute": _check_attribute,
    "move": _check_move_add,
    "add": _check_move_add,
    "replace": _check_replace,
}


def _changed_region(
    kind: str,
    changed: np.ndarray | None,
    boxm: np.ndarray,
    meta: Mapping[str, object],
    fields: Mapping[str, object],
    w: int,
    h: int,
) -> np.ndarray | None:
    """What the edit changed: the editor's mask; without one, the target's box (grown as a removal
    margin) plus, for a move or an add, the destination box."""
    if changed is not None:
        return changed
    region = dilate(boxm, 4)
    dest = meta.get("destination_box") or fields.get("destination_box")
    if kind in ("move", "add") and dest is not None:
        region = region | box_mask(dest, w, h)
    return region


UntouchedObjects = Callable[[Mapping[str, object]], list[str]]


def verify_result(
    request: EditRequest,
    edited: np.ndarray,
    result: EditResult,
    params: VerifyParams,
    untouched_objects: UntouchedObjects | None = None,
) -> Verdict:
    """The edit stage's check of an editor's result (at the source size) against its request;
    ``untouched_objects`` is the request's task's hook of that name (the stage resolves it)."""
    if not params.enabled:
        return Verdict(True, {"skipped": "edit.qc.verify.enabled is false"}, method="none")
    untouched = [n for n in (untouched_objects(request.fields) if untouched_objects is not None else []) if n]
    edit = EditCheck(
        request.image,
        edited,
        request.kind,
        request.box,
        request.fields,
        result.meta,
        result.mask,
        target_name=request.target_name,
        object_mask=request.mask,
        seed=request.seed,
        untouched=untouched,
    )
    return verify_edit(edit, params)
