"""Per-image lookups over the scanned columns: objects, their attributes and relations.

Candidates carry the other annotated objects of their image (``context_json``) so the
offline ``rules`` backend can describe a scene from annotations alone; this index answers
those per-image questions with binary searches instead of dictionaries over millions of rows.
"""

from __future__ import annotations

import msgspec
import numpy as np

from miners.vg_scan import Scan


def _by_image(img: np.ndarray, valid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    rows = np.flatnonzero(valid)
    order = rows[np.argsort(img[rows], kind="stable")]
    return order, img[order]


class ImageIndex:
    """Valid rows of each scanned table grouped by image id."""

    def __init__(self, scan: Scan):
        self.scan = scan
        self.obj_rows, self.obj_img = (
            _by_image(scan.objects["img"], scan.objects["valid"])
            if scan.objects is not None
            else (np.zeros(0, int), np.zeros(0, int))
        )
        self.rel_rows, self.rel_img = (
            _by_image(scan.relations["img"], scan.relations["valid"])
            if scan.relations is not None
            else (np.zeros(0, int), np.zeros(0, int))
        )
        self.inst_rows, self.inst_img = (
            _by_image(scan.instances["img"], scan.instances["valid"])
            if scan.instances is not None
            else (np.zeros(0, int), np.zeros(0, int))
        )

    @staticmethod
    def _slice(rows: np.ndarray, imgs: np.ndarray, iid: int) -> np.ndarray:
        lo, hi = np.searchsorted(imgs, iid, "left"), np.searchsorted(imgs, iid, "right")
        return rows[lo:hi]

    def objects(self, iid: int) -> np.ndarray:
        """Row numbers (into ``scan.objects``) of the image's valid objects, by object id."""
        rows = self._slice(self.obj_rows, self.obj_img, iid)
        return rows[np.argsort(self.scan.objects["oid"][rows], kind="stable")]

    def relations(self, iid: int) -> np.ndarray:
        return self._slice(self.rel_rows, self.rel_img, iid)

    def attributes(self, iid: int) -> dict[int, list[str]]:
        """object id -> canonical attributes (sorted) for one image, from attributes.json."""
        scan = self.scan
        out: dict[int, list[str]] = {}
        if scan.instances is None or scan.annotations is None:
            return out
        rows = self._slice(self.inst_rows, self.inst_img, iid)
        inst = scan.annotations["inst"]
        los, his = np.searchsorted(inst, rows, "left"), np.searchsorted(inst, rows, "right")
        if not len(rows):
            return out
        names = scan.attributes.names
        base, top = int(los.min()), int(his.max())
        ann = scan.annotations["aid"][base:top].tolist()  # one slice for the image, not one per object
        for oid, lo, hi in zip(scan.instances["oid"][rows].tolist(), (los - base).tolist(), (his - base).tolist()):
            if hi > lo:
                got = {names[a] for a in ann[lo:hi]}
                out[oid] = sorted(got | set(out[oid])) if oid in out else sorted(got)
        return out

    def box(self, table: str, row: int, prefix: str = "") -> list[float]:
        t = getattr(self.scan, table)
        return [float(t[f"{prefix}{c}"][row]) for c in ("x", "y", "w", "h")]

    def context(
        self, iid: int, exclude: set[int], limit: int, attrs: dict[int, list[str]] | None = None
    ) -> list[ContextObject]:
        """The image's other objects: id, canonical name, box, attributes, relations, synset (msgspec
        Structs whose fields are in alphabetical order, so they encode like sorted-key dicts)."""
        scan = self.scan
        if scan.objects is None:
            return []
        if attrs is None:
            attrs = self.attributes(iid)
        names, preds = scan.names.names, scan.predicates.names
        rels: dict[int, list[ContextRelation]] = {}
        if scan.relations is not None:
            r = scan.relations
            rows = self.relations(iid)
            ends = []  # (other_id, predicate, role, owner, other_name): sorted once, so each owner's list is in order
            for s_oid, o_oid, pid, s_nid, o_nid in zip(
                r["s_oid"][rows].tolist(),
                r["o_oid"][rows].tolist(),
                r["pid"][rows].tolist(),
                r["s_nid"][rows].tolist(),
                r["o_nid"][rows].tolist(),
            ):
                pred = preds[pid]
                ends.append((o_oid, pred, "subject", s_oid, names[o_nid]))
                ends.append((s_oid, pred, "object", o_oid, names[s_nid]))
            ends.sort(key=lambda e: e[:3])
            for other, pred, role, owner, other_name in ends:
                rels.setdefault(owner, []).append(ContextRelation(other, other_name, pred, role))
        out: list[ContextObject] = []
        t = scan.objects
        rows = self.objects(iid)
        synsets = self._synsets(rows)
        cols = zip(
            t["oid"][rows].tolist(),
            t["nid"][rows].tolist(),
            t["x"][rows].tolist(),
            t["y"][rows].tolist(),
            t["w"][rows].tolist(),
            t["h"][rows].tolist(),
            synsets,
        )
        no_attrs: list[str] = []
        for oid, nid, x, y, w, h, synset in cols:
            if oid in exclude:
                continue
            out.append(
                ContextObject(attrs.get(oid, no_attrs), [x, y, w, h], oid, names[nid], rels.get(oid, []), synset)
            )  # relations by (other_id, predicate, role)
            if len(out) >= limit:
                break
        return out

    def _synsets(self, rows: np.ndarray) -> list[str | None]:
        """The first synset of each object row (None where the source gives none, e.g. COCO)."""
        sid = self.scan.objects.get("sid") if self.scan.objects is not None else None
        if sid is None:
            return [None] * len(rows)
        names = self.scan.synsets.names
        return [names[s] if s >= 0 else None for s in sid[rows].tolist()]

    def synset(self, iid: int, oid: int) -> str | None:
        """The first synset of object ``oid`` of image ``iid`` (None when it has none)."""
        if self.scan.objects is None:
            return None
        rows = self.objects(iid)
        hit = rows[self.scan.objects["oid"][rows] == oid]
        return self._synsets(hit[:1])[0] if len(hit) else None


class ContextRelation(msgspec.Struct, gc=False):
    """One relation of a context object (fields alphabetical: the JSON keys are sorted)."""

    other_id: int
    other_name: str
    predicate: str
    role: str  # subject | object: the context object's role


class ContextObject(msgspec.Struct, gc=False, omit_defaults=True):
    """One other object of a candidate's image in ``context_json`` (fields alphabetical;
    ``synset`` only when the source gives one)."""

    attributes: list[str]
    box: list[float]
    id: int
    name: str
    relations: list[ContextRelation]
    synset: str | None = None
