"""Counterfactual attribute (SPEC 3, CA): dominant object-attribute associations and instances.

Definitions (checked by the SQL cross-check test):
- C(o): valid instances (objects in attributes.json) of class o.
- C(o∩a): valid instances of o annotated with attribute a (an attribute counted once per instance).
- P(a|o) = C(o∩a) / C(o); ``rank``: position of a among o's attributes by P(a|o) descending,
  ties alphabetical. Kept: the first ``top_k`` by rank among those with C(o∩a) >= N_min and
  P(a|o) >= θ.
Candidates: instances of o carrying a kept a, box area fraction within ``area_range``; one
instance per image (lowest object id), ``images_per_attribute`` images per (o, a), seeded.
Controls (``variant: control``): instances of o carrying a non-dominant attribute.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from tasks.builtin_tasks.counterfactual_attribute.params import CounterfactualAttributeParams
from tasks.plugin_api import MineJob, ObjectRef, Scan, Selection, VGRows, area_fraction, image_sizes, npx, seeded_order

if TYPE_CHECKING:
    from tasks.plugin_api import CandidateRow

# The Visual Genome files beyond image_data and objects this task reads (its spec's ``vg_reads`` hook).
VG_READS = ("attributes",)


@dataclass
class AttributeTable:
    obj: np.ndarray
    attr: np.ndarray
    c_o: np.ndarray
    c_oa: np.ndarray
    p: np.ndarray
    rank: np.ndarray
    kept: np.ndarray

    def __len__(self) -> int:
        return len(self.obj)


def attribute_table(scan: Scan, params: CounterfactualAttributeParams) -> AttributeTable:
    inst, ann = scan.instances, scan.annotations
    nn = max(1, len(scan.names.names))
    na = max(1, len(scan.attributes.names))
    c_name = np.bincount(inst["nid"][inst["valid"]], minlength=nn).astype(np.int64)
    use = inst["valid"][ann["inst"]]
    keys, c_oa = npx.unique(inst["nid"][ann["inst"][use]] * na + ann["aid"][use], return_counts=True)
    obj, attr = keys // na, keys % na
    c_o = c_name[obj]
    p = c_oa / np.maximum(c_o, 1)
    order = np.lexsort((attr, -p, obj))
    passing = (c_oa >= params.n_min) & (p >= params.theta)
    n = len(obj)
    pos = np.arange(n)
    new_group = np.r_[True, obj[order][1:] != obj[order][:-1]] if n else np.zeros(0, bool)
    group_start = np.maximum.accumulate(np.where(new_group, pos, 0)) if n else pos
    rank = np.empty(n, dtype=np.int64)
    rank[order] = pos - group_start + 1
    passed = np.cumsum(passing[order])  # passing rows up to and including each position
    before_group = np.where(group_start > 0, passed[group_start - 1], 0) if n else passed
    kept = np.zeros(n, dtype=bool)
    kept[order] = passing[order] & (passed - before_group <= params.top_k)
    return AttributeTable(obj, attr, c_o, c_oa.astype(np.int64), p, rank, kept)


def attribute_stats_table(scan: Scan, t: AttributeTable, min_count: int) -> pa.Table:
    """The ``attribute_stats`` artifact (C(o∩a) >= ``min_count``), by object then rank, built column by column."""
    idx = np.flatnonzero(t.c_oa >= min_count)
    idx = idx[np.lexsort((t.rank[idx], t.obj[idx]))]
    names, attrs = pa.array(scan.names.names, pa.string()), pa.array(scan.attributes.names, pa.string())
    return pa.table(
        {
            "object": names.take(t.obj[idx]),
            "attribute": attrs.take(t.attr[idx]),
            "c_o": t.c_o[idx].astype(np.int64),
            "c_oa": t.c_oa[idx].astype(np.int64),
            "p_a_given_o": t.p[idx].astype(np.float64),
            "rank": t.rank[idx].astype(np.int32),
            "kept": t.kept[idx].astype(bool),
        }
    )


def attribute_rows(scan: Scan, t: AttributeTable, min_count: int) -> list[dict[str, object]]:
    """:func:`attribute_stats_table` as rows (for inspection and tests)."""
    return attribute_stats_table(scan, t, min_count).to_pylist()


def mine(job: MineJob) -> None:
    """The task's miner on a Visual Genome :class:`Scan`: the attribute statistics, then
    (``job.candidates``) the candidates."""
    table = attribute_table(job.scan, job.params)
    job.result.attribute_table = attribute_stats_table(job.scan, table, job.config.stats_min_count)
    if job.candidates:
        job.result.add(select(job.scan, table, job.params, job.rows, job.seed, job.control, job.task))
    job.result.summary["attributes_kept"] = int(table.kept.sum())


@dataclass(frozen=True)
class _Draw:
    """What every candidate of one selection is drawn and built with: the scan, the source's row
    builder, the task (rows' ``task`` column and the key of every seeded choice), the run seed,
    the task's parameters and the selection the rows go to."""

    scan: Scan
    rows: VGRows
    task: str
    seed: int
    params: CounterfactualAttributeParams
    sel: Selection


def select(
    scan: Scan,
    t: AttributeTable,
    params: CounterfactualAttributeParams,
    rows: VGRows,
    seed: int,
    control: bool,
    task: str,
) -> Selection:
    sel = Selection()
    draw = _Draw(scan, rows, task, seed, params, sel)
    inst, ann = scan.instances, scan.annotations
    W, H = image_sizes(scan, inst["img"])
    frac = area_fraction(inst["w"], inst["h"], W, H)
    in_range = inst["valid"] & (frac >= params.area_range[0]) & (frac <= params.area_range[1])
    na = max(1, len(scan.attributes.names))
    kept_keys = set((t.obj[t.kept] * na + t.attr[t.kept]).tolist())
    dominant: dict[int, set[int]] = {}
    for o, a in zip(t.obj[t.kept].tolist(), t.attr[t.kept].tolist()):
        dominant.setdefault(o, set()).add(a)
    ok = in_range[ann["inst"]]
    a_inst, a_aid = ann["inst"][ok], ann["aid"][ok]
    a_key = inst["nid"][a_inst] * na + a_aid
    is_kept = np.isin(a_key, np.fromiter(kept_keys, dtype=np.int64, count=len(kept_keys)))
    used: set[int] = set()
    names, attrs = scan.names.names, scan.attributes.names
    ki = np.flatnonzero(t.kept)
    stat = dict(zip(zip(t.obj[ki].tolist(), t.attr[ki].tolist()), ki.tolist()))  # kept (o, a) -> stats row
    kk = np.flatnonzero(is_kept)
    kk = kk[np.lexsort((inst["oid"][a_inst[kk]], a_key[kk]))]
    sorted_keys = a_key[kk]
    for key in sorted(kept_keys):
        o, a = key // na, key % na
        lo, hi = np.searchsorted(sorted_keys, key, "left"), np.searchsorted(sorted_keys, key, "right")
        rows_here = a_inst[kk[lo:hi]]  # instances of (o, a), by object id
        imgs, at = npx.unique_first(inst["img"][rows_here])
        first = dict(zip(imgs.tolist(), rows_here[at].tolist()))  # image -> its lowest-id instance
        chosen = 0
        for iid in seeded_order(imgs, seed, task, names[o], attrs[a]):
            if chosen >= params.images_per_attribute:
                break
            path = rows.image_path(iid, sel)
            if path is None:
                continue
            r = first[iid]
            used.add(r)
            i = stat[(o, a)]
            sel.rows.append(
                _row(
                    draw,
                    "targeted",
                    r,
                    iid,
                    path,
                    attrs[a],
                    int(t.rank[i]),
                    {
                        "c_o": int(t.c_o[i]),
                        "c_oa": int(t.c_oa[i]),
                        "p_a_given_o": float(t.p[i]),
                        "dominant_attributes": sorted(attrs[x] for x in dominant[o]),
                    },
                )
            )
            chosen += 1
    if control:
        _controls(draw, t, dominant, a_inst, a_aid, used)
    return sel


def _row(
    draw: _Draw, variant: str, r: int, iid: int, path: str, attribute: str, rank: int | None, extra: dict[str, object]
) -> CandidateRow:
    scan, rows = draw.scan, draw.rows
    inst = scan.instances
    target: ObjectRef = {
        "id": int(inst["oid"][r]),
        "name": scan.names.names[int(inst["nid"][r])],
        "box": rows.index.box("instances", r),
    }
    return rows.row(
        draw.task,
        variant,
        iid,
        path,
        target=target,
        id_parts=(attribute,),
        extra=extra,
        attribute=attribute,
        attribute_rank=rank,
        edit_type="attribute",
        fallback_chain=[],
    )


def _controls(
    draw: _Draw,
    t: AttributeTable,
    dominant: dict[int, set[int]],
    a_inst: np.ndarray,
    a_aid: np.ndarray,
    used: set[int],
) -> None:
    """Per class with dominant attributes: instances carrying a non-dominant attribute instead
    (``a_inst`` / ``a_aid``: the in-range instances' attribute annotations; ``used``: the
    instances already targeted)."""
    scan, rows, sel, params = draw.scan, draw.rows, draw.sel, draw.params
    inst = scan.instances
    names, attrs = scan.names.names, scan.attributes.names
    count = dict(zip(zip(t.obj.tolist(), t.attr.tolist()), zip(t.c_oa.tolist(), t.rank.tolist())))
    by_inst: dict[int, list[int]] = {}
    for r, a in zip(a_inst.tolist(), a_aid.tolist()):
        if int(inst["nid"][r]) in dominant and r not in used:
            by_inst.setdefault(r, []).append(a)
    per_class: dict[int, dict[int, tuple[int, int]]] = {}
    for r in sorted(by_inst, key=lambda r: int(inst["oid"][r])):
        o, aids = int(inst["nid"][r]), by_inst[r]
        if set(aids) & dominant[o]:
            continue
        best = min(aids, key=lambda a: (-count[(o, a)][0], attrs[a]))
        per_class.setdefault(o, {}).setdefault(int(inst["img"][r]), (r, best))
    for o in sorted(dominant):
        first = per_class.get(o, {})
        chosen = 0
        for iid in seeded_order(first, draw.seed, draw.task, "control", names[o]):
            if chosen >= params.images_per_attribute:
                break
            path = rows.image_path(iid, sel)
            if path is None:
                continue
            r, a = first[iid]
            c, rk = count[(o, a)]
            sel.rows.append(
                _row(
                    draw,
                    "control",
                    r,
                    iid,
                    path,
                    attrs[a],
                    rk,
                    {
                        "c_oa": c,
                        "dominant_attributes": sorted(attrs[x] for x in dominant[o]),
                        "control_rule": "non_dominant_attribute",
                    },
                )
            )
            chosen += 1
