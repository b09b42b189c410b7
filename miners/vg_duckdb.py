"""The fast reader: DuckDB's JSON reader (C++, multi-threaded) flattens a VG file into columns.

Why: with msgspec the decode is fast but turning millions of decoded objects into columns
is Python work per annotation (3-5x the decode). DuckDB reads the top-level array in
streaming fashion, unnests the per-image lists and hands back Arrow columns, so the only
Python work is canonicalising each *distinct* raw name once. The columns are exactly the
msgspec path's (same validation and rejects downstream, tested on the sample).

Anything DuckDB refuses (a malformed entry, a wrong type, a truncated file) makes the
caller fall back to the msgspec reader for that file, which turns bad entries into reject
rows and reports syntax errors with their byte offsets. DuckDB never skips rows silently
here: ``ignore_errors`` stays off.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from miners import npx
from miners.canonical import Canonicalizer
from miners.vg_scan import Scan, Vocab, _rej

if TYPE_CHECKING:  # pyarrow is imported where a table is read (CLI start-up stays fast)
    import numpy.typing as npt
    import pyarrow as pa

_BOX = "object_id BIGINT, id BIGINT, x DOUBLE, y DOUBLE, w DOUBLE, h DOUBLE, names VARCHAR[], name VARCHAR, object_names VARCHAR[], synsets VARCHAR[]"
COLUMNS = {
    "objects": "{image_id: 'BIGINT', id: 'BIGINT', objects: 'STRUCT(" + _BOX + ")[]'}",
    "attributes": "{image_id: 'BIGINT', id: 'BIGINT', attributes: 'STRUCT(" + _BOX + ", attributes VARCHAR[])[]'}",
    "relationships": "{image_id: 'BIGINT', id: 'BIGINT', relationships: 'STRUCT(relationship_id BIGINT, id BIGINT, predicate VARCHAR, "
    "subject STRUCT(" + _BOX + "), object STRUCT(" + _BOX + "))[]'}",
}


def available() -> bool:
    try:
        import duckdb  # noqa: F401
    except ImportError:
        return False
    return True


def _sql_path(path: str) -> str:
    return path.replace("'", "''")


def _end(p: str) -> str:
    """Columns of one object-like struct ``p``: id, box, raw name, first synset."""
    return (
        f"coalesce({p}.object_id, {p}.id, -1) AS {p.split('.')[-1]}_oid, {p}.x AS {p.split('.')[-1]}_x, {p}.y AS {p.split('.')[-1]}_y, "
        f"{p}.w AS {p.split('.')[-1]}_w, {p}.h AS {p.split('.')[-1]}_h, coalesce({p}.names[1], {p}.name, {p}.object_names[1]) AS {p.split('.')[-1]}_raw, "
        f"{p}.synsets[1] AS {p.split('.')[-1]}_synset"
    )


def _query(kind: str, path: str) -> str:
    src = f"read_json('{_sql_path(path)}', format='array', columns={COLUMNS[kind]}, maximum_object_size=1073741824)"
    inner = f"SELECT coalesce(image_id, id) AS img, unnest({kind}) AS e FROM {src}"
    if kind == "relationships":
        return (
            f"SELECT img, coalesce(e.relationship_id, e.id, -1) AS rid, e.predicate AS pred, {_end('e.subject')}, {_end('e.object')} "
            f"FROM ({inner})"
        )
    extra = ", e.attributes AS attrs" if kind == "attributes" else ""
    return f"SELECT img, {_end('e')}{extra} FROM ({inner})"


def _ids(column: pa.ChunkedArray, vocab: Vocab) -> np.ndarray:
    """Vocabulary ids for a string column: each distinct raw string is canonicalised once."""
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    enc = pc.dictionary_encode(arr)
    lut = np.asarray(vocab.map(enc.dictionary.to_pylist()) + [-1], dtype=np.int64)
    idx = enc.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    return lut[idx]


def _name_ids(tab: pa.Table, prefix: str, vocab: Vocab, canon: Canonicalizer) -> np.ndarray:
    if canon.mode != "synset":
        return _ids(tab.column(f"{prefix}_raw"), vocab)
    raws = tab.column(f"{prefix}_raw").to_pylist()
    syns = tab.column(f"{prefix}_synset").to_pylist()
    cache: dict[tuple[str | None, str | None], int] = {}
    out = np.empty(len(raws), dtype=np.int64)
    for i, key in enumerate(zip(raws, syns)):
        got = cache.get(key)
        if got is None:
            raw, syn = key
            got = cache[key] = vocab.id_of_class(canon.object_name(raw or "", [syn])) if syn else vocab.id_of_raw(raw)
        out[i] = got
    return out


def _num(tab: pa.Table, name: str, dtype: npt.DTypeLike = np.float64, fill: float = np.nan) -> np.ndarray:
    """A numeric column as numpy (nulls filled). Chunks are combined first: ``ChunkedArray.to_numpy``
    imports pandas (seconds of start-up for nothing)."""
    col = tab.column(name)
    if col.null_count:
        col = col.fill_null(fill)
    arr = col.combine_chunks() if hasattr(col, "combine_chunks") else col
    return arr.to_numpy(zero_copy_only=False).astype(dtype)


def _unknown_images(img: np.ndarray, kind: str, path: str, scan: Scan) -> np.ndarray:
    """Mask of rows whose image ``image_data.json`` knows; one reject per unknown image id."""
    known = np.fromiter(scan.images.keys(), dtype=np.int64, count=len(scan.images))
    keep = np.isin(img, known)
    if not keep.all():
        ids, counts = npx.unique(img[~keep], return_counts=True)
        for iid, n in zip(ids.tolist(), counts.tolist()):
            if iid == -1:
                _rej(
                    scan.rejects, f"vg:{kind}:?", "malformed_entry", f"{path}: an element has no image_id ({n} {kind})"
                )
            else:
                _rej(
                    scan.rejects,
                    f"vg:{kind}:{iid}",
                    "unknown_image_id",
                    f"{path}: image_id {iid} is not in image_data.json ({n} {kind} skipped)",
                )
    return keep


def fetch(kind: str, path: str, threads: int) -> pa.Table:
    """DuckDB's part alone: one VG file flattened into an Arrow table. Touches no shared state,
    so the next file can be fetched in a thread while Python turns the previous one into columns
    (DuckDB releases the GIL while it parses)."""
    import duckdb

    con = duckdb.connect()
    try:
        con.execute(f"SET threads TO {max(1, int(threads))}")
        con.execute("SET preserve_insertion_order = true")
        con.execute("SET enable_progress_bar = false")  # the stage has its own progress line
        return con.sql(_query(kind, path)).to_arrow_table()
    finally:
        con.close()


def scan_file(
    kind: str, path: str, scan: Scan, canon: Canonicalizer, threads: int, tab: pa.Table | None = None
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray] | None]:
    """One VG file (or its already fetched table) -> the same columns as ``vg_scan.scan_objects`` /
    ``scan_relationships`` (before validation)."""
    import pyarrow.compute as pc

    if tab is None:
        tab = fetch(kind, path, threads)
    img = _num(tab, "img", np.int64, -1)
    keep = _unknown_images(img, kind, path, scan)
    if not keep.all():
        import pyarrow as pa

        tab = tab.filter(pa.array(keep))
        img = img[keep]
    if kind == "relationships":
        t = {"img": img, "rid": _num(tab, "rid", np.int64, -1), "pid": _ids(tab.column("pred"), scan.predicates)}
        for end, col in (("s", "subject"), ("o", "object")):
            t[f"{end}_oid"] = _num(tab, f"{col}_oid", np.int64, -1)
            t[f"{end}_nid"] = _name_ids(tab, col, scan.names, canon)
            for c in "xywh":
                t[f"{end}{c}"] = _num(tab, f"{col}_{c}")
        return t, None
    t = {
        "img": img,
        "oid": _num(tab, "e_oid", np.int64, -1),
        "nid": _name_ids(tab, "e", scan.names, canon),
        "sid": _ids(tab.column("e_synset"), scan.synsets),
    }
    for c in "xywh":
        t[c] = _num(tab, f"e_{c}")
    if kind != "attributes":
        return t, None
    attrs = tab.column("attrs").combine_chunks()
    inst = pc.list_parent_indices(attrs).to_numpy().astype(np.int64)
    aids = _ids(pc.list_flatten(attrs), scan.attributes)
    ok = aids >= 0
    na = len(scan.attributes.names) + 1
    key = npx.unique(inst[ok] * na + aids[ok])
    return t, {"inst": key // na, "aid": key % na}
