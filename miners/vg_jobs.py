"""Scanning one Visual Genome file into columns: DuckDB when it can, msgspec otherwise.

The jobs share one scan (vocabularies, rejects), so a raw name met in three files is
canonicalised once. ``reader``: ``auto`` tries DuckDB (when
installed and the path is local) and falls back to the msgspec reader for any file DuckDB
refuses (bad entries become rejects there; syntax errors are reported with byte offsets);
``msgspec`` always uses the streaming msgspec reader; ``duckdb`` insists on DuckDB when it
is installed (still falling back on refused files). Both produce identical columns (tested).
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from miners.canonical import Canonicalizer, PredicateCanonicalizer
from miners.vg_scan import Progress, Scan, _validate_objects, _validate_relations, scan_objects, scan_relationships


@dataclass
class Job:
    kind: str  # objects | attributes | relationships
    path: str
    canon: Canonicalizer  # shared by the jobs: each distinct raw name is canonicalised once
    preds: PredicateCanonicalizer
    tolerance: float
    block: int
    reader: str = "auto"
    threads: int = 2


def _use_duckdb(job: Job) -> bool:
    from miners import vg_duckdb

    return job.reader in ("auto", "duckdb") and "://" not in job.path and vg_duckdb.available()


def run_job(job: Job, scan: Scan, progress: Progress | None = None, fetched: Future | None = None) -> str:
    """Scan one file into validated columns of ``scan`` (shared vocabularies); returns the reader used.
    ``fetched``: the file's DuckDB table, being fetched in a thread (see :func:`run_jobs`)."""
    canon, preds = job.canon, job.preds
    if _use_duckdb(job):
        import duckdb

        from miners import vg_duckdb

        mark = len(scan.rejects)
        try:
            tab = fetched.result() if fetched is not None else None
            table, ann = vg_duckdb.scan_file(job.kind, job.path, scan, canon, job.threads, tab)
            del tab
        except (duckdb.Error, UnicodeDecodeError):
            # refused (a file that is not UTF-8 JSON fails inside DuckDB's own error message, as
            # a bare UnicodeDecodeError): the msgspec reader below says exactly what is wrong,
            # naming the file and the byte offset, entry by entry
            del scan.rejects[mark:]
        else:
            if job.kind == "relationships":
                table["valid"] = _validate_relations(table, scan, job.path)
            else:
                table["valid"] = _validate_objects(table, scan, job.kind, job.path)
            _store(scan, job.kind, table, ann)
            if progress:
                progress(job.kind, -1)
            return "duckdb"
    ann = None
    if job.kind == "relationships":
        table = scan_relationships(job.path, scan, canon, preds, job.block, progress)
    else:
        table, ann = scan_objects(job.path, job.kind, scan, canon, job.block, progress)
    _store(scan, job.kind, table, ann)
    return "msgspec"


def _store(scan: Scan, kind: str, table: dict[str, np.ndarray], ann: dict[str, np.ndarray] | None) -> None:
    if kind == "relationships":
        scan.relations = table
    elif kind == "objects":
        scan.objects = table
    else:
        scan.instances, scan.annotations = table, ann


def run_jobs(jobs: list[Job], scan: Scan, progress: Progress | None = None) -> None:
    """Scan every file into ``scan``, recording which reader produced each.

    With DuckDB, file k+1 is fetched in a background thread while this thread turns file k's
    table into columns (canonicalising names, validating boxes): the two overlap on two cores,
    and at most two files' tables are held at once."""
    from miners import vg_duckdb

    duck = [j for j in jobs if _use_duckdb(j)]
    if len(duck) < 2:
        for job in jobs:
            scan.readers[job.kind] = run_job(job, scan, progress)
        return
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="vg-fetch") as pool:
        pending: dict[int, Future] = {}

        def ahead(i: int) -> None:
            if i < len(jobs) and _use_duckdb(jobs[i]) and i not in pending:
                pending[i] = pool.submit(vg_duckdb.fetch, jobs[i].kind, jobs[i].path, jobs[i].threads)

        ahead(0)
        for i, job in enumerate(jobs):
            ahead(i + 1)  # queued behind file i's fetch: the pool has one worker
            scan.readers[job.kind] = run_job(job, scan, progress, pending.pop(i, None))
