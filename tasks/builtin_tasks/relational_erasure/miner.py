"""Relational erasure (SPEC 3, RE): co-occurrence statistics and the images to erase from.

Definitions (also checked by an independent SQL implementation in the tests):
- C(A): images where class A is a valid object in objects.json or a valid relationship end.
- C(A∩B), ``count_unit: images``: images in which a valid relationship links A and B in
  either direction (A != B); ``relations``: the number of such relationships, and then C(A)
  is counted in the same unit: valid relationships with A as an end (once per relationship),
  so P(B|A) is the share of A's relationships that link it to B and never exceeds 1.
- P(B|A) = C(A∩B) / C(A). Keep when C(A∩B) >= N_min and max(P(B|A), P(A|B)) >= θ.
- The triplet's predicate and direction: the most frequent (predicate, direction) among the
  linking relationships; ties go to the alphabetically first predicate, then ``a_subject``.
- The entity to erase is the smaller box of the relationship instance (the dependent part,
  e.g. the wheel of a skateboard; ties: the subject); the instruction stage confirms it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from tasks.builtin_tasks.relational_erasure.params import RelationalErasureParams
from tasks.plugin_api import (
    CocoRows,
    MineJob,
    ObjectRef,
    Scan,
    Selection,
    VGRows,
    area_fraction,
    drop_unsure,
    image_sizes,
    npx,
    rng_for,
    seeded_order,
)

if TYPE_CHECKING:
    from tasks.plugin_api import CandidateRow

# The Visual Genome files beyond image_data and objects this task reads (its spec's ``vg_reads`` hook).
VG_READS = ("relationships",)


@dataclass
class PairTable:
    """One row per unordered class pair (a < b alphabetically) linked at least once."""

    a: np.ndarray
    b: np.ndarray
    c_a: np.ndarray
    c_b: np.ndarray
    c_ab: np.ndarray
    p_b_given_a: np.ndarray
    p_a_given_b: np.ndarray
    predicate: np.ndarray  # predicate id
    a_subject: np.ndarray  # bool: in the triplet, a is the subject
    kept: np.ndarray
    rel_pair: np.ndarray  # per relationship row: pair index or -1

    def __len__(self) -> int:
        return len(self.a)


def class_image_counts(scan: Scan) -> np.ndarray:
    """C(A) for every class id: images with A among valid objects or valid relationship ends."""
    nn = len(scan.names.names)
    keys = []
    if scan.objects is not None:
        o = scan.objects
        keys.append(o["img"][o["valid"]] * nn + o["nid"][o["valid"]])
    if scan.relations is not None:
        r = scan.relations
        v = r["valid"]
        keys.append(r["img"][v] * nn + r["s_nid"][v])
        keys.append(r["img"][v] * nn + r["o_nid"][v])
    if not keys or nn == 0:
        return np.zeros(nn, dtype=np.int64)
    present = npx.unique(np.concatenate(keys))
    return np.bincount(present % nn, minlength=nn).astype(np.int64)


def class_relation_counts(scan: Scan) -> np.ndarray:
    """C(A) in relationships (``count_unit: relations``): valid relationships with A as an end,
    once per relationship (A-r-A counts once)."""
    nn = len(scan.names.names)
    r = scan.relations
    if r is None or nn == 0:
        return np.zeros(nn, dtype=np.int64)
    v = r["valid"]
    s, o = r["s_nid"][v], r["o_nid"][v]
    return (np.bincount(s, minlength=nn) + np.bincount(o[o != s], minlength=nn)).astype(np.int64)


def pair_table(scan: Scan, params: RelationalErasureParams) -> PairTable:
    """Count every linked pair and apply the keep rule (C(A) and C(A∩B) in the same unit)."""
    r = scan.relations
    nn = max(1, len(scan.names.names))
    c_name = class_image_counts(scan) if params.count_unit == "images" else class_relation_counts(scan)
    lo = np.minimum(r["s_nid"], r["o_nid"])
    hi = np.maximum(r["s_nid"], r["o_nid"])
    use = r["valid"] & (lo != hi)
    rel_pair = np.full(len(lo), -1, dtype=np.int64)
    keys, inverse = npx.unique(lo[use] * nn + hi[use], return_inverse=True)
    rel_pair[use] = inverse
    n_pairs = len(keys)
    a, b = keys // nn, keys % nn
    if params.count_unit == "images":
        linked = npx.unique(r["img"][use] * max(1, n_pairs) + inverse)
        c_ab = np.bincount(linked % max(1, n_pairs), minlength=n_pairs).astype(np.int64)
    else:
        c_ab = np.bincount(inverse, minlength=n_pairs).astype(np.int64)
    # most frequent (predicate, direction) per pair
    npred = max(1, len(scan.predicates.names))
    direction = (r["s_nid"][use] != lo[use]).astype(np.int64)  # 0: a is subject
    pk = inverse * (2 * npred) + r["pid"][use] * 2 + direction
    uk, counts = npx.unique(pk, return_counts=True)
    upair = uk // (2 * npred)
    order = np.lexsort((uk, -counts, upair))
    first = order[np.r_[True, upair[order][1:] != upair[order][:-1]]] if len(order) else order
    best = np.zeros(n_pairs, dtype=np.int64)
    best[upair[first]] = uk[first] % (2 * npred)
    c_a, c_b = c_name[a], c_name[b]
    with np.errstate(divide="ignore", invalid="ignore"):
        p_ba = np.where(c_a > 0, c_ab / np.maximum(c_a, 1), 0.0)
        p_ab = np.where(c_b > 0, c_ab / np.maximum(c_b, 1), 0.0)
    kept = (c_ab >= params.n_min) & (np.maximum(p_ba, p_ab) >= params.theta)
    return PairTable(a, b, c_a, c_b, c_ab, p_ba, p_ab, best // 2, best % 2 == 0, kept, rel_pair)


def pair_stats_table(scan: Scan, t: PairTable, min_count: int, source: str) -> pa.Table:
    """The ``pair_stats`` artifact (pairs with C(A∩B) >= ``min_count``), most frequent first,
    built column by column (no row dicts: VG has ~0.8M linked pairs); ``source`` names the source
    counted (Visual Genome and COCO pairs land in one artifact)."""
    idx = np.flatnonzero(t.c_ab >= min_count)
    idx = idx[np.lexsort((t.b[idx], t.a[idx], -t.c_ab[idx]))]
    names, preds = pa.array(scan.names.names, pa.string()), pa.array(scan.predicates.names, pa.string())
    direction = pa.array(np.where(t.a_subject[idx], "a_subject", "b_subject").astype(object), pa.string())
    return pa.table(
        {
            "source": pa.repeat(pa.scalar(source, pa.string()), len(idx)),
            "a": names.take(t.a[idx]),
            "b": names.take(t.b[idx]),
            "c_a": t.c_a[idx].astype(np.int64),
            "c_b": t.c_b[idx].astype(np.int64),
            "c_ab": t.c_ab[idx].astype(np.int64),
            "p_b_given_a": t.p_b_given_a[idx].astype(np.float64),
            "p_a_given_b": t.p_a_given_b[idx].astype(np.float64),
            "predicate": preds.take(t.predicate[idx]),
            "direction": direction,
            "kept": t.kept[idx].astype(bool),
        }
    )


def pair_rows(scan: Scan, t: PairTable, min_count: int, source: str = "visual_genome") -> list[dict[str, object]]:
    """:func:`pair_stats_table` as rows (for inspection and tests)."""
    return pair_stats_table(scan, t, min_count, source).to_pylist()


def kept_name_pairs(t: PairTable) -> set[tuple[int, int]]:
    return {(int(t.a[i]), int(t.b[i])) for i in np.flatnonzero(t.kept)}


def mine(job: MineJob) -> None:
    """The task's miner on a :class:`Scan` with relations (Visual Genome's relationships, COCO's
    co-occurrence links): the pair statistics, then (``job.candidates``) the candidates."""
    table = pair_table(job.scan, job.params)
    job.result.pair_table = pair_stats_table(job.scan, table, job.config.stats_min_count, job.source)
    if job.candidates:
        job.result.add(select(job.scan, table, job.params, job.rows, job.seed, job.control, job.task))
    job.result.summary["pairs_kept"] = int(table.kept.sum())


@dataclass(frozen=True)
class _Draw:
    """What every candidate of one selection is built with: the scan, the source's row builder,
    the task (rows' ``task`` column and the key of every seeded choice) and the run seed."""

    scan: Scan
    rows: VGRows
    task: str
    seed: int


def select(
    scan: Scan, t: PairTable, params: RelationalErasureParams, rows: VGRows, seed: int, control: bool, task: str
) -> Selection:
    """Targeted candidates per kept pair (and controls in the same images when asked)."""
    sel = Selection()
    r = scan.relations
    kept_idx = np.flatnonzero(t.kept)
    if len(kept_idx) == 0:
        return sel
    cand = np.flatnonzero(np.isin(t.rel_pair, kept_idx))
    s_area = r["sw"][cand] * r["sh"][cand]
    o_area = r["ow"][cand] * r["oh"][cand]
    erase_subject = s_area <= o_area
    W, H = image_sizes(scan, r["img"][cand])
    frac = area_fraction(
        np.where(erase_subject, r["sw"][cand], r["ow"][cand]),
        np.where(erase_subject, r["sh"][cand], r["oh"][cand]),
        W,
        H,
    )
    ok = (frac >= params.area_range[0]) & (frac <= params.area_range[1])
    cand, erase_subject = cand[ok], erase_subject[ok]
    # one relationship per (pair, image): the lowest relationship id
    order = np.lexsort((r["rid"][cand], r["img"][cand], t.rel_pair[cand]))
    cand, erase_subject = cand[order], erase_subject[order]
    pair_of, img_of = t.rel_pair[cand], r["img"][cand]
    first = (
        np.r_[True, (pair_of[1:] != pair_of[:-1]) | (img_of[1:] != img_of[:-1])] if len(cand) else np.zeros(0, bool)
    )
    cand, erase_subject, pair_of, img_of = cand[first], erase_subject[first], pair_of[first], img_of[first]
    kept_pairs = kept_name_pairs(t)
    draw = _Draw(scan, rows, task, seed)
    names = scan.names.names
    for p in kept_idx:
        lo, hi = np.searchsorted(pair_of, p, "left"), np.searchsorted(pair_of, p, "right")
        by_img = {int(img_of[k]): k for k in range(lo, hi)}
        a, b = names[int(t.a[p])], names[int(t.b[p])]
        chosen = 0
        for iid in seeded_order(by_img, seed, task, a, b):
            if chosen >= params.images_per_pair:
                break
            path = rows.image_path(iid, sel)
            if path is None:
                continue
            k = by_img[iid]
            row = _targeted(draw, t, int(p), int(cand[k]), bool(erase_subject[k]), iid, path)
            sel.rows.append(row)
            chosen += 1
            if control:
                ctrl = _control(draw, kept_pairs, params, row, iid, path)
                if ctrl is not None:
                    sel.rows.append(ctrl)
    return sel


def _end(scan: Scan, row: int, prefix: str) -> ObjectRef:
    r = scan.relations
    return {
        "id": int(r[f"{prefix}_oid"][row]),
        "name": scan.names.names[int(r[f"{prefix}_nid"][row])],
        "box": [float(r[f"{prefix}{c}"][row]) for c in ("x", "y", "w", "h")],
    }


def _targeted(draw: _Draw, t: PairTable, p: int, rel: int, erase_subject: bool, iid: int, path: str) -> CandidateRow:
    scan = draw.scan
    r = scan.relations
    target, partner = (
        (_end(scan, rel, "s"), _end(scan, rel, "o")) if erase_subject else (_end(scan, rel, "o"), _end(scan, rel, "s"))
    )
    names = scan.names.names
    a, b = names[int(t.a[p])], names[int(t.b[p])]
    subject_name = a if t.a_subject[p] else b
    triplet_pred = scan.predicates.names[int(t.predicate[p])]
    extra = {
        "pair": {
            "a": a,
            "b": b,
            "c_a": int(t.c_a[p]),
            "c_b": int(t.c_b[p]),
            "c_ab": int(t.c_ab[p]),
            "p_b_given_a": float(t.p_b_given_a[p]),
            "p_a_given_b": float(t.p_a_given_b[p]),
        },
        "triplet": [subject_name, triplet_pred, b if subject_name == a else a],
        "relationship_id": int(r["rid"][rel]),
        "instance_predicate": scan.predicates.names[int(r["pid"][rel])],
        "instance_direction": "target_is_subject" if erase_subject else "target_is_object",
        "erase_rule": "smaller_box",
    }
    return draw.rows.row(
        draw.task,
        "targeted",
        iid,
        path,
        target=target,
        partner=partner,
        id_parts=(partner["id"],),
        extra=extra,
        predicate=triplet_pred,
        direction="target_is_subject" if subject_name == target["name"] else "target_is_object",
        edit_type="remove",
        fallback_chain=[],
    )


def _control(
    draw: _Draw,
    kept_pairs: set[tuple[int, int]],
    params: RelationalErasureParams,
    targeted: CandidateRow,
    iid: int,
    path: str,
) -> CandidateRow | None:
    """Erase, in the same image, an object whose class forms no kept pair with what remains."""
    scan, rows, task = draw.scan, draw.rows, draw.task
    o = scan.objects
    if o is None:
        return None
    obj_rows = rows.index.objects(iid)
    info = scan.images[iid]
    nids = [int(v) for v in o["nid"][obj_rows]]
    busy = {targeted["target_object_id"], targeted["partner_object_id"]}
    options = []
    for k, row in enumerate(obj_rows):
        oid = int(o["oid"][row])
        if oid in busy:
            continue
        frac = float(o["w"][row] * o["h"][row]) / (info.width * info.height)
        if not (params.area_range[0] <= frac <= params.area_range[1]):
            continue
        x = nids[k]
        others = {n for j, n in enumerate(nids) if j != k and n != x}
        if any((min(x, y), max(x, y)) in kept_pairs for y in others):
            continue
        options.append(row)
    if not options:
        return None
    row = options[int(rng_for(draw.seed, task, "control", iid).integers(len(options)))]
    target: ObjectRef = {
        "id": int(o["oid"][row]),
        "name": scan.names.names[int(o["nid"][row])],
        "box": rows.index.box("objects", int(row)),
    }
    extra = {"control_for": targeted["id"], "control_rule": "no_kept_pair_with_remaining_objects"}
    return rows.row(
        task,
        "control",
        iid,
        path,
        target=target,
        id_parts=("control",),
        extra=extra,
        edit_type="remove",
        fallback_chain=[],
    )


def mine_coco(job: MineJob) -> None:
    """RE on COCO: the pair statistics over co-occurrence links; candidates whose erased class may
    have unannotated instances in the image become rejects."""
    rows: CocoRows = job.rows
    table = pair_table(job.scan, job.params)
    job.result.pair_table = pair_stats_table(job.scan, table, job.config.stats_min_count, job.source)
    if job.candidates:
        sel = select(job.scan, table, job.params, rows, job.seed, job.control, job.task)
        job.result.add(drop_unsure(sel, rows.unsure, rows.data.path))
    job.result.summary["pairs_kept"] = int(table.kept.sum())
