"""Per-image lookups over the scanned columns: objects, their attributes and relations.

Candidates carry the other annotated objects of their image (``context_json``) so the
offline ``rules`` backend can describe a scene from annotations alone; this index answers
those per-image questions with binary searches instead of dictionaries over millions of rows.
"""

from __future__ import annotations

from typing import Any

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
        self.obj_rows, self.obj_img = _by_image(scan.objects["img"], scan.objects["valid"]) if scan.objects is not None else (np.zeros(0, int), np.zeros(0, int))
        self.rel_rows, self.rel_img = _by_image(scan.relations["img"], scan.relations["valid"]) if scan.relations is not None else (np.zeros(0, int), np.zeros(0, int))
        self.inst_rows, self.inst_img = _by_image(scan.instances["img"], scan.instances["valid"]) if scan.instances is not None else (np.zeros(0, int), np.zeros(0, int))

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
        aid = scan.annotations["aid"]
        names = scan.attributes.names
        for oid, lo, hi in zip(scan.instances["oid"][rows].tolist(), los.tolist(), his.tolist()):
            if hi > lo:
                got = {names[a] for a in aid[lo:hi].tolist()}
                out[oid] = sorted(got | set(out[oid])) if oid in out else sorted(got)
        return out

    def box(self, table: str, row: int, prefix: str = "") -> list[float]:
        t = getattr(self.scan, table)
        return [float(t[f"{prefix}{c}"][row]) for c in ("x", "y", "w", "h")]

    def context(self, iid: int, exclude: set[int], limit: int, attrs: dict[int, list[str]] | None = None) -> list[dict[str, Any]]:
        """The image's other objects: id, canonical name, box, attributes, relations."""
        scan = self.scan
        if scan.objects is None:
            return []
        if attrs is None:
            attrs = self.attributes(iid)
        names, preds = scan.names.names, scan.predicates.names
        rels: dict[int, list[dict[str, Any]]] = {}
        if scan.relations is not None:
            r = scan.relations
            rows = self.relations(iid)
            for s_oid, o_oid, pid, s_nid, o_nid in zip(r["s_oid"][rows].tolist(), r["o_oid"][rows].tolist(), r["pid"][rows].tolist(),
                                                      r["s_nid"][rows].tolist(), r["o_nid"][rows].tolist()):
                pred = preds[pid]
                rels.setdefault(s_oid, []).append({"predicate": pred, "role": "subject", "other_id": o_oid, "other_name": names[o_nid]})
                rels.setdefault(o_oid, []).append({"predicate": pred, "role": "object", "other_id": s_oid, "other_name": names[s_nid]})
        out = []
        t = scan.objects
        rows = self.objects(iid)
        cols = zip(t["oid"][rows].tolist(), t["nid"][rows].tolist(), t["x"][rows].tolist(), t["y"][rows].tolist(), t["w"][rows].tolist(), t["h"][rows].tolist())
        for oid, nid, x, y, w, h in cols:
            if oid in exclude:
                continue
            out.append({
                "id": oid,
                "name": names[nid],
                "box": [x, y, w, h],
                "attributes": attrs.get(oid, []),
                "relations": sorted(rels.get(oid, []), key=lambda d: (d["other_id"], d["predicate"], d["role"])),
            })
            if len(out) >= limit:
                break
        return out
