"""One streaming pass per Visual Genome file into compact numpy columns.

Why columns: after one pass, every count the SPEC asks for (C(A), C(A∩B), P(a|o), ...) is a
``np.unique`` / ``np.bincount`` over integer arrays, and the candidates' context (other
objects, attributes, relations of an image) is a slice of the same arrays, so no file is
read twice. Python touches each annotation once, in list comprehensions; names become
integer ids through a memo of raw strings.

Validity is decided here, once, for every stage: malformed entries, unknown image ids,
empty boxes, boxes outside the image (beyond a tolerance) and duplicated object ids become
reject rows and are left out of every count and every candidate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np

from miners.canonical import Canonicalizer, PredicateCanonicalizer, basic_attribute
from miners.jsonstream import BadElement, gc_paused
from miners.vg_format import (
    ImageInfo,
    VGAttributed,
    VGObject,
    VGRelationship,
    decode_part,
    element_image_id,
    iter_elements,
    loose,
    object_id,
)
from storage.rejects import reject

STAGE = "mine"
Progress = Callable[[str, int], None]  # (file kind, elements done)


class Vocab:
    """Canonical strings <-> dense integer ids, with a memo from raw strings."""

    def __init__(self, canon: Callable[[str], str]):
        self.canon = canon
        self.names: list[str] = []
        self.ids: dict[str, int] = {}
        self.raw: dict[Any, int] = {None: -1, "": -1}

    def id_of_raw(self, raw: Any) -> int:
        got = self.raw.get(raw)
        if got is None:
            c = self.canon(raw) if isinstance(raw, str) else ""
            if not c:
                got = -1
            else:
                got = self.ids.get(c)
                if got is None:
                    got = self.ids[c] = len(self.names)
                    self.names.append(c)
            self.raw[raw] = got
        return got

    def map(self, raws: list[Any]) -> list[int]:
        try:
            return list(map(self.raw.__getitem__, raws))
        except KeyError:
            get = self.raw.get
            return [v if (v := get(r)) is not None else self.id_of_raw(r) for r in raws]

    def sorted_remap(self) -> np.ndarray:
        """Renumber ids in alphabetical order (so pair (a, b) with a < b reads naturally)."""
        order = sorted(range(len(self.names)), key=self.names.__getitem__)
        remap = np.empty(len(self.names) + 1, dtype=np.int64)
        remap[-1] = -1  # index -1 keeps meaning "no name"
        for new, old in enumerate(order):
            remap[old] = new
        self.names = [self.names[i] for i in order]
        self.ids = {n: i for i, n in enumerate(self.names)}
        self.raw = {}
        return remap


@dataclass
class Columns:
    """Growing lists of one table's columns; ``freeze`` turns them into numpy arrays."""

    names: tuple[str, ...]
    data: dict[str, list[Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.data = {n: [] for n in self.names}

    def freeze(self, dtypes: dict[str, Any]) -> dict[str, np.ndarray]:
        return {n: np.asarray(self.data[n], dtype=dtypes.get(n, np.float64)) for n in self.names}


OBJ_COLS = ("img", "oid", "nid", "x", "y", "w", "h")
REL_COLS = ("img", "rid", "pid", "s_oid", "s_nid", "sx", "sy", "sw", "sh", "o_oid", "o_nid", "ox", "oy", "ow", "oh")
INT_TYPES = {"img": np.int64, "oid": np.int64, "nid": np.int64, "rid": np.int64, "pid": np.int64, "s_oid": np.int64,
             "s_nid": np.int64, "o_oid": np.int64, "o_nid": np.int64, "inst": np.int64, "aid": np.int64}


@dataclass
class Scan:
    """Everything mining needs from Visual Genome, as columns plus vocabularies and rejects."""

    images: dict[int, ImageInfo]
    names: Vocab
    predicates: Vocab
    attributes: Vocab
    objects: dict[str, np.ndarray] | None = None  # OBJ_COLS + valid
    relations: dict[str, np.ndarray] | None = None  # REL_COLS + valid
    instances: dict[str, np.ndarray] | None = None  # OBJ_COLS + valid (from attributes.json)
    annotations: dict[str, np.ndarray] | None = None  # inst (row in instances), aid; deduplicated
    rejects: list[dict[str, Any]] = field(default_factory=list)
    tolerance: float = 0.02  # how far (fraction of the image side) a box may leave the image


def _rej(rejects: list, ref: str, reason: str, detail: str, payload: Any = None) -> None:
    rejects.append(reject(ref, STAGE, reason, detail, payload))


def _elements(path: str, kind: str, block: int, rejects: list, progress: Optional[Progress]):
    """(image_id, parts) per element; malformed parts and elements become rejects."""
    part_type = {"objects": VGObject, "attributes": VGAttributed, "relationships": VGRelationship}[kind]
    done = 0
    for batch in iter_elements(path, kind, block):
        for e in batch:
            if isinstance(e, BadElement):
                le = loose(e)
                parts_raw = getattr(le, kind) if le is not None else None
                if le is None or parts_raw is None:
                    _rej(rejects, f"vg:{kind}:@{e.offset}", "malformed_entry", f"{path}: element in the batch at byte {e.offset}: {e.error}", e.raw[:500].decode("utf-8", "replace"))
                    continue
                iid = element_image_id(le)
                parts = []
                for k, raw in enumerate(parts_raw):
                    got = decode_part(raw, part_type)
                    if isinstance(got, str):
                        _rej(rejects, f"vg:{kind}:{iid}:#{k}", "malformed_entry", f"{path}: image {iid}, {kind} entry {k}: {got}", bytes(raw)[:500].decode("utf-8", "replace"))
                    else:
                        parts.append(got)
                yield iid, parts
            else:
                yield element_image_id(e), getattr(e, kind)
        done += len(batch)
        if progress:
            progress(kind, done)


def _obj_columns(cols: Columns, iid: int, objs: list, vocab: Vocab, canon: Canonicalizer) -> None:
    d = cols.data
    n = len(objs)
    d["img"].extend([iid] * n)
    d["oid"].extend([o.object_id if o.object_id is not None else (o.id if o.id is not None else -1) for o in objs])
    if canon.mode == "synset":
        d["nid"].extend([_synset_id(vocab, canon, o) for o in objs])
    else:
        d["nid"].extend(vocab.map([o.names[0] if o.names else o.name for o in objs]))
    d["x"].extend([o.x for o in objs])
    d["y"].extend([o.y for o in objs])
    d["w"].extend([o.w for o in objs])
    d["h"].extend([o.h for o in objs])


def _synset_id(vocab: Vocab, canon: Canonicalizer, o: VGObject) -> int:
    raw = o.names[0] if o.names else o.name
    if o.synsets:
        key = ("synset", o.synsets[0])
        got = vocab.raw.get(key)
        if got is None:
            got = vocab.id_of_raw(canon.object_name(raw or "", o.synsets))
            vocab.raw[key] = got
        return got
    return vocab.id_of_raw(raw)


def scan_objects(path: str, kind: str, scan: Scan, canon: Canonicalizer, block: int, progress: Optional[Progress] = None) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray] | None]:
    """objects.json or attributes.json -> object columns (and, for attributes, annotation columns)."""
    cols = Columns(OBJ_COLS)
    ann_inst: list[int] = []
    ann_raw: list[Any] = []
    with gc_paused():
        for iid, objs in _elements(path, kind, block, scan.rejects, progress):
            if iid is None:
                _rej(scan.rejects, f"vg:{kind}:?", "malformed_entry", f"{path}: an element has no image_id ({len(objs)} {kind})")
                continue
            if iid not in scan.images:
                _rej(scan.rejects, f"vg:{kind}:{iid}", "unknown_image_id", f"{path}: image_id {iid} is not in image_data.json ({len(objs)} {kind} skipped)")
                continue
            if kind == "attributes":
                base = len(cols.data["img"])
                for k, o in enumerate(objs):
                    if o.attributes:
                        ann_inst.extend([base + k] * len(o.attributes))
                        ann_raw.extend(o.attributes)
            _obj_columns(cols, iid, objs, scan.names, canon)
    table = cols.freeze(INT_TYPES)
    table["valid"] = _validate_objects(table, scan, kind, path)
    if kind != "attributes":
        return table, None
    aids = np.asarray(scan.attributes.map(ann_raw), dtype=np.int64)
    inst = np.asarray(ann_inst, dtype=np.int64)
    keep = aids >= 0
    key = np.unique(inst[keep] * (len(scan.attributes.names) + 1) + aids[keep])
    ann = {"inst": key // (len(scan.attributes.names) + 1), "aid": key % (len(scan.attributes.names) + 1)}
    return table, ann


def _image_sizes(img: np.ndarray, images: dict[int, ImageInfo]) -> tuple[np.ndarray, np.ndarray]:
    ids = np.fromiter(images.keys(), dtype=np.int64, count=len(images))
    order = np.argsort(ids)
    ids = ids[order]
    ws = np.fromiter((i.width for i in images.values()), dtype=np.float64, count=len(images))[order]
    hs = np.fromiter((i.height for i in images.values()), dtype=np.float64, count=len(images))[order]
    pos = np.searchsorted(ids, img)
    return ws[pos], hs[pos]


def box_problems(x, y, w, h, W, H, tol: float) -> tuple[np.ndarray, np.ndarray]:
    """(malformed, empty, outside) masks for boxes; ``tol`` is a fraction of the image side."""
    bad = np.isnan(x) | np.isnan(y) | np.isnan(w) | np.isnan(h)
    with np.errstate(invalid="ignore"):
        empty = ~bad & ((w <= 0) | (h <= 0))
        outside = ~bad & ~empty & ((x < -tol * W) | (y < -tol * H) | (x + w > W * (1 + tol)) | (y + h > H * (1 + tol)))
    return bad, empty, outside


def _validate_objects(t: dict[str, np.ndarray], scan: Scan, kind: str, path: str) -> np.ndarray:
    n = len(t["img"])
    if n == 0:
        return np.zeros(0, dtype=bool)
    W, H = _image_sizes(t["img"], scan.images)
    bad, empty, outside = box_problems(t["x"], t["y"], t["w"], t["h"], W, H, scan.tolerance)
    bad |= (t["oid"] < 0) | (t["nid"] < 0)
    order = np.lexsort((np.arange(n), t["oid"], t["img"]))
    dup_sorted = np.zeros(n, dtype=bool)
    dup_sorted[1:] = (t["img"][order][1:] == t["img"][order][:-1]) & (t["oid"][order][1:] == t["oid"][order][:-1])
    dup = np.zeros(n, dtype=bool)
    dup[order] = dup_sorted
    valid = ~(bad | empty | outside | dup)
    for i in np.flatnonzero(~valid):
        iid, oid = int(t["img"][i]), int(t["oid"][i])
        box = [float(t[c][i]) for c in ("x", "y", "w", "h")]
        payload = {"image_id": iid, "object_id": oid, "box": box}
        ref = f"vg:{kind}:{iid}:{oid}"
        if bad[i]:
            what = "no object id" if oid < 0 else ("no usable name" if t["nid"][i] < 0 else "a missing coordinate")
            _rej(scan.rejects, ref, "malformed_entry", f"{path}: image {iid} object {oid}: {what}", payload)
        elif empty[i]:
            _rej(scan.rejects, ref, "box_empty", f"{path}: image {iid} object {oid}: box {box} has zero size", payload)
        elif outside[i]:
            info = scan.images[iid]
            _rej(scan.rejects, ref, "box_outside_image", f"{path}: image {iid} object {oid}: box {box} leaves the {info.width}x{info.height} image", payload)
        else:
            _rej(scan.rejects, ref, "duplicate_object_id", f"{path}: image {iid}: object id {oid} appears more than once (first kept)", payload)
    return valid


def scan_relationships(path: str, scan: Scan, canon: Canonicalizer, preds: PredicateCanonicalizer, block: int, progress: Optional[Progress] = None) -> dict[str, np.ndarray]:
    cols = Columns(REL_COLS)
    d = cols.data
    names = scan.names
    synset_mode = canon.mode == "synset"
    with gc_paused():
        for iid, rels in _elements(path, "relationships", block, scan.rejects, progress):
            if iid is None or iid not in scan.images:
                reason = "malformed_entry" if iid is None else "unknown_image_id"
                _rej(scan.rejects, f"vg:relationships:{iid}", reason, f"{path}: image_id {iid} is not in image_data.json ({len(rels)} relationships skipped)")
                continue
            n = len(rels)
            d["img"].extend([iid] * n)
            d["rid"].extend([r.relationship_id if r.relationship_id is not None else (r.id if r.id is not None else -1) for r in rels])
            d["pid"].extend(scan.predicates.map([r.predicate for r in rels]))
            subs = [r.subject for r in rels]
            objs = [r.object for r in rels]
            for prefix, ends in (("s", subs), ("o", objs)):
                d[f"{prefix}_oid"].extend([object_id(e) if object_id(e) is not None else -1 for e in ends])
                if synset_mode:
                    d[f"{prefix}_nid"].extend([_synset_id(names, canon, e) for e in ends])
                else:
                    d[f"{prefix}_nid"].extend(names.map([e.names[0] if e.names else e.name for e in ends]))
                d[f"{prefix}x"].extend([e.x for e in ends])
                d[f"{prefix}y"].extend([e.y for e in ends])
                d[f"{prefix}w"].extend([e.w for e in ends])
                d[f"{prefix}h"].extend([e.h for e in ends])
    t = cols.freeze(INT_TYPES)
    t["valid"] = _validate_relations(t, scan, path)
    return t


def _validate_relations(t: dict[str, np.ndarray], scan: Scan, path: str) -> np.ndarray:
    n = len(t["img"])
    if n == 0:
        return np.zeros(0, dtype=bool)
    W, H = _image_sizes(t["img"], scan.images)
    tol = scan.tolerance
    sb, se, so = box_problems(t["sx"], t["sy"], t["sw"], t["sh"], W, H, tol)
    ob, oe, oo = box_problems(t["ox"], t["oy"], t["ow"], t["oh"], W, H, tol)
    bad = sb | ob | (t["s_nid"] < 0) | (t["o_nid"] < 0) | (t["pid"] < 0) | (t["s_oid"] < 0) | (t["o_oid"] < 0)
    empty = ~bad & (se | oe)
    outside = ~bad & ~empty & (so | oo)
    valid = ~(bad | empty | outside)
    for i in np.flatnonzero(~valid):
        iid, rid = int(t["img"][i]), int(t["rid"][i])
        ref = f"vg:relationships:{iid}:{rid}"
        payload = {"image_id": iid, "relationship_id": rid, "subject": [float(t[c][i]) for c in ("sx", "sy", "sw", "sh")], "object": [float(t[c][i]) for c in ("ox", "oy", "ow", "oh")]}
        if bad[i]:
            _rej(scan.rejects, ref, "malformed_entry", f"{path}: image {iid} relationship {rid}: missing name, predicate, object id or coordinate", payload)
        elif empty[i]:
            _rej(scan.rejects, ref, "box_empty", f"{path}: image {iid} relationship {rid}: an end has a zero-size box", payload)
        else:
            _rej(scan.rejects, ref, "box_outside_image", f"{path}: image {iid} relationship {rid}: an end's box leaves the image", payload)
    return valid


def new_scan(images: dict[int, ImageInfo], canon: Canonicalizer, preds: PredicateCanonicalizer, tolerance: float) -> Scan:
    return Scan(images, Vocab(canon.name), Vocab(preds), Vocab(basic_attribute), tolerance=tolerance)


def finish_scan(scan: Scan) -> None:
    """Renumber names, predicates and attributes alphabetically (deterministic, readable order)."""
    remap = scan.names.sorted_remap()
    for table, cols in ((scan.objects, ("nid",)), (scan.instances, ("nid",)), (scan.relations, ("s_nid", "o_nid"))):
        if table is not None:
            for c in cols:
                table[c] = remap[table[c]]
    premap = scan.predicates.sorted_remap()
    if scan.relations is not None:
        scan.relations["pid"] = premap[scan.relations["pid"]]
    amap = scan.attributes.sorted_remap()
    if scan.annotations is not None:
        scan.annotations["aid"] = amap[scan.annotations["aid"]]
        order = np.lexsort((scan.annotations["aid"], scan.annotations["inst"]))
        scan.annotations = {k: v[order] for k, v in scan.annotations.items()}
