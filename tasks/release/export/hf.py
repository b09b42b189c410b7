"""The Hugging Face ``datasets`` folder: Parquet with image columns, one config per task.

Layout::

    <out>/README.md                                   dataset card (YAML header lists the configs)
    <out>/data/<task>/test-00000-of-00001.parquet     one file per task

``datasets.load_dataset(<out>)`` gives the ``all`` config (every task); ``load_dataset(<out>,
"<task id>")`` one task. Files are written with pyarrow from the ``datasets`` feature
schema, so they are byte-identical for the same inputs and need no network to load.

Each image is stored once per file although ~14 questions ask about it: the rows that share an
image (the questions of one edit, and of edits of one source image) are written next to each
other in one row group (:func:`row_groups`), and the image column is dictionary-encoded with a
dictionary that may grow as large as the row group, so Parquet keeps each distinct image once
in the row group's dictionary page and every row holds a small index into it. Readers see the
same column (``images``: a list of ``{bytes, path}``) as before: dictionary encoding is how
Parquet stores a column, not part of its type. Row groups are written one at a time, so only
one group's image bytes are ever in memory.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from storage.fs import RunFS
from storage.task_spec import task_order
from tasks.release.export.rows import COLUMNS, ReleaseRow, features, image_rels

# Image bytes (each row counting its own) one row group holds at most, unless one set of rows
# sharing an image is larger: what the export holds in memory at once, and (with pyarrow's
# copies while encoding) about a third of the write's peak.
ROW_GROUP_BYTES = 64 * 1024 * 1024
# Parquet falls back from dictionary to plain encoding for the rest of a column chunk once its
# dictionary page passes this size; above any row group's distinct image bytes, it never does
# (a page is limited to 2 GiB).
DICTIONARY_PAGE_LIMIT = 1024 * 1024 * 1024


def data_file(task: str) -> str:
    return f"data/{task}/test-00000-of-00001.parquet"


def row_bytes(row: ReleaseRow, sizes: Mapping[str, int]) -> int:
    """The image bytes a row carries (each of its images counted)."""
    return sum(sizes[rel] for rel in image_rels(row))


def row_groups(
    rows: list[ReleaseRow], sizes: Mapping[str, int], limit: int = ROW_GROUP_BYTES
) -> list[list[ReleaseRow]]:
    """One task's rows in release order, cut into row groups.

    Rows that share an image, directly or through other rows (a before/after pair links its two
    images), form one set; sets come in the order of their smallest question id, the rows of a
    set ordered by their images and then by id. Whole sets are packed into a row group while its
    image bytes (``sizes``: bytes per image-store path, each row counting its own) stay within
    ``limit``; only a set larger than ``limit`` on its own is cut, and then an image whose rows
    are cut apart is stored once in each group that holds one of them."""
    parent: dict[str, str] = {}

    def root(rel: str) -> str:
        while parent.setdefault(rel, rel) != rel:
            parent[rel] = parent[parent[rel]]
            rel = parent[rel]
        return rel

    for r in rows:
        first, *rest = image_rels(r)
        for rel in rest:
            a, b = root(first), root(rel)
            if a != b:
                parent[max(a, b)] = min(a, b)
        root(first)
    sets: dict[str, list[ReleaseRow]] = {}
    for r in rows:
        sets.setdefault(root(image_rels(r)[0]), []).append(r)
    ordered = sorted(
        (sorted(members, key=lambda r: (image_rels(r), r["id"])) for members in sets.values()),
        key=lambda m: min(r["id"] for r in m),
    )
    groups: list[list[ReleaseRow]] = []
    current: list[ReleaseRow] = []
    held = 0
    for members in ordered:
        size = sum(row_bytes(r, sizes) for r in members)
        if current and held + size > limit:
            groups.append(current)
            current, held = [], 0
        for r in members:  # a set within the limit goes in whole; a larger one is cut at the limit
            b = row_bytes(r, sizes)
            if current and held + b > limit and size > limit:
                groups.append(current)
                current, held = [], 0
            current.append(r)
            held += b
    if current:
        groups.append(current)
    return groups


@contextmanager
def task_parquet(out: RunFS, task: str) -> Iterator[Callable[[list[dict[str, object]]], None]]:
    """Open one task's Parquet file in ``out``; yields a function that writes one row group of
    released rows (:func:`tasks.release.export.rows.with_bytes`). The file carries the HF feature
    metadata and appears whole when the block ends."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = features().arrow_schema
    with out.write_stream_atomic(data_file(task)) as f:
        writer = pq.ParquetWriter(f, schema, compression="zstd", dictionary_pagesize_limit=DICTIONARY_PAGE_LIMIT)
        try:

            def write(rows: list[dict[str, object]]) -> None:
                table = pa.Table.from_pydict({c: [r[c] for r in rows] for c in COLUMNS}, schema=schema)
                writer.write_table(table, row_group_size=max(len(rows), 1))

            yield write
        finally:
            writer.close()


def configs_yaml(tasks: list[str]) -> list[dict[str, Any]]:
    """The ``configs:`` entries of the card header: ``all`` (default) plus one per task."""
    entries: list[dict[str, Any]] = [
        {"config_name": "all", "default": True, "data_files": [{"split": "test", "path": "data/*/test-*.parquet"}]}
    ]
    for t in sorted(tasks, key=task_order):
        entries.append({"config_name": t, "data_files": [{"split": "test", "path": f"data/{t}/test-*.parquet"}]})
    return entries
