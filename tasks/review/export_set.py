"""The review export as one set: written aside, renamed into place, sealed by a manifest.

``review/export_manifest.json`` names every file of the set with its sha256 and row count and
the decision-log position (newest event id) the set reflects. It is removed before the first
file of a new set is renamed into place and written (atomically) after the last one, so a
reader that finds it, with every listed file matching its hash and no other file beside
them, reads one complete set; anything else (an export killed half-way, files copied in by
hand) is refused with a message saying to export again.

On a filesystem the new files are written aside and renamed into place. On an object store a
rename is a copy and a delete, so each file is one PUT of its final key instead: the manifest is
removed first and written last, so a reader meets the same rule (no manifest, or every listed
file with its hash) whatever a kill leaves behind.
"""

from __future__ import annotations

import json
import posixpath
import uuid
from typing import Any

import pyarrow as pa

from storage import addresses
from storage.fs import RunFS
from storage.hashing import sha256_hex
from storage.parquet_io import shard_name, write_table
from tasks.engine.suggest import suggest

EXPORT_DIR = addresses.REVIEW_DIR
MANIFEST = addresses.REVIEW_EXPORT_MANIFEST
FORMAT = 1
TMP_PREFIX = ".export-tmp-"
OLD_PREFIX = ".export-old-"


class ExportSetError(RuntimeError):
    """The review export in the run directory is missing, incomplete or mixed."""


def write_export_set(
    run: RunFS, tables: dict[str, pa.Table], position: int, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Write ``review/<name>/part-00000.parquet`` for each table as one set; returns the manifest.

    The old manifest is removed first (the old set is no longer complete from here on) and the
    new one written last: a kill at any point leaves either no manifest or a complete set.
    Filesystems: the files are written into a temporary folder, then each folder is renamed
    into place. Object stores: each file is written to its final key (no copy + delete)."""
    clean_leftovers(run)
    aside: list[str] = []  # the temporary folders of a filesystem export, removed at the end
    if run.object_store:
        run.rm(MANIFEST)
        files = {name: _write_member(run, f"{EXPORT_DIR}/{name}", table) for name, table in sorted(tables.items())}
    else:
        token = uuid.uuid4().hex
        tmp = f"{EXPORT_DIR}/{TMP_PREFIX}{token}"
        old = f"{EXPORT_DIR}/{OLD_PREFIX}{token}"
        aside = [old, tmp]
        files = {name: _write_member(run, f"{tmp}/{name}", table) for name, table in sorted(tables.items())}
        run.rm(MANIFEST)
        run.makedirs(old)
        for name in sorted(tables):
            if run.exists(EXPORT_DIR, name):
                run.fs.mv(run.path(EXPORT_DIR, name), run.path(old, name), recursive=True)
            run.fs.mv(run.path(tmp, name), run.path(EXPORT_DIR, name), recursive=True)
    manifest = {"format": FORMAT, "decision_log_position": int(position), "files": files, **(extra or {})}
    run.write_text_atomic(MANIFEST, json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    for folder in aside:
        run.rm(folder)
    return manifest


def _write_member(run: RunFS, folder: str, table: pa.Table) -> dict[str, Any]:
    """One table of the set as ``<folder>/part-00000.parquet`` (any other file there removed);
    its manifest entry names the final path, whichever folder it is written to."""
    name = posixpath.basename(folder)
    for leftover in run.listdir(folder):
        if leftover != shard_name(0):
            run.rm(folder, leftover)
    rel = f"{folder}/{shard_name(0)}"
    write_table(run, rel, table)
    return {
        "path": f"{EXPORT_DIR}/{name}/{shard_name(0)}",
        "sha256": sha256_hex(run.read_bytes(rel)),
        "rows": table.num_rows,
    }


def clean_leftovers(run: RunFS) -> None:
    """Remove the temporary folders of an export that was killed."""
    for name in run.listdir(EXPORT_DIR):
        if name.startswith((TMP_PREFIX, OLD_PREFIX)):
            run.rm(EXPORT_DIR, name)


def export_again(run: RunFS) -> str:
    """What every refusal of an export set tells the user to do."""
    return f"run `{suggest('review', 'export', '--run-dir', run.url)}` again"


def read_manifest(run: RunFS) -> dict[str, Any] | None:
    if not run.exists(MANIFEST):
        return None
    try:
        return json.loads(run.read_text(MANIFEST))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ExportSetError(f"{run.path(MANIFEST)} is not valid JSON ({exc}); {export_again(run)}") from None


def require_export_set(run: RunFS, names: tuple[str, ...] = ()) -> dict[str, Any]:
    """The manifest of a complete review export, after checking every file it lists (hash,
    and no other file in those folders). Raises :class:`ExportSetError` otherwise."""
    again = export_again(run)
    manifest = read_manifest(run)
    if manifest is None:
        present = [
            n for n in names or ("verified_edits", "verified_questions", "decisions") if run.listdir(EXPORT_DIR, n)
        ]
        what = (
            f"{', '.join(addresses.review_export(n) for n in present)} exist but" if present else "the review export"
        )
        raise ExportSetError(
            f"{what} has no manifest {run.path(MANIFEST)}: the export is incomplete or was interrupted; {again}"
        )
    if manifest.get("format") != FORMAT:
        raise ExportSetError(f"{run.path(MANIFEST)}: unknown export format {manifest.get('format')!r}; {again}")
    files = manifest.get("files") or {}
    for name in names:
        if name not in files:
            raise ExportSetError(f"{run.path(MANIFEST)} lists no {name!r}; {again}")
    for name, entry in sorted(files.items()):
        folder = posixpath.dirname(entry["path"])
        listed = [n for n in run.listdir(folder) if not n.startswith(".")]
        if listed != [posixpath.basename(entry["path"])]:
            raise ExportSetError(
                f"{run.path(folder)} holds {listed}, the export manifest names {posixpath.basename(entry['path'])}; {again}"
            )
        if sha256_hex(run.read_bytes(entry["path"])) != entry["sha256"]:
            raise ExportSetError(
                f"{run.path(entry['path'])} does not match the export manifest (a file of another export); {again}"
            )
    return manifest
