"""DC's miners: count-stratified images from FSC147 and from a COCO-format file. Both sources
hold the selection over their own annotations (``fsc147_select``, ``coco_select_counting``):
this module decides what the task takes from them."""

from __future__ import annotations

from tasks.plugin_api import CocoRows, MineJob, coco_select_counting, fsc147_select, split_counts


def mine(job: MineJob) -> None:
    """The task's miner on FSC147 (``job.scan`` is the ``FSCData``): stratified candidates,
    and per split how many annotated images the configured ``splits`` leave out."""
    if job.candidates:
        job.result.add(fsc147_select(job.scan, job.params, job.seed, job.task))
    job.result.summary.update(split_counts(job.scan, job.params.splits))


def mine_coco(job: MineJob) -> None:
    """DC on COCO: per-image class counts (see ``miners/coco.py``)."""
    rows: CocoRows = job.rows
    if not job.candidates:
        return
    sel, skipped = coco_select_counting(rows.data, job.params, job.seed, rows.locator, rows.unsure, job.task)
    job.result.add(sel)
    job.result.summary["dc_not_exhaustive"] = skipped
