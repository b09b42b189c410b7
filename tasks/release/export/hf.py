"""The Hugging Face ``datasets`` folder: Parquet with image columns, one config per task.

Layout::

    <out>/README.md                                   dataset card (YAML header lists the configs)
    <out>/data/<task>/test-00000-of-00001.parquet     one file per task

``datasets.load_dataset(<out>)`` gives the ``all`` config (every task); ``load_dataset(<out>,
"<task id>")`` one task. Files are written with pyarrow from the ``datasets`` feature
schema, so they are byte-identical for the same inputs and need no network to load.
"""

from __future__ import annotations

import io
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from storage.fs import RunFS
from storage.task_spec import task_order
from tasks.release.export.rows import COLUMNS, features


def data_file(task: str) -> str:
    return f"data/{task}/test-00000-of-00001.parquet"


def write_task_parquet(out: RunFS, task: str, rows: list[dict[str, Any]]) -> str:
    """Write one task's rows (sorted by id) as a Parquet file carrying the HF feature metadata."""
    schema = features().arrow_schema
    rows = sorted(rows, key=lambda r: r["id"])
    table = pa.Table.from_pydict({c: [r[c] for r in rows] for c in COLUMNS}, schema=schema)
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd", row_group_size=256)
    rel = data_file(task)
    out.write_bytes_atomic(rel, buf.getvalue())
    return rel


def configs_yaml(tasks: list[str]) -> list[dict[str, Any]]:
    """The ``configs:`` entries of the card header: ``all`` (default) plus one per task."""
    entries: list[dict[str, Any]] = [
        {"config_name": "all", "default": True, "data_files": [{"split": "test", "path": "data/*/test-*.parquet"}]}
    ]
    for t in sorted(tasks, key=task_order):
        entries.append({"config_name": t, "data_files": [{"split": "test", "path": f"data/{t}/test-*.parquet"}]})
    return entries
