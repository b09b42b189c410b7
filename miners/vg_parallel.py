"""Scanning the Visual Genome files in parallel worker processes, one file per job.

Why: after msgspec, the per-annotation work is Python and single-core; the three big files
are independent, so on a machine with cores to spare each goes to its own process (the
``mine.workers`` setting; 1 keeps everything in this process). A worker returns plain
columns plus its own name / predicate / attribute lists; the merge renumbers those into
one vocabulary. Results do not depend on the number of workers (tested).
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from miners.canonical import Canonicalizer, PredicateCanonicalizer
from miners.vg_format import ImageInfo, read_image_data
from miners.vg_scan import Progress, Scan, Vocab, new_scan, scan_objects, scan_relationships


@dataclass
class Job:
    kind: str  # objects | attributes | relationships
    path: str
    image_data: str
    canonical: str
    object_aliases: list[list[str]]
    predicate_aliases: list[list[str]]
    tolerance: float
    block: int


@dataclass
class JobResult:
    kind: str
    table: dict[str, np.ndarray]
    annotations: Optional[dict[str, np.ndarray]]
    names: list[str]
    predicates: list[str]
    attributes: list[str]
    rejects: list[dict[str, Any]]


def run_job(job: Job, images: dict[int, ImageInfo] | None = None, progress: Optional[Progress] = None) -> JobResult:
    """Scan one file into columns with a vocabulary of its own."""
    if images is None:
        images, _ = read_image_data(job.image_data, job.block)
    canon = Canonicalizer(job.canonical, job.object_aliases)
    preds = PredicateCanonicalizer(job.predicate_aliases)
    scan = new_scan(images, canon, preds, job.tolerance)
    ann = None
    if job.kind == "relationships":
        table = scan_relationships(job.path, scan, canon, preds, job.block, progress)
    else:
        table, ann = scan_objects(job.path, job.kind, scan, canon, job.block, progress)
    return JobResult(job.kind, table, ann, scan.names.names, scan.predicates.names, scan.attributes.names, scan.rejects)


def _remap(local: list[str], vocab: Vocab) -> np.ndarray:
    """Local id -> id in the merged vocabulary; the last entry maps -1 ("no name") to -1."""
    out = np.empty(len(local) + 1, dtype=np.int64)
    for i, name in enumerate(local):
        got = vocab.ids.get(name)
        if got is None:
            got = vocab.ids[name] = len(vocab.names)
            vocab.names.append(name)
        out[i] = got
    out[-1] = -1
    return out


def merge(scan: Scan, res: JobResult) -> None:
    """Put one job's columns into the scan, renumbering its names into the scan's vocabularies."""
    names = _remap(res.names, scan.names)
    scan.rejects.extend(res.rejects)
    t = res.table
    if res.kind == "relationships":
        t["s_nid"], t["o_nid"] = names[t["s_nid"]], names[t["o_nid"]]
        t["pid"] = _remap(res.predicates, scan.predicates)[t["pid"]]
        scan.relations = t
        return
    t["nid"] = names[t["nid"]]
    if res.kind == "objects":
        scan.objects = t
    else:
        scan.instances = t
        ann = res.annotations
        ann["aid"] = _remap(res.attributes, scan.attributes)[ann["aid"]]
        scan.annotations = ann


def _size(path: str) -> int:
    import fsspec

    fs, p = fsspec.core.url_to_fs(path)
    return int(fs.size(p) or 0)


def run_jobs(jobs: list[Job], workers: int, images: dict[int, ImageInfo], progress: Optional[Progress] = None, min_bytes: int = 0) -> list[JobResult]:
    """Run the jobs (largest file first) on ``workers`` processes; here when workers <= 1 or the files are small."""
    sizes = {j.kind: _size(j.path) for j in jobs}
    if workers <= 1 or len(jobs) <= 1 or sum(sizes.values()) < min_bytes:
        return [run_job(j, images, progress) for j in jobs]
    order = sorted(jobs, key=lambda j: -sizes[j.kind])
    ctx = multiprocessing.get_context("spawn")  # no fork: the parent may hold threads (Prefect, runners)
    with ProcessPoolExecutor(max_workers=min(workers, len(jobs)), mp_context=ctx) as pool:
        futures = [(j.kind, pool.submit(run_job, j)) for j in order]
        results = {}
        for kind, fut in futures:
            results[kind] = fut.result()
            if progress:
                progress(kind, -1)
    return [results[j.kind] for j in jobs]
