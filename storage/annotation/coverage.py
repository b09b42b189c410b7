"""How much of an object an edit changed: the one rule the edit-stage verification, the qa
stage's claim checks and the audit decide by.

A gold answer that says an object is still there, or untouched, is only as true as the edit
that left it alone. Three claims rest on that, each with one limit here:

- **lost**: an object counts as gone when the changed region covers more than
  :data:`LOST_ABOVE` of it. The audit measures it on the sample's drawn pixels (what a viewer
  sees); the verification has only annotation boxes and rejects an edit that covers more than
  :data:`BOX_LOST_ABOVE` of another object's box (a box holds background around the object, so
  its fraction runs lower than the pixels' for the same damage);
- **remains**: a question may name an object as still at the edited place only when the edit
  covered at most :data:`BOX_REMAINS_AT_MOST` of its box. Boxes overlap without saying which
  object is in front, so an object mostly hidden behind a third one loses far more of what can be
  seen of it than of its box: on the bundled sample's scaled builds the pixel fraction reached
  2.2x the box fraction (a table behind a car: 27 % of its box, 60 % of its visible pixels) and
  never more than 0.37 when the box fraction was at most 0.2;
- **untouched**: a control object (and every object of its class, which a question naming
  "the stone" could mean) must share no pixel with the changed region: on boxes for the
  verification, on drawn pixels for the audit. A box holds every pixel of its object, so an
  untouched box is an untouched object.

Pure numpy on boolean masks: the editors, the qa stage and the audit all import it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from storage.annotation.boxes import clip_box
from storage.annotation.names import basic_name

LOST_ABOVE = 0.5
BOX_LOST_ABOVE = 0.3
BOX_REMAINS_AT_MOST = 0.2


def box_mask(box: Sequence[float], width: int, height: int) -> np.ndarray:
    """The pixels of a [x, y, w, h] box as an H x W boolean mask."""
    x0, y0, x1, y1 = clip_box(box, width, height)
    mask = np.zeros((height, width), dtype=bool)
    mask[y0:y1, x0:x1] = True
    return mask


def covered(region: np.ndarray, changed: np.ndarray | None) -> float:
    """The fraction of ``region`` (an object's pixels or its box) that ``changed`` covers (0 for
    an empty region or no change)."""
    if changed is None:
        return 0.0
    size = int(region.sum())
    return float((region & changed).sum()) / size if size else 0.0


def touches(region: np.ndarray, changed: np.ndarray | None) -> bool:
    """Whether ``changed`` shares at least one pixel with ``region``."""
    return changed is not None and bool((region & changed).any())


def cut_names(cut_objects: Iterable[Mapping[str, Any]], limit: float = BOX_REMAINS_AT_MOST) -> set[str]:
    """Word forms of the objects an edit covered more of than ``limit`` (``cut_objects`` as the
    verification records them: name, box, covered fraction of the box): no question may name one
    of these as still there."""
    return {basic_name(str(c.get("name") or "")) for c in cut_objects if float(c.get("cut") or 0.0) > limit} - {""}


def names_mentioned(text: str, names: Iterable[str]) -> list[str]:
    """The ``names`` that ``text`` mentions as words (singular or plural), in sorted order."""
    low = " ".join(str(text).lower().split())
    return sorted(n for n in set(names) if n and re.search(rf"\b{re.escape(n)}(?:s|es)?\b", low))
