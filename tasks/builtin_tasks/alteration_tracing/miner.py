"""Alteration tracing (SPEC 3, AT): crowded images, a small target, and its assigned edit type.

Images need more than ``min_objects`` valid objects; the target is drawn (seeded) among
objects covering between ``min_target_area`` and ``max_target_area`` of the image.
Each image's edit type is drawn from a hash of the run seed, the task and the image id alone
(balanced in expectation, not exactly): an added image never changes another image's type, so
extending the sources keeps every old candidate's edit. Each candidate carries the other types
as its fallback chain (in ``edit_types`` order after its own). ``delete`` needs at least two
instances of the target's class: otherwise it is taken out of the chain, and a candidate assigned
``delete`` moves to the first fallback. The candidate id includes the edit type it carries, so
one id never names two different edits.
"""

from __future__ import annotations

import numpy as np

from tasks.builtin_tasks.alteration_tracing.params import AlterationTracingParams
from tasks.plugin_api import (
    CocoRows,
    MineJob,
    ObjectRef,
    Scan,
    Selection,
    VGRows,
    drop_unsure,
    npx,
    rng_for,
    seeded_order,
)


def assign_edit_type(k: int, types: tuple[str, ...], same_instance_count: int) -> tuple[str, list[str], str]:
    """(edit type, fallback chain, originally assigned type) for an image whose hash draw is ``k``."""
    n = len(types)
    assigned = types[k % n]
    chain = [types[(k + j) % n] for j in range(1, n)]
    edit = assigned
    if same_instance_count < 2:
        chain = [c for c in chain if c != "delete"]
        if assigned == "delete":
            edit, chain = chain[0], chain[1:]
    return edit, chain, assigned


def crowded_images(scan: Scan, params: AlterationTracingParams) -> np.ndarray:
    """Ids of images with more than ``min_objects`` valid objects."""
    o = scan.objects
    imgs, counts = npx.unique(o["img"][o["valid"]], return_counts=True)
    return imgs[counts > params.min_objects]


def mine(job: MineJob) -> None:
    """The task's miner on a Visual Genome :class:`Scan` (objects only)."""
    job.result.summary["crowded_images"] = int(crowded_images(job.scan, job.params).size)
    if job.candidates:
        job.result.add(select(job.scan, job.params, job.rows, job.seed, job.task))


def select(scan: Scan, params: AlterationTracingParams, rows: VGRows, seed: int, task: str) -> Selection:
    sel = Selection()
    o = scan.objects
    crowded = crowded_images(scan, params)
    k = 0
    for iid in seeded_order(crowded.tolist(), seed, task):
        if k >= params.max_images:
            break
        info = scan.images[iid]
        obj_rows = rows.index.objects(iid)
        frac = (o["w"][obj_rows] * o["h"][obj_rows]) / float(info.width * info.height)
        ok = obj_rows[(frac >= params.min_target_area) & (frac < params.max_target_area)]
        if len(ok) == 0:
            continue
        path = rows.image_path(iid, sel)
        if path is None:
            continue
        row = int(ok[int(rng_for(seed, task, "target", iid).integers(len(ok)))])
        nid = int(o["nid"][row])
        same = int(np.sum(o["nid"][obj_rows] == nid))
        draw = int(rng_for(seed, task, "edit_type", iid).integers(len(params.edit_types)))
        edit, chain, assigned = assign_edit_type(draw, params.edit_types, same)
        target: ObjectRef = {
            "id": int(o["oid"][row]),
            "name": scan.names.names[nid],
            "box": rows.index.box("objects", row),
        }
        extra: dict[str, object] = {
            "assigned_edit_type": assigned,
            "object_count": int(len(obj_rows)),
        }
        sel.rows.append(
            rows.row(
                task,
                "targeted",
                iid,
                path,
                target=target,
                id_parts=(edit,),
                extra=extra,
                same_instance_count=same,
                edit_type=edit,
                fallback_chain=chain,
            )
        )
        k += 1
    return sel


def mine_coco(job: MineJob) -> None:
    """AT on COCO: as on Visual Genome, without targets whose class may be missing instances."""
    rows: CocoRows = job.rows
    job.result.summary["crowded_images"] = int(crowded_images(job.scan, job.params).size)
    if job.candidates:
        job.result.add(
            drop_unsure(select(job.scan, job.params, rows, job.seed, job.task), rows.unsure, rows.data.path)
        )
