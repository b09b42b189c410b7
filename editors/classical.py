"""Classical CPU editors: real, fast and deterministic; the embedded default and the ablation baseline.

- remove / delete: OpenCV inpainting (Telea or Navier-Stokes) inside the dilated mask or box;
- attribute (CA): recolour to a named colour (hue set in HSV, shading kept) or one of three drawn
  patterns inside the object mask; nothing else (see :attr:`ClassicalEditor.attribute_values`);
- move / add (AT): the target cloned (masked cut, seamless (Poisson) paste), the vacated place
  inpainted; replace: another annotated instance of the requested class cloned into the box.
  Requests outside that are refused as ``unsupported_edit`` (editors/capabilities.py).

VG gives boxes, not masks: when the request carries no mask the object is separated from its
box by seeded GrabCut, else an inscribed ellipse. Structured hints come from the instruction's
fields (``new_attribute``, ``destination_box``, ``replacement`` + ``donor_box``); a destination that
is not given is chosen deterministically from the seed and recorded in the result's ``meta``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Literal

import cv2
import numpy as np
from pydantic import Field

from editors.base import Box, EditFailure, Editor, EditRequest, EditResult
from editors.capabilities import donor_for, requested_value
from editors.masks import box_mask, clip_box, dilate, mask_box, object_mask
from storage.annotation.boxes import intersection
from storage.config_base import Section

# OpenCV hue scale (0-179), target saturation / value scale for each colour word.
COLOURS: dict[str, tuple[int | None, float | None, float]] = {
    "red": (0, None, 1.0),
    "orange": (14, None, 1.0),
    "yellow": (28, None, 1.0),
    "gold": (24, None, 0.9),
    "green": (60, None, 1.0),
    "teal": (85, None, 1.0),
    "cyan": (90, None, 1.0),
    "turquoise": (88, None, 1.0),
    "blue": (115, None, 1.0),
    "navy": (118, None, 0.55),
    "purple": (140, None, 1.0),
    "violet": (140, None, 1.0),
    "pink": (165, 110.0, 1.0),
    "magenta": (150, None, 1.0),
    "brown": (12, 170.0, 0.55),
    "tan": (16, 90.0, 0.9),
    "white": (None, 12.0, 1.6),
    "black": (None, 12.0, 0.25),
    "gray": (None, 8.0, 0.85),
    "grey": (None, 8.0, 0.85),
    "silver": (None, 10.0, 1.2),
}
PATTERNS = {
    "striped": "stripes",
    "stripes": "stripes",
    "stripy": "stripes",
    "checkered": "checks",
    "checked": "checks",
    "plaid": "checks",
    "dotted": "dots",
    "dots": "dots",
    "spotted": "dots",
    "spotty": "dots",
}


class ClassicalParams(Section):
    inpaint_method: Literal["telea", "ns"] = "telea"
    inpaint_radius: int = Field(5, ge=1, le=50)
    dilation_px: int = Field(15, ge=0, description="removal margin around the object mask or box")
    mask_method: Literal["grabcut", "ellipse", "box"] = Field(
        "grabcut", description="object shape when the request has no mask"
    )
    blend: Literal["seamless", "mixed", "paste"] = "seamless"
    max_clone_drift: float = Field(
        25.0,
        ge=0,
        description="mean colour drift (0-255) above which a seamless clone falls back to a feathered paste",
    )
    feather_px: int = Field(2, ge=0)


def _bgr(rgb: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(rgb[:, :, ::-1])


def _rgb(bgr: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(bgr[:, :, ::-1])


class ClassicalEditor(Editor):
    name = "classical"
    Params = ClassicalParams
    attribute_values = {"colour": {c: c for c in COLOURS}, "texture_pattern": PATTERNS}
    clone_from_image = True

    def edit_batch(self, requests: Sequence[EditRequest]) -> list[EditResult | EditFailure]:
        return [self.edit_one(r) for r in requests]

    def edit_one(self, req: EditRequest) -> EditResult | EditFailure:
        refused = self.supports(req)
        if refused:
            return refused
        if req.box is None and (req.mask is None or not req.mask.any()):
            return EditFailure("missing_target_box", f"{req.kind} needs a target box or mask")
        ops: dict[str, Callable[[EditRequest], EditResult | EditFailure]] = {
            "remove": self.remove,
            "attribute": self.change_attribute,
            "move": self.move,
            "add": self.add,
            "replace": self.replace,
        }
        try:
            return ops[req.kind](req)  # type: ignore[index]
        except ValueError as exc:  # geometry that cannot work (box outside the image, ...)
            return EditFailure("edit_geometry", str(exc))

    # -- helpers -------------------------------------------------------------------------
    def _box(self, req: EditRequest) -> Box:
        if req.box is not None:
            return tuple(float(v) for v in req.box)  # type: ignore[return-value]
        return mask_box(req.mask)  # type: ignore[return-value,arg-type]

    def _object(self, req: EditRequest) -> tuple[np.ndarray, str]:
        return object_mask(req.image, self._box(req), req.seed, req.mask, self.params.mask_method)

    def _inpaint(self, rgb: np.ndarray, mask: np.ndarray) -> np.ndarray:
        flag = cv2.INPAINT_TELEA if self.params.inpaint_method == "telea" else cv2.INPAINT_NS
        out = cv2.inpaint(_bgr(rgb), mask.astype(np.uint8) * 255, self.params.inpaint_radius, flag)
        return _rgb(out)

    def _alpha(self, mask: np.ndarray) -> np.ndarray:
        a = mask.astype(np.float32)
        if self.params.feather_px > 0:
            k = 2 * self.params.feather_px + 1
            a = cv2.GaussianBlur(a, (k, k), 0) * mask  # soft edge, never outside the mask
        return a[:, :, None]

    # -- remove --------------------------------------------------------------------------
    def remove(self, req: EditRequest) -> EditResult:
        h, w = req.image.shape[:2]
        base = req.mask.astype(bool) if req.mask is not None and req.mask.any() else box_mask(self._box(req), w, h)
        hole = dilate(base, self.params.dilation_px)
        return EditResult(
            self._inpaint(req.image, hole),
            hole,
            {"operation": "inpaint", "mask_source": "given" if req.mask is not None else "box"},
        )

    # -- attribute -----------------------------------------------------------------------
    def _attribute_target(self, req: EditRequest) -> tuple[str, str]:
        """('colour' | 'pattern', word); the capability check has refused anything else."""
        caps = self.capabilities()
        got = requested_value(req.fields, req.instruction or "", caps)
        resolved = caps.resolve_value(got[1]) if got else None
        if resolved is None:
            raise ValueError(f"no renderable colour or pattern in {got!r}")
        family, word = resolved
        return ("colour", word) if family == "colour" else ("pattern", word)

    def change_attribute(self, req: EditRequest) -> EditResult:
        mask, source = self._object(req)
        kind, word = self._attribute_target(req)
        hsv = cv2.cvtColor(_bgr(req.image), cv2.COLOR_BGR2HSV).astype(np.float32)
        new = hsv.copy()
        if kind == "colour":
            hue, sat, vscale = COLOURS[word]
            if hue is not None:
                new[..., 0] = hue
            new[..., 1] = sat if sat is not None else np.maximum(hsv[..., 1], 160.0)
            new[..., 2] = np.clip(np.maximum(hsv[..., 2], 60.0) * vscale, 0, 255)
        else:
            new[..., 2] = hsv[..., 2] * self._pattern(PATTERNS[word], mask, self._box(req))
        recoloured = _rgb(cv2.cvtColor(new.round().clip(0, 255).astype(np.uint8), cv2.COLOR_HSV2BGR))
        a = self._alpha(mask)
        out = (recoloured * a + req.image * (1 - a)).round().astype(np.uint8)
        return EditResult(out, mask, {"operation": kind, "value": word, "mask_source": source})

    @staticmethod
    def _pattern(kind: str, mask: np.ndarray, box: Box) -> np.ndarray:
        h, w = mask.shape
        period = max(4, int(min(box[2], box[3]) / 6))
        yy, xx = np.mgrid[0:h, 0:w]
        if kind == "stripes":
            dark = ((xx + yy) // period) % 2 == 1
        elif kind == "checks":
            dark = ((xx // period) + (yy // period)) % 2 == 1
        else:
            cy = (yy % (2 * period)) - period
            cx = (xx % (2 * period)) - period
            dark = cx * cx + cy * cy <= (period * 0.6) ** 2
        return np.where(dark, 0.45, 1.0).astype(np.float32)

    # -- move / add / replace ------------------------------------------------------------
    def _context_boxes(self, req: EditRequest) -> list[Box]:
        boxes = []
        for obj in req.fields.get("_context", []) or []:
            b = obj.get("box") if isinstance(obj, dict) else None
            if b and len(b) == 4:
                boxes.append(tuple(float(v) for v in b))
        return boxes  # type: ignore[return-value]

    def _place(self, req: EditRequest, box: Box, key: str) -> Box:
        """Destination of a moved or added object: the instruction's ``key`` field, else the free
        neighbouring slot (right/left/below/above, order rotated by the seed) that overlaps the
        fewest annotated objects."""
        h, w = req.image.shape[:2]
        given = req.fields.get(key)
        if given is not None and len(given) == 4:
            clip_box(given, w, h)
            return tuple(float(v) for v in given)  # type: ignore[return-value]
        x, y, bw, bh = box
        gap = max(4.0, 0.15 * max(bw, bh))
        options = [(x + bw + gap, y), (x - bw - gap, y), (x, y + bh + gap), (x, y - bh - gap)]
        k = req.seed % len(options)
        options = options[k:] + options[:k]
        hint = _direction_hint(" ".join([req.instruction or "", str(req.fields.get("C", ""))]))
        if hint is not None:  # "moved to the left of ...": try that side first
            wanted = {"right": 0, "left": 1, "below": 2, "above": 3}[hint]
            first = [(x + bw + gap, y), (x - bw - gap, y), (x, y + bh + gap), (x, y - bh - gap)][wanted]
            options = [first] + [o for o in options if o != first]
        others = self._context_boxes(req)
        best, best_score = None, None
        for ox, oy in options:
            if ox < 0 or oy < 0 or ox + bw > w or oy + bh > h:
                continue
            cand = (ox, oy, bw, bh)
            score = sum(intersection(cand, o) for o in others)
            if best_score is None or score < best_score - 1e-9:
                best, best_score = cand, score
        if best is None:
            raise ValueError(
                f"no free place of size {bw:.0f}x{bh:.0f} next to box {list(box)} inside the {w}x{h} image"
            )
        return best

    def _clone(self, src: np.ndarray, dst: np.ndarray, mask: np.ndarray, src_box: Box, dst_box: Box) -> np.ndarray:
        """Paste the masked object of ``src`` (within ``src_box``) into ``dst`` at ``dst_box``."""
        h, w = dst.shape[:2]
        sx0, sy0, sx1, sy1 = clip_box(src_box, w, h)
        patch, pmask = src[sy0:sy1, sx0:sx1], mask[sy0:sy1, sx0:sx1]
        dx0, dy0 = int(round(dst_box[0])), int(round(dst_box[1]))
        dw, dh = int(round(dst_box[2])), int(round(dst_box[3]))
        if (dw, dh) != (sx1 - sx0, sy1 - sy0):
            patch = cv2.resize(patch, (max(1, dw), max(1, dh)), interpolation=cv2.INTER_AREA)
            pmask = cv2.resize(
                pmask.astype(np.uint8), (max(1, dw), max(1, dh)), interpolation=cv2.INTER_NEAREST
            ).astype(bool)
        ph, pw = pmask.shape
        dx0, dy0 = min(max(0, dx0), w - pw), min(max(0, dy0), h - ph)
        full = np.zeros((h, w), bool)
        full[dy0 : dy0 + ph, dx0 : dx0 + pw] = pmask
        if self.params.blend != "paste" and pmask.any():
            cloned = self._seamless(patch, pmask, dst, dx0, dy0)
            if cloned is not None:
                return cloned, full
        canvas = dst.copy()
        canvas[dy0 : dy0 + ph, dx0 : dx0 + pw] = patch
        a = self._alpha(full)
        return (canvas * a + dst * (1 - a)).round().astype(np.uint8), full

    def _seamless(
        self, patch: np.ndarray, pmask: np.ndarray, dst: np.ndarray, dx0: int, dy0: int
    ) -> np.ndarray | None:
        """Poisson-blend ``patch`` (masked by ``pmask``) into ``dst`` with its top-left at (dx0, dy0).

        OpenCV clones the mask's bounding rectangle centred on a point; the source gets a margin of
        replicated pixels so the mask never touches its border (which makes OpenCV smear the
        rectangle). None when the placement leaves no room for the margin."""
        h, w = dst.shape[:2]
        ph, pw = pmask.shape
        m = 4
        ys, xs = np.nonzero(pmask)
        y0, y1, x0, x1 = int(ys.min()), int(ys.max()) + 1, int(xs.min()), int(xs.max()) + 1
        if (
            dx0 + x0 - m < 1
            or dy0 + y0 - m < 1
            or dx0 + x1 + m > w - 1
            or dy0 + y1 + m > h - 1
            or (y1 - y0) < 3
            or (x1 - x0) < 3
        ):
            return None
        src = cv2.copyMakeBorder(_bgr(patch[y0:y1, x0:x1]), m, m, m, m, cv2.BORDER_REPLICATE)
        mask = np.zeros(src.shape[:2], np.uint8)
        mask[m:-m, m:-m] = pmask[y0:y1, x0:x1].astype(np.uint8) * 255
        # OpenCV centres the mask's bounding box on ``centre``; the box spans [m, m+(x1-x0)).
        bx, by, bw, bh = cv2.boundingRect(mask)
        centre = (int(dx0 + x0 + (bx - m) + bw // 2), int(dy0 + y0 + (by - m) + bh // 2))
        flag = cv2.MIXED_CLONE if self.params.blend == "mixed" else cv2.NORMAL_CLONE
        try:
            out = _rgb(cv2.seamlessClone(src, _bgr(dst), mask, centre, flag))
        except cv2.error:
            return None
        # Poisson blending washes thin or high-contrast objects out; keep it only when the object
        # still looks like itself, else the caller pastes.
        region = np.zeros((h, w), bool)
        region[dy0 : dy0 + ph, dx0 : dx0 + pw] = pmask
        pasted = dst.copy()
        pasted[dy0 : dy0 + ph, dx0 : dx0 + pw][pmask] = patch[pmask]
        drift = float(np.abs(out[region].astype(np.int16) - pasted[region].astype(np.int16)).mean())
        return out if drift <= self.params.max_clone_drift else None

    def move(self, req: EditRequest) -> EditResult:
        mask, source = self._object(req)
        box = self._box(req) if req.fields.get("destination_box") is not None else (mask_box(mask) or self._box(req))
        dest = self._place(req, box, "destination_box")
        vacated = self._inpaint(req.image, dilate(mask, max(3, self.params.dilation_px // 3)))
        out, placed = self._clone(req.image, vacated, dilate(mask, 2), box, dest)
        meta = {
            "operation": "move",
            "mask_source": source,
            "source_box": list(box),
            "destination_box": [float(v) for v in dest],
        }
        return EditResult(out, mask | placed, meta)

    def add(self, req: EditRequest) -> EditResult:
        mask, source = self._object(req)
        box = self._box(req) if req.fields.get("destination_box") is not None else (mask_box(mask) or self._box(req))
        dest = self._place(req, box, "destination_box")
        out, placed = self._clone(req.image, req.image, dilate(mask, 2), box, dest)
        return EditResult(
            out, placed, {"operation": "add", "mask_source": source, "destination_box": [float(v) for v in dest]}
        )

    def replace(self, req: EditRequest) -> EditResult:
        """Swap the object for another annotated instance of the requested class (``replacement``
        at ``donor_box``, checked by :func:`editors.capabilities.donor_for`), scaled into its box."""
        mask, source = self._object(req)
        box = self._box(req)  # the clone fills the target's box, as the questions place it
        donor_obj, why = donor_for(req.fields, req.box)
        if donor_obj is None:
            raise ValueError(why)
        donor = tuple(float(v) for v in donor_obj["box"])
        hole = dilate(mask, max(3, self.params.dilation_px // 3))
        cleared = self._inpaint(req.image, hole)
        dmask, _ = object_mask(req.image, donor, req.seed, None, self.params.mask_method)
        out, placed = self._clone(req.image, cleared, dilate(dmask, 2), donor, box)  # type: ignore[arg-type]
        meta: dict[str, object] = {
            "operation": "replace",
            "replacement": str(req.fields.get("replacement")),
            "donor_box": list(donor),
            "mask_source": source,
        }
        return EditResult(out, hole | placed, meta)


_DIRECTIONS = {
    "left": "left",
    "right": "right",
    "above": "above",
    "up": "above",
    "top": "above",
    "upper": "above",
    "below": "below",
    "under": "below",
    "down": "below",
    "bottom": "below",
    "lower": "below",
    "beneath": "below",
}


def _direction_hint(text: str) -> str | None:
    """The first side word of an AT instruction or predicate (``moved to the left end``)."""
    for w in re.findall(r"[a-z]+", text.lower()):
        if w in _DIRECTIONS:
            return _DIRECTIONS[w]
    return None
