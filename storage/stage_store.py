"""One stage's folder in a run directory: shards, completion markers and ``_manifest.json``.

Layout::

    <run>/<stage>/<artifact>/part-00000.parquet   outputs, one file per shard
    <run>/<stage>/rejects/part-00000.parquet       rejects of that shard
    <run>/<stage>/_shards/00000.json               completion marker, written last
    <run>/<stage>/_manifest.json                   summary (config hash, inputs, counts, ...)

A shard counts as done only when its marker exists and carries the current stage key
(config hash + input fingerprints). Outputs are renamed into place before the marker, so a
crash at any instant leaves either a finished shard or one that is recomputed on rerun.
Markers are separate files so workers on other processes or machines never race on one
manifest.

A marker is checked against its files, never trusted alone: it names every file of its shard
with the size and sha256 written (``files``), and a finished stage's manifest lists them all.
:meth:`StageStore.damage` compares them with one listing of the stage folder (missing files,
other sizes, and, in the artifact folders, shard files none of them names) and, when asked,
with the files' contents (sha256, streamed and read once per process: ``storage.checksums``).
A build recomputes a damaged shard (``prepare_stage``), ``reactbench status`` shows its stage as
``damaged``, and a stage or command that reads a finished stage (:meth:`finished_damage`, which
checks the sha256 too) refuses a damaged one instead of reading it as empty or altered.
"""

from __future__ import annotations

import datetime as _dt
import json
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict

import pyarrow as pa

from storage.checksums import changed_files, remember
from storage.fs import RunFS
from storage.hashing import canonical_json, sha256_hex
from storage.parquet_io import (
    SHARD_PREFIX,
    ArtifactReader,
    FileRecord,
    shard_name,
    table_from_output,
    table_from_rows,
    write_table,
)
from storage.rejects import RejectRow
from storage.schemas import REJECTS, ArtifactSchema, get

MANIFEST = "_manifest.json"
MARKERS = "_shards"


def utc_now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def code_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("reactbench-pipeline")
    except PackageNotFoundError:
        return "0+unknown"


class ShardMarker(TypedDict, total=False):
    """A finished shard's completion marker (``_shards/00000.json``); markers written before
    markers named their files lack ``files``; ``items``, ``extra``, ``placement`` are optional."""

    shard: int
    key: str
    rows_in: int
    rows_out: dict[str, int]
    rejected: int
    reject_reasons: dict[str, int]
    finished_at: str
    files: dict[str, FileRecord]
    items: dict[str, int]
    extra: dict[str, Any]
    placement: Mapping[str, object]


class MarkerCounts(TypedDict):
    """Counts over a stage's finished shard markers (:meth:`StageStore.summarize`)."""

    completed_shards: list[int]
    rows_in: int
    rows_out: dict[str, int]
    rejected: int
    reject_reasons: dict[str, int]
    items_reused: int
    items_computed: int
    items_by_shard: dict[int, dict[str, int]]


@dataclass
class ShardResult:
    """What processing one shard produced: rows (or an Arrow table) per output artifact, and
    rejects; ``extra`` (small, JSON-able) is kept in the shard's marker for ``finalize``."""

    outputs: dict[str, list[dict[str, Any]] | pa.Table] = field(default_factory=dict)
    rejects: list[RejectRow] = field(default_factory=list)
    rows_in: int = 0
    items: dict[str, int] = field(default_factory=dict)  # {"reused": n, "computed": m} from the reuse store
    extra: dict[str, Any] = field(default_factory=dict)


class StageStore:
    def __init__(self, run: RunFS, stage: str, outputs: Mapping[str, ArtifactSchema | str]):
        self.run = run
        self.stage = stage
        self.outputs = {k: (get(v) if isinstance(v, str) else v) for k, v in outputs.items()}

    # -- paths -------------------------------------------------------------------------
    def rel(self, *parts: str) -> str:
        return "/".join([self.stage, *parts])

    def reader(self, artifact: str) -> ArtifactReader:
        schema = REJECTS if artifact == "rejects" else self.outputs[artifact]
        return ArtifactReader(self.run, self.rel(artifact), schema)

    # -- shard markers -----------------------------------------------------------------
    def marker(self, index: int) -> ShardMarker | None:
        rel = self.rel(MARKERS, f"{index:05d}.json")
        if not self.run.exists(rel):
            return None
        return json.loads(self.run.read_text(rel))

    def write_shard(
        self, index: int, key: str, result: ShardResult, placement: Mapping[str, object] | None = None
    ) -> ShardMarker:
        """Write every output of one shard, then its rejects, then (last) its marker; the marker
        carries the shard's ``placement`` (node and GPU, ``tasks.engine.placement``) when there is one."""
        counts: dict[str, int] = {}
        files: dict[str, FileRecord] = {}  # what the marker vouches for: each file's size and sha256
        for name, schema in self.outputs.items():
            rows = result.outputs.get(name, [])
            table = table_from_output(schema, rows, where=f"{self.stage}/{name} shard {index}")
            files[self.rel(name, shard_name(index))] = write_table(self.run, self.rel(name, shard_name(index)), table)
            counts[name] = table.num_rows
        unknown = set(result.outputs) - set(self.outputs)
        if unknown:
            raise ValueError(f"stage {self.stage!r} produced undeclared artifacts {sorted(unknown)}")
        rej = table_from_rows(REJECTS, result.rejects, where=f"{self.stage}/rejects shard {index}")
        files[self.rel("rejects", shard_name(index))] = write_table(
            self.run, self.rel("rejects", shard_name(index)), rej
        )
        reasons: dict[str, int] = {}
        for r in result.rejects:
            reasons[r["reason"]] = reasons.get(r["reason"], 0) + 1
        marker: ShardMarker = {
            "shard": index,
            "key": key,
            "rows_in": result.rows_in,
            "rows_out": counts,
            "rejected": len(result.rejects),
            "reject_reasons": reasons,
            "finished_at": utc_now(),
            "files": files,
        }
        if result.items:
            marker["items"] = dict(result.items)
        if result.extra:
            marker["extra"] = result.extra
        if placement:
            marker["placement"] = placement
        for rel, rec in files.items():  # this process's later checks of the stage need not read them
            remember(self.run, rel, rec["sha256"])
        self.run.write_text_atomic(self.rel(MARKERS, f"{index:05d}.json"), json.dumps(marker, indent=1))
        return marker

    def drop_marker(self, index: int) -> None:
        """Forget that a shard finished (its files did not hold up): it is computed again."""
        self.run.rm(self.rel(MARKERS, f"{index:05d}.json"))

    def marker_files(
        self, marker: ShardMarker, recorded: Mapping[str, FileRecord] | None = None
    ) -> dict[str, FileRecord | None]:
        """The files a finished shard's marker vouches for (run-relative path -> ``{"bytes", "sha256"}``).
        A marker written before markers named their files yields the names its ``rows_out`` implies,
        with what ``recorded`` (the last manifest's ``files``) knows of them, else None (presence only)."""
        if "files" in marker:
            return dict(marker["files"])
        names = [*marker.get("rows_out", {}), "rejects"]
        rels = [self.rel(n, shard_name(int(marker["shard"]))) for n in names]
        return {rel: (recorded or {}).get(rel) for rel in rels}

    def finished_files(
        self, manifest: Mapping[str, Any], markers: list[ShardMarker] | None = None
    ) -> dict[str, FileRecord | None]:
        """The files a finished stage is made of: its manifest's list, else (a stage finished before
        manifests listed them, until its next build) what its markers carrying the manifest's key
        name, read here unless ``markers`` were read already."""
        if "files" in manifest:
            return dict(manifest["files"])
        markers = self.markers() if markers is None else markers
        return {
            rel: rec
            for m in markers
            if m.get("key") == manifest.get("key")
            for rel, rec in self.marker_files(m).items()
        }

    def finished_damage(
        self,
        manifest: Mapping[str, Any] | None = None,
        markers: list[ShardMarker] | None = None,
        *,
        checksums: bool = True,
    ) -> list[str]:
        """What is wrong with a finished stage's files (:meth:`damage`: one listing, then each file's
        sha256, streamed and read once per process); empty when nothing is or the stage has not
        finished. ``manifest`` / ``markers``: already read. ``checksums=False``: the listing only."""
        manifest = self.read_manifest() if manifest is None else manifest
        if not manifest or manifest.get("status") != "complete":
            return []
        return self.damage(
            self.finished_files(manifest, markers), self.run.file_sizes(self.stage), checksums=checksums, whole=True
        )

    def damage(
        self,
        expected: Mapping[str, FileRecord | None],
        sizes: Mapping[str, int],
        *,
        checksums: bool = False,
        whole: bool = False,
    ) -> list[str]:
        """How the store differs from the files ``expected`` (run-relative path -> size and sha256,
        or None when only the name is known), one line per file, empty when it does not.

        ``sizes`` is one listing of the stage (:meth:`RunFS.file_sizes`): a missing file and a size
        that differs cost no read. ``checksums`` also reads the files and compares their sha256.
        ``whole`` (``expected`` is every file of the stage) also names the shard files in its
        artifact folders that none of them is: readers would take them in."""
        problems = []
        for rel, rec in sorted(expected.items()):
            if rel not in sizes:
                problems.append(f"{rel} is missing")
            elif rec is not None and sizes[rel] != rec["bytes"]:
                problems.append(f"{rel} has {sizes[rel]:,} bytes where {rec['bytes']:,} were written")
        if checksums and not problems:  # streamed, each file once per process (storage.checksums)
            known = {rel: rec["sha256"] for rel, rec in expected.items() if rec is not None}
            problems += [
                f"{rel} was changed (its sha256 is not the one written)"
                for rel in changed_files(self.run, known, sizes)
            ]
        if whole:
            folders = {posixpath.dirname(rel) for rel in expected}
            problems += [
                f"{rel} is a shard file that no marker names"
                for rel in sorted(sizes)
                if posixpath.dirname(rel) in folders
                and rel not in expected
                and posixpath.basename(rel).startswith(SHARD_PREFIX)
                and rel.endswith(".parquet")
            ]
        return problems

    def markers(self) -> list[ShardMarker]:
        out = []
        for name in self.run.listdir(self.rel(MARKERS)):
            if name.endswith(".json") and not name.startswith("."):
                out.append(json.loads(self.run.read_text(self.rel(MARKERS, name))))
        return sorted(out, key=lambda m: m["shard"])

    # -- whole stage -------------------------------------------------------------------
    def reset(self) -> None:
        """Remove every output of the stage (used when config or inputs changed, or --force)."""
        self.run.rm(self.stage)

    def read_manifest(self) -> dict[str, Any] | None:
        if not self.run.exists(self.rel(MANIFEST)):
            return None
        return json.loads(self.run.read_text(self.rel(MANIFEST)))

    def write_manifest(self, manifest: dict[str, object]) -> None:
        self.run.write_text_atomic(self.rel(MANIFEST), json.dumps(manifest, indent=1, sort_keys=True))

    def prune_shards(self, n_shards: int) -> None:
        """Delete from the artifact folders and markers whatever is not a shard of an
        ``n_shards`` plan: shards of an older, longer plan, and files under other names (a copy,
        a folder put there by hand), which readers would otherwise take in."""
        for folder in [*self.outputs, "rejects", MARKERS]:
            keep = {f"{i:05d}.json" if folder == MARKERS else shard_name(i) for i in range(n_shards)}
            for name in self.run.listdir(self.rel(folder)):
                if name not in keep:
                    self.run.rm(self.rel(folder, name))

    def output_fingerprint(self, files: Mapping[str, FileRecord | None] | None = None) -> str:
        """Hash of the shard files' names and contents: what downstream stages key on. ``files``
        (path -> size and sha256, as markers record them) saves reading the files it knows."""
        parts = []
        for name in [*self.outputs, "rejects"]:
            for rel in self.reader(name).shard_files():
                rec = (files or {}).get(rel)
                parts.append((rel, rec["sha256"] if rec else sha256_hex(self.run.read_bytes(rel))))
        return sha256_hex(canonical_json(parts))[:16]

    def output_files(self, key: str, markers: list[ShardMarker]) -> dict[str, FileRecord]:
        """Every file of the shards finished under ``key`` with its size and sha256 (for the
        manifest): from the markers, reading only files a marker does not describe (older ones)."""
        files = {rel: rec for m in markers if m.get("key") == key for rel, rec in self.marker_files(m).items()}
        for rel, rec in files.items():
            if rec is None:
                data = self.run.read_bytes(rel)
                files[rel] = {"bytes": len(data), "sha256": sha256_hex(data)}
        return dict(sorted(files.items()))  # type: ignore[arg-type]

    def summarize(self, key: str, markers: list[ShardMarker] | None = None) -> MarkerCounts:
        """Counts aggregated over the shard markers that carry ``key`` (``markers``: already read)."""
        counts: dict[str, int] = {name: 0 for name in self.outputs}
        reasons: dict[str, int] = {}
        rows_in = rejected = 0
        items = {"reused": 0, "computed": 0}
        items_by_shard: dict[int, dict[str, int]] = {}
        done = []
        for m in self.markers() if markers is None else markers:
            if m.get("key") != key:
                continue
            done.append(m["shard"])
            rows_in += m["rows_in"]
            rejected += m["rejected"]
            for k, v in m["rows_out"].items():
                counts[k] = counts.get(k, 0) + v
            for k, v in m["reject_reasons"].items():
                reasons[k] = reasons.get(k, 0) + v
            for k, v in (m.get("items") or {}).items():
                items[k] = items.get(k, 0) + v
            if m.get("items"):
                items_by_shard[m["shard"]] = dict(m["items"])
        return {
            "completed_shards": done,
            "rows_in": rows_in,
            "rows_out": counts,
            "rejected": rejected,
            "reject_reasons": reasons,
            "items_reused": items["reused"],
            "items_computed": items["computed"],
            "items_by_shard": items_by_shard,
        }


def read_artifact(run: RunFS, stage: str, artifact: str, schema: ArtifactSchema | str | None = None) -> pa.Table:
    """Read a whole artifact of a stage (all shards)."""
    return ArtifactReader(run, f"{stage}/{artifact}", schema or artifact).read()
