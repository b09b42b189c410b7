"""Reading and writing artifact tables: schema-checked, atomic, one folder of shards per artifact."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypedDict

import pyarrow as pa
import pyarrow.parquet as pq

from storage.fs import RunFS
from storage.hashing import sha256_hex
from storage.schemas import ArtifactSchema, get

SHARD_PREFIX = "part-"


class ArtifactError(ValueError):
    """A file does not match the schema its reader expects; the message names file and field."""


class FileRecord(TypedDict):
    """What a shard marker (and a stage manifest) records of one written file, to check it later."""

    bytes: int
    sha256: str


def shard_name(index: int) -> str:
    return f"{SHARD_PREFIX}{index:05d}.parquet"


def table_from_rows(schema: ArtifactSchema, rows: Sequence[dict[str, Any]], where: str = "") -> pa.Table:
    """Build a table with the artifact's exact schema; a missing required field names the row."""
    names = schema.schema.names
    for i, row in enumerate(rows):
        unknown = set(row) - set(names)
        if unknown:
            raise ArtifactError(
                f"{where or schema.name}: row {i} has fields not in schema {schema.name!r} v{schema.version}: {sorted(unknown)}"
            )
        for field in schema.schema:
            if not field.nullable and row.get(field.name) is None:
                raise ArtifactError(
                    f"{where or schema.name}: row {i} (id={row.get('id')!r}) misses required field {field.name!r}"
                )
    columns = {name: [row.get(name) for row in rows] for name in names}
    try:
        return pa.Table.from_pydict(columns, schema=schema.with_metadata())
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise ArtifactError(f"{where or schema.name}: cannot build {schema.name!r} table: {exc}") from exc


def table_from_output(
    schema: ArtifactSchema, output: Sequence[dict[str, Any]] | pa.Table, where: str = ""
) -> pa.Table:
    """A shard's output as the artifact's table: rows (checked row by row) or an Arrow table
    (checked column by column: no unknown column, no null in a required one, castable types), so
    a stage that computes columns (mining statistics) never goes through row dicts."""
    if not isinstance(output, pa.Table):
        return table_from_rows(schema, output, where)
    where = where or schema.name
    unknown = set(output.column_names) - set(schema.schema.names)
    if unknown:
        raise ArtifactError(f"{where}: columns not in schema {schema.name!r} v{schema.version}: {sorted(unknown)}")
    for field in schema.schema:
        if not field.nullable and field.name in output.column_names and output.column(field.name).null_count:
            raise ArtifactError(
                f"{where}: required field {field.name!r} has {output.column(field.name).null_count} null value(s)"
            )
    return conform(output.replace_schema_metadata(None), schema, where)


def empty_table(schema: ArtifactSchema) -> pa.Table:
    return schema.with_metadata().empty_table()


def conform(table: pa.Table, schema: ArtifactSchema, where: str) -> pa.Table:
    """Check a table read from ``where`` against the expected schema; add missing nullable fields."""
    meta = table.schema.metadata or {}
    found = meta.get(b"reactbench.artifact", b"").decode()
    version = meta.get(b"reactbench.version", b"").decode()
    if found and found != schema.name:
        raise ArtifactError(f"{where}: holds artifact {found!r}, expected {schema.name!r}")
    if version and int(version) > schema.version:
        raise ArtifactError(
            f"{where}: written with {schema.name!r} schema v{version}, this code reads up to v{schema.version}; upgrade reactbench-pipeline"
        )
    columns = []
    for field in schema.schema:
        if field.name not in table.column_names:
            if not field.nullable:
                raise ArtifactError(f"{where}: missing required field {field.name!r} of {schema.name!r}")
            columns.append(pa.nulls(table.num_rows, field.type))
            continue
        col = table.column(field.name)
        if not col.type.equals(field.type):
            try:
                col = col.cast(field.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise ArtifactError(
                    f"{where}: field {field.name!r} has type {col.type}, expected {field.type} ({schema.name!r} v{schema.version})"
                ) from exc
        columns.append(col)
    return pa.Table.from_arrays(columns, schema=schema.with_metadata())


def write_table(run: RunFS, rel_path: str, table: pa.Table) -> FileRecord:
    """Write one Parquet file atomically (temporary name, then rename); returns its size and
    sha256 (``{"bytes", "sha256"}``), which a shard's marker records to check the file later."""
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd")
    data = buf.getvalue()
    run.write_bytes_atomic(rel_path, data)
    return {"bytes": len(data), "sha256": sha256_hex(data)}


def read_table(run: RunFS, rel_path: str, schema: ArtifactSchema | str, columns: list[str] | None = None) -> pa.Table:
    schema = get(schema) if isinstance(schema, str) else schema
    where = run.path(rel_path)
    try:
        table = _read_parquet(run, where)
    except FileNotFoundError:
        raise
    except Exception as exc:  # corrupt file
        raise ArtifactError(f"{where}: unreadable Parquet file: {exc}") from exc
    table = conform(table, schema, where)
    return table.select(columns) if columns else table


def _read_parquet(run: RunFS, where: str) -> pa.Table:
    """Local files by path (Arrow's own IO); other filesystems through a file object, decoded
    without Arrow's thread pool: pyarrow 26 aborts at interpreter exit ("terminate called without
    an active exception", measured in ~1 of 8 processes under load) after threaded reads from
    Python file objects; shards are small, so one thread costs little."""
    if run.local:
        return pq.read_table(where)
    with run.fs.open(where, "rb") as f:
        return pq.read_table(f, use_threads=False)


class ArtifactReader:
    """All shards of one artifact folder (``<stage>/<artifact>/part-*.parquet``), in shard order."""

    def __init__(self, run: RunFS, folder: str, schema: ArtifactSchema | str):
        self.run = run
        self.folder = folder.strip("/")
        self.schema = get(schema) if isinstance(schema, str) else schema

    def shard_files(self) -> list[str]:
        return [
            f"{self.folder}/{n}"
            for n in self.run.listdir(self.folder)
            if n.startswith(SHARD_PREFIX) and n.endswith(".parquet")
        ]

    def exists(self) -> bool:
        return bool(self.shard_files())

    def iter_tables(self, columns: list[str] | None = None) -> Iterator[pa.Table]:
        for rel in self.shard_files():
            yield read_table(self.run, rel, self.schema, columns)

    def read(self, columns: list[str] | None = None) -> pa.Table:
        tables = list(self.iter_tables(columns))
        if not tables:
            base = empty_table(self.schema)
            return base.select(columns) if columns else base
        return pa.concat_tables(tables)

    def rows(self, columns: list[str] | None = None) -> list[dict[str, Any]]:
        return self.read(columns).to_pylist()

    def iter_rows(self, columns: list[str] | None = None) -> Iterator[dict[str, Any]]:
        for table in self.iter_tables(columns):
            yield from table.to_pylist()

    def iter_shared_rows(
        self,
        columns: list[str] | None = None,
        pool: dict[str, str] | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Rows one shard at a time, for a caller that keeps many of them (eval metrics, reports):
        in a string column whose values repeat (task, editor, edit id, image path...), equal
        values are one object across shards (``pool``), so a kept row costs its dict and its
        unique values. Columns of mostly distinct values (ids, replies) are left as read.
        ``progress`` sees (shards read, total)."""
        pool = {} if pool is None else pool
        files = self.shard_files()
        for done, rel in enumerate(files, 1):
            yield from shared_rows(read_table(self.run, rel, self.schema, columns), pool)
            if progress is not None:
                progress(done, len(files))

    def count(self) -> int:
        total = 0
        for rel in self.shard_files():
            with self.run.fs.open(self.run.path(rel), "rb") as f:
                total += pq.ParquetFile(f).metadata.num_rows
        return total


def shared_rows(table: pa.Table, pool: dict[str, str]) -> Iterator[dict[str, Any]]:
    """The rows of ``table`` as dicts, repeated strings taken from ``pool`` (see ``iter_shared_rows``)."""
    values = [_shared(table.column(i).to_pylist(), table.schema.field(i).type, pool) for i in range(table.num_columns)]
    names = table.column_names
    for row in zip(*values):
        yield dict(zip(names, row))


def _shared(values: list[Any], kind: pa.DataType, pool: dict[str, str]) -> list[Any]:
    """``values`` with each repeated string (or string inside a list) replaced by its one copy in ``pool``."""
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        if len(set(values)) * 2 > len(values):
            return values
        return [v if v is None else pool.setdefault(v, v) for v in values]
    if (pa.types.is_list(kind) or pa.types.is_large_list(kind)) and pa.types.is_string(kind.value_type):
        return [v if v is None else [x if x is None else pool.setdefault(x, x) for x in v] for v in values]
    return values
