"""Mining spatial relations from a Visual Genome scan.

Definitions:
- a relationship is spatial when its cleaned predicate maps to a canonical relation
  (:data:`geometry.WORDINGS`); it is then stated in its primary form ("table under cup" becomes
  "cup on table", :func:`geometry.primary_form`), whose subject is the object that moves;
- per unordered class pair {A, B}: N = the pair's spatial relationships (either order), and per
  stated relation (relation, subject class) its count; the dominant one is the most frequent
  (ties: alphabetical relation, then subject name); P = its count / N;
- a pair is kept when N >= ``n_min`` and P >= ``theta``;
- per kept pair and image, the relationship instance with the lowest id that states the dominant
  relation becomes the candidate, when the moved object's area is in ``area_range``, both classes
  occur once in the image (``unique_instances``) and :func:`geometry.destination` finds a free
  place on a side where the relation no longer holds. Images are taken in a seeded order.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

import numpy as np

from reactbench_spatial_relation import geometry
from reactbench_spatial_relation.params import SpatialRelationParams
from tasks.plugin_api import Scan, Selection, VGRows, reject, rng_for, seeded_order

# The Visual Genome files the miner reads beyond image_data and objects (the ``vg_reads`` hook).
VG_READS = ("relationships",)


def mine(job: Any) -> None:
    """The task's Visual Genome miner (the core's ``MineJob`` contract, ``miners/dispatch.py``):
    the pair statistics into the summary, then (``job.candidates``) the candidates."""
    stats = pair_stats(job.scan, spatial_rows(job.scan), job.params) if job.scan.relations is not None else []
    job.result.summary["spatial_pairs"] = len(stats)
    job.result.summary["spatial_pairs_kept"] = sum(1 for d in stats if d["kept"])
    if job.candidates:
        job.result.add(select(job.scan, job.params, job.rows, job.seed, job.task))


def spatial_rows(scan: Scan) -> list[tuple[int, str, int, int]]:
    """(relationship row, relation, subject class id, object class id) in primary form, per valid
    spatial relationship between two different classes."""
    r = scan.relations
    if r is None:
        return []
    canon = [geometry.canonical(p) for p in scan.predicates.names]
    out = []
    for row in np.flatnonzero(r["valid"] & (r["s_nid"] != r["o_nid"])):
        rel = canon[int(r["pid"][row])] if int(r["pid"][row]) >= 0 else None
        if rel is None:
            continue
        rel, s, o = geometry.primary_form(rel, int(r["s_nid"][row]), int(r["o_nid"][row]))
        out.append((int(row), rel, s, o))
    return out


def pair_stats(
    scan: Scan, spatial: list[tuple[int, str, int, int]], params: SpatialRelationParams
) -> list[dict[str, Any]]:
    """One dict per linked class pair: N, the dominant (relation, subject, object), P, kept."""
    names = scan.names.names
    total: Counter = Counter()
    stated: dict[tuple[int, int], Counter] = defaultdict(Counter)
    for _, rel, s, o in spatial:
        key = (min(s, o), max(s, o))
        total[key] += 1
        stated[key][(rel, s, o)] += 1
    out = []
    for key in sorted(total, key=lambda k: (names[k[0]], names[k[1]])):
        (rel, s, o), n = min(stated[key].items(), key=lambda kv: (-kv[1], kv[0][0], names[kv[0][1]]))
        p = n / total[key]
        out.append(
            {
                "subject": names[s],
                "relation": rel,
                "object": names[o],
                "s": s,
                "o": o,
                "n": total[key],
                "count": n,
                "p": p,
                "kept": total[key] >= params.n_min and p >= params.theta,
            }
        )
    return out


def select(scan: Scan, params: SpatialRelationParams, rows: VGRows, seed: int, task: str) -> Selection:
    """Candidates of the kept pairs (see the module doc); instances that fit no destination become
    ``no_free_place`` rejects, so the count of dropped instances stays visible."""
    sel = Selection()
    r, objs = scan.relations, scan.objects
    if r is None or objs is None:
        return sel
    spatial = spatial_rows(scan)
    stats = pair_stats(scan, spatial, params)
    kept = {(d["relation"], d["s"], d["o"]): d for d in stats if d["kept"]}
    by_pair: dict[tuple[str, int, int], dict[int, int]] = defaultdict(dict)
    for row, rel, s, o in spatial:
        if (rel, s, o) not in kept:
            continue
        iid, rid = int(r["img"][row]), int(r["rid"][row])
        best = by_pair[(rel, s, o)].get(iid)
        if best is None or rid < int(r["rid"][best]):
            by_pair[(rel, s, o)][iid] = row
    names = scan.names.names
    total = 0
    for key in sorted(by_pair, key=lambda k: (names[k[1]], k[0], names[k[2]])):
        rel, s, o = key
        chosen = 0
        for iid in seeded_order(by_pair[key], seed, task, names[s], rel, names[o]):
            if chosen >= params.images_per_pair or total >= params.max_candidates:
                break
            row = _candidate(scan, params, rows, seed, task, kept[key], by_pair[key][iid], iid, sel)
            if row is not None:
                sel.rows.append(row)
                chosen += 1
                total += 1
    return sel


def _end(scan: Scan, row: int, prefix: str, nid: int) -> dict[str, Any]:
    r = scan.relations
    return {
        "id": int(r[f"{prefix}_oid"][row]),
        "name": scan.names.names[nid],
        "box": [float(r[f"{prefix}{c}"][row]) for c in ("x", "y", "w", "h")],
    }


def _candidate(
    scan: Scan,
    params: SpatialRelationParams,
    rows: VGRows,
    seed: int,
    task: str,
    pair: dict[str, Any],
    row: int,
    iid: int,
    sel: Selection,
) -> dict[str, Any] | None:
    r, objs = scan.relations, scan.objects
    info = scan.images[iid]
    W, H = info.width, info.height
    s_is_subject = int(r["s_nid"][row]) == pair["s"]
    mover = _end(scan, row, "s" if s_is_subject else "o", pair["s"])
    anchor = _end(scan, row, "o" if s_is_subject else "s", pair["o"])
    frac = mover["box"][2] * mover["box"][3] / float(W * H)
    if not params.area_range[0] <= frac <= params.area_range[1]:
        return None
    obj_rows = rows.index.objects(iid)
    nids = objs["nid"][obj_rows]
    same = int(np.sum(nids == pair["s"]))
    if params.unique_instances and (same > 1 or int(np.sum(nids == pair["o"])) > 1):
        return None
    others = [
        rows.index.box("objects", int(k)) for k in obj_rows if int(objs["oid"][k]) not in (mover["id"], anchor["id"])
    ]
    gap = params.gap * min(W, H)
    sides = list(params.sides)
    k = int(rng_for(seed, task, "side", iid, mover["id"]).integers(len(sides)))
    sides = sides[k:] + sides[:k]
    found = geometry.destination(
        pair["relation"], mover["box"], anchor["box"], others, W, H, gap, params.max_overlap, sides
    )
    ref = f"{rows.ref}:{task}:{iid}:{int(r['rid'][row])}"
    if found is None:
        sel.rejects.append(
            reject(
                ref,
                "mine",
                "no_free_place",
                f"image {iid}: no free place for the {mover['name']} on any side of the {anchor['name']} where "
                f"'{pair['relation']}' stops holding (sides {list(params.sides)})",
                {"image_id": iid, "relationship_id": int(r["rid"][row])},
            )
        )
        return None
    path = rows.image_path(iid, sel)
    if path is None:
        return None
    dest, now = found
    extra = {
        "pair": {
            "subject": pair["subject"],
            "object": pair["object"],
            "relation": pair["relation"],
            "n": pair["n"],
            "count": pair["count"],
            "p": pair["p"],
        },
        "relationship_id": int(r["rid"][row]),
        "instance_predicate": scan.predicates.names[int(r["pid"][row])],
        "relation": pair["relation"],
        "destination_box": dest,
        "new_relation": now,
    }
    return rows.row(
        task,
        "targeted",
        iid,
        path,
        target=mover,
        partner=anchor,
        id_parts=(anchor["id"],),
        extra=extra,
        predicate=pair["relation"],
        direction="target_is_subject",
        same_instance_count=same,
        edit_type="move",
        fallback_chain=[],
    )


def stats_rows(scan: Scan, params: SpatialRelationParams) -> list[dict[str, Any]]:
    """The pair statistics as plain rows (for a summary or a test)."""
    return [{k: v for k, v in d.items() if k not in ("s", "o")} for d in pair_stats(scan, spatial_rows(scan), params)]
