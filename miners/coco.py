"""The COCO-format source: candidates from one instances file (COCO, LVIS, ...) for every
requested task whose spec has a ``coco`` miner (the built-ins: RE, AT and DC, each in its own
package ``tasks/builtin_tasks/<id>/miner.py``).

The file is read once into a :class:`Scan` (objects, and co-occurrence links as relations) and a
:class:`CocoRows` (which also holds the parsed file, ``rows.data``, and the unsafe classes per
image, ``rows.unsure``); each task's miner gets both (``miners/dispatch.py``).

How each built-in task reads it:
- RE: COCO has no relationships, so the pair statistics count co-occurrence. Each image links
  every two categories present in it once (the largest instance of each, predicate ``with``);
  with ``count_unit: images`` C(A∩B) is then the number of images holding both and the same
  pair table of RE's miner applies the same N_min / θ rule as for Visual Genome.
- AT: the objects and boxes, through the same selection as on Visual Genome.
- DC: the count of one category in an image (non-crowd annotations), points at the box centres,
  stratified over the DC section's ``bins`` like FSC147 (its ``splits`` do not apply;
  :func:`select_counting`, which DC's miner calls); the
  instruct stage's ambiguity filter then judges them like FSC147's.

What makes a count or an absence claim unsafe, and is therefore not used: a crowd region
(``iscrowd: 1``) of the class (an image with one is ``ambiguous_count`` for DC), and a class in
the image's ``not_exhaustive_category_ids`` (LVIS: not every instance was boxed). Such a class is
never counted nor chosen as the object to erase or alter in that image; the statistics still
see its annotated instances, which are present whatever else is missing. LVIS's
``neg_category_ids`` (verified absent), and a class's ``synonyms`` and ``frequency``, are carried
in each candidate's ``extra_json``.
"""

from __future__ import annotations

import dataclasses
import posixpath
import re
from collections import defaultdict
from collections.abc import Sequence

import fsspec
import numpy as np

from miners.candidates import COCO as SOURCE
from miners.candidates import ObjectRef, Selection, VGRows, seeded_names
from miners.coco_format import CocoData, read_coco
from miners.config import MineSettings
from miners.dispatch import TaskMiner, requested_miners, run_miners
from miners.fsc147 import CountingParams, bin_of
from miners.result import MineResult
from miners.sources import SourceSpec
from miners.vg_format import ImageInfo
from miners.vg_scan import Progress, Scan, Vocab
from storage.hashing import canonical_json, stable_id
from storage.rejects import reject
from storage.rows import CandidateRow

PREDICATE = "with"


class CocoLocator:
    """Finds an image file: the folder the annotation file names (``instances_val2017.json`` ->
    ``val2017/``), the folder of its ``coco_url``, ``images/``, beside ``annotations/``."""

    def __init__(self, data: CocoData):
        self.data = data
        ann_dir = posixpath.dirname(data.path)
        base = posixpath.dirname(ann_dir) if posixpath.basename(ann_dir) == "annotations" else ann_dir
        split = re.match(r"(?:instances|lvis_v\d+)_(\w+)\.json$", posixpath.basename(data.path))
        folders = ([posixpath.join(base, split.group(1))] if split else []) + [
            posixpath.join(base, "images"),
            base,
            ann_dir,
        ]
        self.base, self.folders = base, list(dict.fromkeys(folders))
        self._local = "://" not in data.path

    def candidates(self, image_id: int, url: str | None) -> list[str]:
        name = self.data.image_file(image_id)
        img = self.data.images[image_id]
        out = (
            [posixpath.join(self.base, posixpath.basename(posixpath.dirname(img.coco_url)), name)]
            if img.coco_url
            else []
        )
        return list(dict.fromkeys(out + [posixpath.join(f, name) for f in self.folders]))

    def find(self, image_id: int, url: str | None) -> str | None:
        for c in self.candidates(image_id, url):
            fs, p = fsspec.core.url_to_fs(c)
            if fs.exists(p) and (not self._local or fs.isfile(p)):
                return c
        return None


class CocoRows(VGRows):
    """Candidate rows for COCO-format images: VG's row layout, plus what the file says per image."""

    source = SOURCE
    ref = "coco"

    def __init__(self, scan: Scan, data: CocoData, context_limit: int):
        # co-occurrence links are statistics, not scene facts: the context lists no relations
        super().__init__(dataclasses.replace(scan, relations=None), CocoLocator(data), context_limit)
        self.data = data
        self.unsure = unsure_classes(data)  # (image id, class name) -> why a claim about it is unsafe

    def row(
        self,
        task: str,
        variant: str,
        iid: int,
        path: str,
        *,
        target: ObjectRef,
        extra: dict[str, object] | None = None,
        **kw: object,
    ) -> CandidateRow:
        notes = {**image_notes(self.data, iid), **class_notes(self.data, target["name"])}
        return super().row(task, variant, iid, path, target=target, extra={**notes, **(extra or {})}, **kw)


def image_notes(data: CocoData, iid: int) -> dict[str, str | list[str]]:
    """What a candidate carries about its image: the file name and LVIS's per-image lists (as names)."""
    img = data.images[iid]
    notes: dict[str, str | list[str]] = {"file_name": data.image_file(iid)}
    for key, ids in (("verified_absent", img.neg_category_ids), ("not_exhaustive", img.not_exhaustive_category_ids)):
        names = sorted({data.class_name(c) for c in ids if c in data.categories})
        if names:
            notes[key] = names
    return notes


def class_notes(data: CocoData, name: str) -> dict[str, list[str] | str | None]:
    """LVIS's other names and frequency group (r / c / f) of a class, when the file gives them."""
    for cat in data.categories.values():
        if data.class_name(cat.id) == name and (cat.synonyms or cat.frequency):
            synonyms = sorted({s.replace("_", " ").strip().lower() for s in cat.synonyms} - {name})
            return {"class_synonyms": synonyms, "class_frequency": cat.frequency}
    return {}


def unsure_classes(data: CocoData) -> dict[tuple[int, str], str]:
    """(image id, class name) -> reason a count or absence claim about that class is unsafe there."""
    out: dict[tuple[int, str], str] = {}
    for iid, img in data.images.items():
        for c in img.not_exhaustive_category_ids:
            if c in data.categories:
                out[(iid, data.class_name(c))] = "not_exhaustive_class"
    for a in data.crowds:
        out.setdefault((a.image_id, data.class_name(a.category_id)), "crowd_of_class")
    return out


def coco_scan(data: CocoData, tolerance: float) -> Scan:
    """The file as the columns the VG miners read: objects, and one co-occurrence link per
    (image, pair of classes present)."""
    names = sorted({data.class_name(c) for c in data.categories})
    vocab = Vocab(lambda s: s)
    for n in names:
        vocab.id_of_class(n)
    preds = Vocab(lambda s: s)
    preds.id_of_class(PREDICATE)
    images = {iid: ImageInfo(img.width, img.height, img.coco_url or img.file_name) for iid, img in data.images.items()}
    scan = Scan(images, vocab, preds, Vocab(lambda s: s), rejects=list(data.rejects), tolerance=tolerance)
    objs = sorted(data.objects, key=lambda a: (a.image_id, a.id))
    nid = np.array([vocab.ids[data.class_name(a.category_id)] for a in objs], dtype=np.int64)
    boxes = np.array([a.bbox for a in objs], dtype=np.float64).reshape(-1, 4)
    scan.objects = {
        "img": np.array([a.image_id for a in objs], dtype=np.int64),
        "oid": np.array([a.id for a in objs], dtype=np.int64),
        "nid": nid,
        **{c: boxes[:, j].copy() for j, c in enumerate("xywh")},
        "valid": np.ones(len(objs), dtype=bool),
    }
    scan.relations = _links(scan.objects)
    return scan


def _links(o: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Per image, every two classes present linked once through their largest instances."""
    best: dict[tuple[int, int], int] = {}  # (image, class) -> row of its largest instance (ties: lowest id)
    area = o["w"] * o["h"]
    for row in np.lexsort((o["oid"], -area, o["nid"], o["img"])).tolist():
        best.setdefault((int(o["img"][row]), int(o["nid"][row])), row)
    per_image: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for (iid, nid), row in best.items():
        per_image[iid].append((nid, row))
    s_rows, o_rows, imgs = [], [], []
    for iid in sorted(per_image):
        present = sorted(per_image[iid])
        for i, (_, s) in enumerate(present):
            for _, t in present[i + 1 :]:
                s_rows.append(s)
                o_rows.append(t)
                imgs.append(iid)
    s_idx, o_idx = np.array(s_rows, dtype=np.int64), np.array(o_rows, dtype=np.int64)
    t = {
        "img": np.array(imgs, dtype=np.int64),
        "rid": np.arange(len(imgs), dtype=np.int64),
        "pid": np.zeros(len(imgs), dtype=np.int64),
    }
    for end, idx in (("s", s_idx), ("o", o_idx)):
        t[f"{end}_oid"], t[f"{end}_nid"] = o["oid"][idx], o["nid"][idx]
        for c in "xywh":
            t[f"{end}{c}"] = o[c][idx]
    t["valid"] = np.ones(len(imgs), dtype=bool)
    return t


def drop_unsure(sel: Selection, unsure: dict[tuple[int, str], str], path: str) -> Selection:
    """Candidates whose erased / altered class may have unannotated instances become rejects."""
    out = Selection(rejects=list(sel.rejects))
    for row in sel.rows:
        reason = unsure.get((int(row["image_id"]), row["target_name"]))
        if reason is None:
            out.rows.append(row)
        else:
            out.rejects.append(
                reject(
                    f"coco:image:{row['image_id']}",
                    "mine",
                    reason,
                    f"{path}: image {row['image_id']}: {row['target_name']!r} may have unannotated instances ({reason}); "
                    f"not used as the {row['task']} target",
                )
            )
    return out


def select_counting(
    data: CocoData,
    params: CountingParams,
    seed: int,
    locator: CocoLocator,
    unsure: dict[tuple[int, str], str],
    task: str,
) -> tuple[Selection, int]:
    """DC candidates: (image, class) counts inside ``count_range``, drawn ``per_bin`` per bin;
    also the number of counts left out because the class is not exhaustively annotated there."""
    sel = Selection()
    boxes: dict[tuple[int, str], list[list[float]]] = defaultdict(list)
    for a in sorted(data.objects, key=lambda a: a.id):
        boxes[(a.image_id, data.class_name(a.category_id))].append([float(v) for v in a.bbox])
    lo, hi = params.count_range
    bins: dict[int, list[str]] = defaultdict(list)
    keys: dict[str, tuple[int, str]] = {}
    not_exhaustive = 0
    for (iid, name), bs in sorted(boxes.items()):
        b = bin_of(len(bs), params.bins) if lo <= len(bs) <= hi else None
        if b is None:
            continue
        reason = unsure.get((iid, name))
        if reason == "not_exhaustive_class":
            not_exhaustive += 1
            continue
        if reason == "crowd_of_class":
            sel.rejects.append(
                reject(
                    f"coco:image:{iid}",
                    "mine",
                    "ambiguous_count",
                    f"{data.path}: image {iid}: a crowd region of {name!r} holds uncounted instances",
                )
            )
            continue
        key = f"{iid}:{name}"
        keys[key] = (iid, name)
        bins[b].append(key)
    for b in sorted(bins):
        chosen = 0
        for key in seeded_names(bins[b], seed, task, SOURCE, b):
            if chosen >= params.per_bin:
                break
            iid, name = keys[key]
            path = locator.find(iid, None)
            if path is None:
                sel.rejects.append(
                    reject(
                        f"coco:image:{iid}",
                        "mine",
                        "missing_image",
                        f"image {iid}: no file among {locator.candidates(iid, None)}",
                    )
                )
                continue
            sel.rows.append(
                _count_row(data, iid, name, boxes[(iid, name)], path, [params.bins[b], params.bins[b + 1]], task)
            )
            chosen += 1
    return sel, not_exhaustive


def _count_row(
    data: CocoData, iid: int, name: str, bs: list[list[float]], path: str, edges: list[int], task: str
) -> CandidateRow:
    img = data.images[iid]
    extra = {
        "bin": edges,
        "exemplar_boxes": bs[:3],
        "point_rule": "box_centre",
        **image_notes(data, iid),
        **class_notes(data, name),
    }
    return {
        "id": stable_id(task, "targeted", SOURCE, iid, name),
        "task": task,
        "variant": "targeted",
        "source": SOURCE,
        "image_id": str(iid),
        "image_path": path,
        "width": img.width,
        "height": img.height,
        "count": len(bs),
        "points": [[x + w / 2, y + h / 2] for x, y, w, h in bs],
        "class_name": name,
        "target_name": name,
        "edit_type": "none",
        "fallback_chain": [],
        "context_json": canonical_json([]),
        "extra_json": canonical_json(extra),
    }


def mine_coco(
    path: str,
    cfg: MineSettings,
    seed: int,
    progress: Progress | None = None,
    miners: Sequence[TaskMiner] | None = None,
) -> MineResult:
    """Candidates (and for RE the pair statistics) of every requested task with a ``coco`` miner
    (``miners`` as the mine stage hands them down; None looks them up)."""
    miners = requested_miners(SOURCE, cfg, miners)
    result = MineResult()
    if not miners:
        return result
    data = read_coco(path, cfg.box_tolerance)
    scan = coco_scan(data, cfg.box_tolerance)
    result.rejects.extend(scan.rejects)
    rows = CocoRows(scan, data, cfg.context_max_objects)
    run_miners(SOURCE, miners, scan, rows, cfg, seed, result)
    result.summary.update(
        {
            "images": len(data.images),
            "objects": len(data.objects),
            "crowd_regions": len(data.crowds),
            "classes": len(scan.names.names),
        }
    )
    return result.finish()


def _files(path: str, cfg: MineSettings) -> list[str]:
    return [path]


COCO = SourceSpec(
    name=SOURCE,
    format="COCO-format instances JSON (COCO 2014/2017, LVIS v1, ...)",
    yields=frozenset({"images", "objects"}),
    setting_help="an instances JSON such as annotations/instances_val2017.json",
    files=_files,
    required=_files,
    mine=mine_coco,
    manifest=lambda result: result.source_summary(SOURCE),
)
