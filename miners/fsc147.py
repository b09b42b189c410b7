"""FSC147 reader and the count-stratified selection that dense counting's miner calls (SPEC 3, DC).

Published files: ``annotation_FSC147_384.json`` (an object keyed by image file name, each
with ``H``, ``W``, ``points``, ``box_examples_coordinates`` (four corners per exemplar),
``ratio_h``/``ratio_w``, ``img_path``, ...), ``ImageClasses_FSC147.txt`` (file name TAB
class), ``Train_Test_Val_FSC_147.json`` (``train``/``val``/``test`` lists, plus others),
images in ``images_384_VarV2/``. The annotation file is ~30 MB, so it is decoded whole.

DC: count = number of points; keep counts inside ``count_range``; stratify over the
half-open bins given by consecutive ``bins`` edges (the last bin includes its upper edge)
and draw ``per_bin`` images per bin, seeded.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Protocol, TypedDict

import fsspec
import msgspec

from miners.candidates import FSC, Selection, seeded_names
from miners.jsonstream import decode_file, decode_part
from storage.hashing import canonical_json, stable_id
from storage.image_store import MAX_SOURCE_PIXELS, BadImage, decode_source
from storage.rejects import RejectRow, reject
from storage.rows import CandidateRow

ANNOTATIONS = "annotation_FSC147_384.json"
CLASSES = "ImageClasses_FSC147.txt"
SPLITS = "Train_Test_Val_FSC_147.json"
IMAGES = "images_384_VarV2"


class FSCAnnotation(msgspec.Struct, gc=False):
    H: int | None = None
    W: int | None = None
    points: list[list[float]] = []
    box_examples_coordinates: list[list[list[float]]] = []
    ratio_h: float | None = None
    ratio_w: float | None = None
    img_path: str | None = None


class CountingParams(Protocol):
    """What a count-stratified selection reads of a task's params (dense counting's section):
    the object counts kept, the bin edges, images per bin, and (FSC147) the splits drawn from."""

    count_range: tuple[int, int]
    bins: tuple[int, ...]
    per_bin: int
    splits: tuple[str, ...]


@dataclass(frozen=True)
class FSCData:
    root: str
    annotations: dict[str, FSCAnnotation]
    classes: dict[str, str]
    splits: dict[str, str]  # file name -> split
    problems: list[RejectRow]


def read_classes(path: str) -> tuple[dict[str, str], list[RejectRow]]:
    """``ImageClasses_FSC147.txt``: one ``<file>\\t<class>`` per line."""
    out: dict[str, str] = {}
    problems: list[RejectRow] = []
    with fsspec.open(path, "rb") as f:
        for n, bline in enumerate(f, 1):
            try:
                line = bline.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError as exc:
                problems.append(
                    reject(
                        f"fsc147:classes:{n}",
                        "mine",
                        "malformed_entry",
                        f"{path}: line {n}: invalid UTF-8 (byte 0x{bline[exc.start]:02x} at column {exc.start})",
                    )
                )
                continue
            if not line.strip():
                continue
            name, sep, cls = line.partition("\t")
            if not sep or not name.strip() or not cls.strip():
                problems.append(
                    reject(
                        f"fsc147:classes:{n}",
                        "mine",
                        "malformed_entry",
                        f"{path}: line {n}: expected '<file>\\t<class>', got {line[:80]!r}",
                    )
                )
                continue
            out[name.strip()] = cls.strip()
    return out, problems


def read_splits(path: str) -> dict[str, str]:
    data = decode_file(path, dict[str, list[str]])
    out: dict[str, str] = {}
    for split in ("train", "val", "test"):
        for name in data.get(split, []):
            out.setdefault(name, split)
    for split, names in sorted(data.items()):  # test_coco, val_coco, ...
        for name in names:
            out.setdefault(name, split)
    return out


def read_fsc147(root: str) -> FSCData:
    root = root.rstrip("/")
    ann = decode_file(posixpath.join(root, ANNOTATIONS), dict[str, msgspec.Raw])
    problems: list[RejectRow] = []
    annotations: dict[str, FSCAnnotation] = {}
    for name, raw in ann.items():
        got = decode_part(raw, FSCAnnotation)
        if isinstance(got, FSCAnnotation):
            annotations[name] = got
        else:  # the error message: wrong shape, or a string that is not UTF-8
            problems.append(
                reject(
                    f"fsc147:{name}",
                    "mine",
                    "malformed_entry",
                    f"{root}/{ANNOTATIONS}: {name}: {got}",
                )
            )
    classes, cproblems = read_classes(posixpath.join(root, CLASSES))
    problems += cproblems
    splits = read_splits(posixpath.join(root, SPLITS))
    return FSCData(root, annotations, classes, splits, problems)


def _exists(path: str) -> bool:
    fs, p = fsspec.core.url_to_fs(path)
    return fs.exists(p)


MAX_IMAGE_PIXELS = MAX_SOURCE_PIXELS  # the one limit of every source image (storage.image_store)


def _image_size(path: str) -> tuple[int, int]:
    """Width and height of a fully decodable image; ``BadImage`` (``storage.image_store``) otherwise."""
    with fsspec.open(path, "rb") as f:
        data = f.read()
    with decode_source(data, path) as im:
        return im.size


class SplitCounts(TypedDict):
    """Annotated FSC147 images per split, and how many lie outside the configured splits."""

    fsc_split_counts: dict[str, int]
    fsc_outside_splits: int


def split_counts(data: FSCData, splits: tuple[str, ...]) -> SplitCounts:
    """Annotated images per split and how many lie outside the configured ``splits``
    (``(none)``: listed in no split of the split file), so nothing is skipped unseen."""
    per: dict[str, int] = {}
    for name in data.annotations:
        key = data.splits.get(name, "(none)")
        per[key] = per.get(key, 0) + 1
    outside = sum(n for k, n in per.items() if k not in splits)
    return {"fsc_split_counts": dict(sorted(per.items())), "fsc_outside_splits": outside}


def bin_of(count: int, edges: tuple[int, ...]) -> int | None:
    for i in range(len(edges) - 1):
        last = i == len(edges) - 2
        if edges[i] <= count < edges[i + 1] or (last and count == edges[i + 1]):
            return i
    return None


def select(data: FSCData, params: CountingParams, seed: int, task: str) -> Selection:
    sel = Selection(rejects=list(data.problems))
    lo, hi = params.count_range
    bins: dict[int, list[str]] = {}
    for name in sorted(data.annotations):
        a = data.annotations[name]
        if data.splits.get(name) not in params.splits:
            continue  # counted by split_counts (the mine manifest's fsc147 section)
        if name not in data.classes:  # unusable whether drawn or not: reported, never drawn
            sel.rejects.append(
                reject(f"fsc147:{name}", "mine", "missing_class", f"{data.root}/{CLASSES}: no class line for {name}")
            )
            continue
        count = len(a.points)
        if not lo <= count <= hi:
            continue
        b = bin_of(count, params.bins)
        if b is None:
            continue
        bins.setdefault(b, []).append(name)
    for b in sorted(bins):
        chosen = 0
        for name in seeded_names(bins[b], seed, task, b):  # keyed by file name: new images never reorder the others
            if chosen >= params.per_bin:
                break
            row = _row(data, name, b, params, sel, task)
            if row is not None:
                sel.rows.append(row)
                chosen += 1
    return sel


def _row(data: FSCData, name: str, b: int, params: CountingParams, sel: Selection, task: str) -> CandidateRow | None:
    a = data.annotations[name]
    path = posixpath.join(data.root, IMAGES, name)
    if not _exists(path):
        sel.rejects.append(reject(f"fsc147:{name}", "mine", "missing_image", f"{path}: image file not found"))
        return None
    try:
        width, height = _image_size(path)
    except BadImage as exc:
        sel.rejects.append(
            reject(f"fsc147:{name}", "mine", "image_too_large" if exc.too_large else "unreadable_image", str(exc))
        )
        return None
    exemplars = []
    for corners in a.box_examples_coordinates:
        xs, ys = [c[0] for c in corners], [c[1] for c in corners]
        exemplars.append([min(xs), min(ys), max(xs) - min(xs), max(ys) - min(ys)])
    count = len(a.points)
    edges = params.bins
    extra = {
        "split": data.splits.get(name),
        "bin": [edges[b], edges[b + 1]],
        "exemplar_boxes": exemplars,
        "annotation_size": [a.W, a.H],
        "ratio": [a.ratio_w, a.ratio_h],
    }
    return {
        "id": stable_id(task, "targeted", FSC, name),
        "task": task,
        "variant": "targeted",
        "source": FSC,
        "image_id": name,
        "image_path": path,
        "width": width,
        "height": height,
        "count": count,
        "points": [[float(p[0]), float(p[1])] for p in a.points],
        "class_name": data.classes[name],
        "target_name": data.classes[name],
        "edit_type": "none",
        "fallback_chain": [],
        "context_json": canonical_json([]),
        "extra_json": canonical_json(extra),
    }
