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

from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import chain
from operator import attrgetter

import numpy as np

from miners import npx
from miners.canonical import Canonicalizer, NameMerges, PredicateCanonicalizer
from miners.jsonstream import BadElement, decode_part, gc_paused
from miners.vg_format import (
    ImageInfo,
    VGAttributed,
    VGObject,
    VGRelationship,
    element_image_id,
    iter_elements,
    loose,
    object_raw_name,
)
from storage.annotation.names import basic_attribute
from storage.rejects import RejectRow, reject

STAGE = "mine"
Progress = Callable[[str, int], None]  # (file kind, elements done)


class Vocab:
    """Canonical strings <-> dense integer ids, with a memo from raw strings."""

    def __init__(self, canon: Callable[[str], str]):
        self.canon = canon
        self.names: list[str] = []
        self.ids: dict[str, int] = {}
        self.raw: dict[str | None, int] = {None: -1, "": -1}

    def id_of_raw(self, raw: str | None) -> int:
        got = self.raw.get(raw)
        if got is None:
            got = self.raw[raw] = self.id_of_class(self.canon(raw) if isinstance(raw, str) else "")
        return got

    def id_of_class(self, c: str) -> int:
        """Id of an already canonical string (canonical forms are not canonicalised again:
        a synset lemma such as "spectacles" must not be singularised)."""
        if not c:
            return -1
        got = self.ids.get(c)
        if got is None:
            got = self.ids[c] = len(self.names)
            self.names.append(c)
        return got

    def map(self, raws: list[str | None]) -> list[int]:
        """Ids of many raw strings: one dict probe each; new strings are canonicalised once."""
        get = self.raw.get
        out = [get(r, -2) for r in raws]
        if -2 in out:
            for i, v in enumerate(out):
                if v == -2:
                    r = raws[i]
                    out[i] = self.id_of_raw(r) if isinstance(r, str) or r is None else -1
        return out

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
class Scan:
    """Everything mining needs from Visual Genome, as columns plus vocabularies and rejects."""

    images: dict[int, ImageInfo]
    names: Vocab
    predicates: Vocab
    attributes: Vocab
    objects: dict[str, np.ndarray] | None = None  # img, oid, nid, sid, x, y, w, h, valid
    relations: dict[str, np.ndarray] | None = None  # img, rid, pid, s_/o_ oid, nid, x, y, w, h; valid
    instances: dict[str, np.ndarray] | None = None  # img, oid, nid, x, y, w, h, valid (from attributes.json)
    annotations: dict[str, np.ndarray] | None = None  # inst (row in instances), aid; deduplicated
    rejects: list[RejectRow] = field(default_factory=list)
    tolerance: float = 0.02  # how far (fraction of the image side) a box may leave the image
    readers: dict[str, str] = field(default_factory=dict)  # file kind -> reader that produced its columns
    canonical: NameMerges | None = None  # what each naming rule merged (Canonicalizer.merges)
    # first WordNet synset of each object (``objects["sid"]``, -1 for none): candidates carry it, so
    # "rock" and "stone" annotating one kind of thing are told to be one class (storage.annotation.names.same_class)
    synsets: Vocab = field(default_factory=lambda: Vocab(_synset_form))


def _synset_form(raw: str) -> str:
    return raw.strip().lower()


VGPart = VGObject | VGRelationship  # one element of an image's objects, attributes or relationships
_FIRST_SYNSET = attrgetter("synsets")


def _synset_ids(parts: list[VGObject], vocab: Vocab) -> list[int]:
    """Vocabulary ids of each part's first synset (-1 where it has none)."""
    return vocab.map([s[0] if s else None for s in map(_FIRST_SYNSET, parts)])


def _rej(rejects: list[RejectRow], ref: str, reason: str, detail: str, payload: object = None) -> None:
    rejects.append(reject(ref, STAGE, reason, detail, payload))


def _elements(path: str, kind: str, block: int, rejects: list, progress: Progress | None):
    """Per decoded batch, a list of (image_id, parts); malformed parts and elements become rejects."""
    part_type = {"objects": VGObject, "attributes": VGAttributed, "relationships": VGRelationship}[kind]
    done = 0
    for batch in iter_elements(path, kind, block):
        out = []
        for e in batch:
            if isinstance(e, BadElement):
                le = loose(e)
                parts_raw = getattr(le, kind) if le is not None else None
                if le is None or parts_raw is None:
                    at = e.at if e.at is not None else e.offset
                    where = (
                        f"element at byte offset {e.at}"
                        if e.at is not None
                        else f"element in the batch at byte {e.offset}"
                    )
                    _rej(
                        rejects,
                        f"vg:{kind}:@{at}",
                        "malformed_entry",
                        f"{path}: {where}: {e.error}",
                        e.raw[:500].decode("utf-8", "replace"),
                    )
                    continue
                iid = element_image_id(le)
                parts = []
                for k, raw in enumerate(parts_raw):
                    body = bytes(raw)
                    pos = e.raw.find(body) if e.at is not None else -1
                    at = e.at + pos if pos >= 0 else None
                    got = decode_part(raw, part_type, at)
                    if isinstance(got, str):
                        where = f" at byte offset {at}" if at is not None else ""
                        _rej(
                            rejects,
                            f"vg:{kind}:{iid}:#{k}",
                            "malformed_entry",
                            f"{path}: image {iid}, {kind} entry {k}{where}: {got}",
                            body[:500].decode("utf-8", "replace"),
                        )
                    else:
                        parts.append(got)
                out.append((iid, parts))
            else:
                out.append((element_image_id(e), getattr(e, kind)))
        yield out
        done += len(batch)
        if progress:
            progress(kind, done)


def _known(batch: list, scan: Scan, kind: str, path: str) -> tuple[list[int], list[int], list[VGPart]]:
    """Image ids, part counts and the flat parts of the elements whose image is known."""
    iids: list[int] = []
    counts: list[int] = []
    flat: list[VGPart] = []
    images = scan.images
    for iid, parts in batch:
        if not parts:
            continue  # nothing to count or to lose
        if iid is None:
            _rej(
                scan.rejects,
                f"vg:{kind}:?",
                "malformed_entry",
                f"{path}: an element has no image_id ({len(parts)} {kind})",
            )
        elif iid not in images:
            _rej(
                scan.rejects,
                f"vg:{kind}:{iid}",
                "unknown_image_id",
                f"{path}: image_id {iid} is not in image_data.json ({len(parts)} {kind} skipped)",
            )
        else:
            iids.append(iid)
            counts.append(len(parts))
            flat.extend(parts)
    return iids, counts, flat


_IDS_BOX = attrgetter("object_id", "id", "x", "y", "w", "h")


def _box_matrix(parts: list[VGObject]) -> np.ndarray:
    """(n, 6) float64: object_id, id, x, y, w, h (-1 for an absent id, NaN for an absent coordinate)."""
    try:
        return np.fromiter(chain.from_iterable(map(_IDS_BOX, parts)), dtype=np.float64, count=6 * len(parts)).reshape(
            -1, 6
        )
    except TypeError:  # an explicit null id somewhere: the slow, careful way
        rows = [[-1.0 if v is None else float(v) for v in _IDS_BOX(p)] for p in parts]
        return np.asarray(rows, dtype=np.float64).reshape(-1, 6)


def _name_ids(parts: list[VGObject], vocab: Vocab, canon: Canonicalizer) -> list[int]:
    if canon.mode == "synset":
        return [_synset_id(vocab, canon, o) for o in parts]
    get = vocab.raw.get
    out = [get(o.names[0] if o.names else object_raw_name(o), -2) for o in parts]  # one pass: name and memo probe
    if -2 in out:
        for i, v in enumerate(out):
            if v == -2:
                out[i] = vocab.id_of_raw(object_raw_name(parts[i]))
    return out


def _object_table(
    m: list[np.ndarray], img: list[np.ndarray], nid: list[list[int]], sid: list[list[int]]
) -> dict[str, np.ndarray]:
    mat = np.concatenate(m) if m else np.zeros((0, 6))
    oid = np.where(mat[:, 0] >= 0, mat[:, 0], mat[:, 1]).astype(np.int64)
    return {
        "img": np.concatenate(img).astype(np.int64) if img else np.zeros(0, np.int64),
        "oid": oid,
        "nid": np.fromiter(chain.from_iterable(nid), dtype=np.int64),
        "sid": np.fromiter(chain.from_iterable(sid), dtype=np.int64),
        "x": np.ascontiguousarray(mat[:, 2]),
        "y": np.ascontiguousarray(mat[:, 3]),
        "w": np.ascontiguousarray(mat[:, 4]),
        "h": np.ascontiguousarray(mat[:, 5]),
    }


def _synset_id(vocab: Vocab, canon: Canonicalizer, o: VGObject) -> int:
    raw = object_raw_name(o)
    if o.synsets:
        key = ("synset", o.synsets[0])
        got = vocab.raw.get(key)
        if got is None:
            got = vocab.id_of_class(canon.object_name(raw or "", o.synsets))
            vocab.raw[key] = got
        return got
    return vocab.id_of_raw(raw)


def scan_objects(
    path: str, kind: str, scan: Scan, canon: Canonicalizer, block: int, progress: Progress | None = None
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray] | None]:
    """objects.json or attributes.json -> object columns (and, for attributes, annotation columns)."""
    mats: list[np.ndarray] = []
    imgs: list[np.ndarray] = []
    nids: list[list[int]] = []
    sids: list[list[int]] = []
    ann_inst: list[np.ndarray] = []
    ann_raw: list[str | None] = []
    total = 0
    get_attrs = attrgetter("attributes")
    with gc_paused():
        for batch in _elements(path, kind, block, scan.rejects, progress):
            iids, counts, parts = _known(batch, scan, kind, path)
            if not parts:
                continue
            mats.append(_box_matrix(parts))
            imgs.append(np.repeat(np.asarray(iids, dtype=np.int64), counts))
            nids.append(_name_ids(parts, scan.names, canon))
            sids.append(_synset_ids(parts, scan.synsets))
            if kind == "attributes":
                lists = list(map(get_attrs, parts))
                lens = [len(a) if a else 0 for a in lists]
                ann_inst.append(np.repeat(np.arange(total, total + len(parts), dtype=np.int64), lens))
                ann_raw.extend(chain.from_iterable(a for a in lists if a))
            total += len(parts)
    table = _object_table(mats, imgs, nids, sids)
    table["valid"] = _validate_objects(table, scan, kind, path)
    if kind != "attributes":
        return table, None
    aids = np.asarray(scan.attributes.map(ann_raw), dtype=np.int64)
    inst = np.concatenate(ann_inst) if ann_inst else np.zeros(0, np.int64)
    keep = aids >= 0
    na = len(scan.attributes.names) + 1
    key = npx.unique(inst[keep] * na + aids[keep])
    return table, {"inst": key // na, "aid": key % na}


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
        payload = None  # the detail names image, object and box; JSON payloads cost too much at VG scale
        ref = f"vg:{kind}:{iid}:{oid}"
        if bad[i]:
            what = "no object id" if oid < 0 else ("no usable name" if t["nid"][i] < 0 else "a missing coordinate")
            _rej(scan.rejects, ref, "malformed_entry", f"{path}: image {iid} object {oid}: {what}", payload)
        elif empty[i]:
            _rej(scan.rejects, ref, "box_empty", f"{path}: image {iid} object {oid}: box {box} has zero size", payload)
        elif outside[i]:
            info = scan.images[iid]
            _rej(
                scan.rejects,
                ref,
                "box_outside_image",
                f"{path}: image {iid} object {oid}: box {box} leaves the {info.width}x{info.height} image",
                payload,
            )
        else:
            _rej(
                scan.rejects,
                ref,
                "duplicate_object_id",
                f"{path}: image {iid}: object id {oid} appears more than once (first kept)",
                payload,
            )
    return valid


def scan_relationships(
    path: str,
    scan: Scan,
    canon: Canonicalizer,
    preds: PredicateCanonicalizer,
    block: int,
    progress: Progress | None = None,
) -> dict[str, np.ndarray]:
    """relationships.json -> one row per relationship: ids, predicate, both ends' ids, names and boxes."""
    cols: dict[str, list[np.ndarray | list[int]]] = {k: [] for k in ("img", "rid", "pid", "s", "o", "s_nid", "o_nid")}
    get_rid = attrgetter("relationship_id", "id")
    get_pred, get_s, get_o = attrgetter("predicate"), attrgetter("subject"), attrgetter("object")
    with gc_paused():
        for batch in _elements(path, "relationships", block, scan.rejects, progress):
            iids, counts, rels = _known(batch, scan, "relationships", path)
            if not rels:
                continue
            cols["img"].append(np.repeat(np.asarray(iids, dtype=np.int64), counts))
            cols["rid"].append([a if a is not None else (b if b is not None else -1) for a, b in map(get_rid, rels)])
            cols["pid"].append(scan.predicates.map(list(map(get_pred, rels))))
            subs, objs = list(map(get_s, rels)), list(map(get_o, rels))
            cols["s"].append(_box_matrix(subs))
            cols["o"].append(_box_matrix(objs))
            cols["s_nid"].append(_name_ids(subs, scan.names, canon))
            cols["o_nid"].append(_name_ids(objs, scan.names, canon))
    t: dict[str, np.ndarray] = {
        "img": np.concatenate(cols["img"]) if cols["img"] else np.zeros(0, np.int64),
        "rid": np.fromiter(chain.from_iterable(cols["rid"]), dtype=np.int64),
        "pid": np.fromiter(chain.from_iterable(cols["pid"]), dtype=np.int64),
        "s_nid": np.fromiter(chain.from_iterable(cols["s_nid"]), dtype=np.int64),
        "o_nid": np.fromiter(chain.from_iterable(cols["o_nid"]), dtype=np.int64),
    }
    for end in ("s", "o"):
        mat = np.concatenate(cols[end]) if cols[end] else np.zeros((0, 6))
        t[f"{end}_oid"] = np.where(mat[:, 0] >= 0, mat[:, 0], mat[:, 1]).astype(np.int64)
        for j, c in enumerate("xywh"):
            t[f"{end}{c}"] = np.ascontiguousarray(mat[:, 2 + j])
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
        payload = None
        boxes = f"subject box {[float(t[c][i]) for c in ('sx', 'sy', 'sw', 'sh')]}, object box {[float(t[c][i]) for c in ('ox', 'oy', 'ow', 'oh')]}"
        if bad[i]:
            _rej(
                scan.rejects,
                ref,
                "malformed_entry",
                f"{path}: image {iid} relationship {rid}: missing name, predicate, object id or coordinate",
                payload,
            )
        elif empty[i]:
            _rej(
                scan.rejects,
                ref,
                "box_empty",
                f"{path}: image {iid} relationship {rid}: an end has a zero-size box ({boxes})",
                payload,
            )
        else:
            _rej(
                scan.rejects,
                ref,
                "box_outside_image",
                f"{path}: image {iid} relationship {rid}: an end's box leaves the image ({boxes})",
                payload,
            )
    return valid


def new_scan(
    images: dict[int, ImageInfo], canon: Canonicalizer, preds: PredicateCanonicalizer, tolerance: float
) -> Scan:
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
