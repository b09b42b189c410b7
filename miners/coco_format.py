"""Reader of COCO-format instance annotations (COCO 2014/2017, LVIS v1, and the many detection
sets that ship in this format) into validated images, categories and annotations.

Published shape: one JSON object with ``images`` (``id``, ``width``, ``height``, ``file_name``;
LVIS gives ``coco_url`` instead of a file name and adds ``not_exhaustive_category_ids`` and
``neg_category_ids``), ``annotations`` (``id``, ``image_id``, ``category_id``, ``bbox`` as
``[x, y, w, h]``, ``area``, ``iscrowd``, ``segmentation``: polygons, or RLE when ``iscrowd`` is 1)
and ``categories`` (non-contiguous ``id``s, ``name``, ``supercategory``; LVIS adds ``synonyms``,
``frequency``, ``synset``, ``def``). Masks are not decoded: the miners need boxes only.

Why entry by entry: the file is decoded whole, but each entry is validated on its own, so one
bad row becomes a reject naming the file and the entry (image / annotation / category id)
instead of failing the source.
"""

from __future__ import annotations

import math
import posixpath
from dataclasses import dataclass, field
from typing import TypeVar

import msgspec

from miners.jsonstream import decode_file, decode_part
from storage.rejects import RejectRow, reject

T = TypeVar("T")

STAGE = "mine"


class CocoImage(msgspec.Struct, gc=False):
    id: int
    width: int
    height: int
    file_name: str | None = None
    coco_url: str | None = None
    not_exhaustive_category_ids: list[int] = []
    neg_category_ids: list[int] = []


class CocoCategory(msgspec.Struct, gc=False):
    id: int
    name: str
    supercategory: str | None = None
    synonyms: list[str] = []
    frequency: str | None = None
    synset: str | None = None


class CocoAnnotation(msgspec.Struct, gc=False):
    id: int
    image_id: int
    category_id: int
    bbox: list[float]
    iscrowd: int = 0  # LVIS has no crowd regions and omits the key


class _File(msgspec.Struct):
    images: list[msgspec.Raw]
    categories: list[msgspec.Raw]
    annotations: list[msgspec.Raw] = []


@dataclass
class CocoData:
    """The valid entries of one file; crowd regions apart from countable objects."""

    path: str
    images: dict[int, CocoImage]
    categories: dict[int, CocoCategory]
    objects: list[CocoAnnotation] = field(default_factory=list)  # iscrowd 0, box inside the image
    crowds: list[CocoAnnotation] = field(default_factory=list)  # iscrowd 1: a region of many instances
    rejects: list[RejectRow] = field(default_factory=list)

    def class_name(self, category_id: int) -> str:
        """The category's name as a phrase: LVIS writes ``baseball_bat``, COCO ``baseball bat``."""
        return self.categories[category_id].name.replace("_", " ").strip().lower()

    def image_file(self, image_id: int) -> str:
        """The image's file name: ``file_name``, else the last part of ``coco_url`` (LVIS)."""
        img = self.images[image_id]
        return img.file_name or posixpath.basename(img.coco_url or "")


class _EntryId(msgspec.Struct):
    """Only an entry's ``id``: its other fields are skipped, so a bad string elsewhere in the
    entry does not hide the id that its reject should name."""

    id: int | str | None = None


def _entry_id(raw: msgspec.Raw) -> object:
    try:
        return msgspec.json.decode(raw, type=_EntryId).id
    except (msgspec.DecodeError, UnicodeDecodeError):
        return None


def _decode(raw: msgspec.Raw, type_: type[T], what: str, k: int, path: str, rejects: list[RejectRow]) -> T | None:
    """One entry, or None after a ``malformed_entry`` reject naming the file and the entry."""
    got = decode_part(raw, type_)
    if isinstance(got, type_):
        return got
    # got is the error message: wrong shape, or a string that is not UTF-8
    eid = _entry_id(raw)
    label = f"{what} {eid}" if eid is not None else f"{what} #{k} (no id)"
    rejects.append(
        reject(
            f"coco:{what}:{eid if eid is not None else f'#{k}'}",
            STAGE,
            "malformed_entry",
            f"{path}: {label}: {got}",
            bytes(raw)[:500].decode("utf-8", "replace"),
        )
    )
    return None


def _images(path: str, raws: list[msgspec.Raw], rejects: list) -> dict[int, CocoImage]:
    out: dict[int, CocoImage] = {}
    for k, raw in enumerate(raws):
        img = _decode(raw, CocoImage, "image", k, path, rejects)
        if img is None:
            continue
        ref = f"coco:image:{img.id}"
        if img.id in out:
            rejects.append(
                reject(
                    ref, STAGE, "duplicate_image_id", f"{path}: image {img.id} is listed more than once (first kept)"
                )
            )
        elif img.width <= 0 or img.height <= 0:
            rejects.append(
                reject(ref, STAGE, "malformed_image_entry", f"{path}: image {img.id}: size {img.width}x{img.height}")
            )
        elif not (img.file_name or img.coco_url):
            rejects.append(
                reject(
                    ref,
                    STAGE,
                    "malformed_image_entry",
                    f"{path}: image {img.id}: neither file_name nor coco_url names its file",
                )
            )
        else:
            out[img.id] = img
    return out


def _categories(path: str, raws: list[msgspec.Raw], rejects: list) -> dict[int, CocoCategory]:
    out: dict[int, CocoCategory] = {}
    for k, raw in enumerate(raws):
        cat = _decode(raw, CocoCategory, "category", k, path, rejects)
        if cat is None:
            continue
        if cat.id in out:
            rejects.append(
                reject(
                    f"coco:category:{cat.id}",
                    STAGE,
                    "malformed_entry",
                    f"{path}: category {cat.id} is listed more than once (first kept)",
                )
            )
        elif not cat.name.strip():
            rejects.append(
                reject(
                    f"coco:category:{cat.id}", STAGE, "malformed_entry", f"{path}: category {cat.id} has an empty name"
                )
            )
        else:
            out[cat.id] = cat
    return out


def box_problem(box: list[float], width: int, height: int, tolerance: float) -> tuple[str, str] | None:
    """(reject reason, what is wrong) for a bad ``[x, y, w, h]``, None for a usable box; the
    same codes and tolerance as the Visual Genome scan."""
    if len(box) != 4 or not all(math.isfinite(v) for v in box):
        return "malformed_entry", f"bbox {box} is not four finite numbers"
    x, y, w, h = box
    if w <= 0 or h <= 0:
        return "box_empty", f"bbox {box} has no area"
    if (
        x < -tolerance * width
        or y < -tolerance * height
        or x + w > width * (1 + tolerance)
        or y + h > height * (1 + tolerance)
    ):
        return "box_outside_image", f"bbox {box} leaves the {width}x{height} image"
    return None


def read_coco(path: str, tolerance: float = 0.02) -> CocoData:
    """Decode and validate one instances file; every unusable entry becomes a reject."""
    top = decode_file(path, _File)
    rejects: list[RejectRow] = []
    data = CocoData(
        path, _images(path, top.images, rejects), _categories(path, top.categories, rejects), rejects=rejects
    )
    seen: set[int] = set()
    for k, raw in enumerate(top.annotations):
        ann = _decode(raw, CocoAnnotation, "annotation", k, path, rejects)
        if ann is None:
            continue
        ref = f"coco:annotation:{ann.id}"
        where = f"{path}: annotation {ann.id} (image {ann.image_id})"
        if ann.id in seen:
            rejects.append(
                reject(ref, STAGE, "duplicate_object_id", f"{where}: annotation id listed more than once (first kept)")
            )
            continue
        seen.add(ann.id)
        if ann.image_id not in data.images:
            rejects.append(
                reject(
                    ref,
                    STAGE,
                    "unknown_image_id",
                    f"{where}: image_id {ann.image_id} is not among the file's usable images",
                )
            )
            continue
        if ann.category_id not in data.categories:
            rejects.append(
                reject(
                    ref, STAGE, "unknown_category_id", f"{where}: category_id {ann.category_id} is not in categories"
                )
            )
            continue
        img = data.images[ann.image_id]
        problem = box_problem(ann.bbox, img.width, img.height, tolerance)
        if problem is not None:
            rejects.append(reject(ref, STAGE, problem[0], f"{where}: {problem[1]}"))
            continue
        (data.crowds if ann.iscrowd else data.objects).append(ann)
    return data
