"""Shared pieces of candidate selection: seeded orders, image lookup, row assembly.

Every random choice derives its generator from (run seed, task, the thing being sampled),
so adding a pair or an image never reshuffles the choices made for the others.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TypedDict

import msgspec
import numpy as np

from miners.context import ImageIndex
from miners.extend import kept_first
from miners.vg_format import ImageLocator
from miners.vg_scan import Scan
from storage.hashing import canonical_json, stable_id
from storage.rejects import RejectRow, reject
from storage.rows import CandidateRow

VG = "visual_genome"
FSC = "fsc147"
COCO = "coco"


def context_json(value: object) -> str:
    """Sorted-key compact JSON like ``canonical_json``, but msgspec-fast (contexts are the bulk of a row)."""
    return msgspec.json.encode(value, order="sorted").decode("utf-8")


def rng_for(seed: int, *parts: str | int) -> np.random.Generator:
    return np.random.default_rng(int(stable_id(seed, *parts), 16))


def seeded_order(values: Iterable[int] | np.ndarray, seed: int, *parts: str | int) -> list[int]:
    """The values in a seeded order where each value's place depends on that value alone (a
    keyed hash of it): adding values never reorders the others, so a sample that takes the first
    k keeps its choices when the data grows (bottom-k sampling), and extending a dataset re-mines
    the same candidates plus a few new ones. In extension mode (``mine.extend_from``) the images
    the previous selection used come first (:func:`miners.extend.kept_first`)."""
    if isinstance(values, np.ndarray):
        vals = np.sort(values.astype(np.int64))
    else:
        vals = np.sort(np.fromiter((int(v) for v in values), dtype=np.int64))
    if not len(vals):
        return []
    keys = mix64(vals.astype(np.uint64) ^ np.uint64(int(stable_id(seed, *parts), 16)))
    return kept_first(vals[np.lexsort((vals, keys))].tolist())


def seeded_names(names: Iterable[str], seed: int, *parts: str | int) -> list[str]:
    """:func:`seeded_order` for ids that are names (FSC147 file names): each name's place
    depends on the name alone, never on its position among the others."""
    salt = stable_id(seed, *parts)
    return kept_first(sorted(names, key=lambda name: (stable_id(salt, name), name)))


def mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, vectorised: a well-spread 64-bit hash of each value."""
    z = x + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


class ObjectRef(TypedDict):
    """An annotated object a candidate row names (its target, its partner): the annotation's id,
    its canonical name and its ``[x, y, w, h]`` box in image pixels."""

    id: int
    name: str
    box: list[float]


@dataclass
class Selection:
    """Candidate rows and reject rows produced by one selector."""

    rows: list[CandidateRow] = field(default_factory=list)
    rejects: list[RejectRow] = field(default_factory=list)

    def extend(self, other: Selection) -> None:
        self.rows.extend(other.rows)
        self.rejects.extend(other.rejects)


class VGRows:
    """Builds candidate rows for Visual Genome images (path lookup, context, ids).

    Any source read into a :class:`Scan` reuses it: a subclass names its ``source`` and reject
    prefix ``ref`` and brings a locator with ``find(image_id, url)`` / ``candidates(image_id, url)``.
    """

    source = VG
    ref = "vg"

    def __init__(self, scan: Scan, locator: ImageLocator, context_limit: int):
        self.scan = scan
        self.index = ImageIndex(scan)
        self.locator = locator
        self.context_limit = context_limit
        self._paths: dict[int, str | None] = {}

    def image_path(self, iid: int, sel: Selection) -> str | None:
        """The image's file, or None after adding a ``missing_image`` reject (once per image)."""
        if iid not in self._paths:
            info = self.scan.images[iid]
            path = self.locator.find(iid, info.url)
            self._paths[iid] = path
            if path is None:
                sel.rejects.append(
                    reject(
                        f"{self.ref}:image:{iid}",
                        "mine",
                        "missing_image",
                        f"image {iid}: no file among {self.locator.candidates(iid, info.url)}",
                        {"image_id": iid, "url": info.url},
                    )
                )
        return self._paths[iid]

    def row(
        self,
        task: str,
        variant: str,
        iid: int,
        path: str,
        *,
        target: ObjectRef,
        partner: ObjectRef | None = None,
        id_parts: tuple[str | int, ...] = (),
        extra: dict[str, object] | None = None,
        **fields: object,
    ) -> CandidateRow:
        info = self.scan.images[iid]
        exclude = {target["id"]}
        attrs = self.index.attributes(iid)
        row: CandidateRow = {
            "id": stable_id(task, variant, self.source, iid, target["id"], *id_parts),
            "task": task,
            "variant": variant,
            "source": self.source,
            "image_id": str(iid),
            "image_path": path,
            "width": info.width,
            "height": info.height,
            "target_object_id": target["id"],
            "target_name": target["name"],
            "target_box": target["box"],
            "target_synset": self.index.synset(iid, target["id"]),
            "partner_object_id": partner["id"] if partner else None,
            "partner_name": partner["name"] if partner else None,
            "partner_box": partner["box"] if partner else None,
            "context_json": context_json(self.index.context(iid, exclude, self.context_limit, attrs)),
        }
        row.update(fields)
        ex = {"target_attributes": attrs.get(target["id"], []), "image_url": info.url}
        ex.update(extra or {})
        row["extra_json"] = canonical_json(ex)
        return row


def area_fraction(
    w: np.ndarray | float, h: np.ndarray | float, W: np.ndarray | float, H: np.ndarray | float
) -> np.ndarray | float:
    return (w * h) / (W * H)


def image_sizes(scan: Scan, img: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    W = (
        np.array([scan.images[int(i)].width for i in img], dtype=np.float64)
        if len(img) < 2000
        else _sizes_vec(scan, img, "width")
    )
    H = (
        np.array([scan.images[int(i)].height for i in img], dtype=np.float64)
        if len(img) < 2000
        else _sizes_vec(scan, img, "height")
    )
    return W, H


def _sizes_vec(scan: Scan, img: np.ndarray, attr: str) -> np.ndarray:
    ids = np.fromiter(scan.images.keys(), dtype=np.int64, count=len(scan.images))
    vals = np.fromiter((getattr(v, attr) for v in scan.images.values()), dtype=np.float64, count=len(scan.images))
    order = np.argsort(ids)
    return vals[order][np.searchsorted(ids[order], img)]
