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
"""

from __future__ import annotations

import datetime as _dt
import json
from dataclasses import dataclass, field
from typing import Any, Mapping

import pyarrow as pa

from storage.fs import RunFS
from storage.hashing import canonical_json, sha256_hex
from storage.parquet_io import ArtifactReader, shard_name, table_from_output, table_from_rows, write_table
from storage.schemas import REJECTS, ArtifactSchema, get

MANIFEST = "_manifest.json"
MARKERS = "_shards"


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def code_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("reactbench-pipeline")
    except PackageNotFoundError:
        return "0+unknown"


@dataclass
class ShardResult:
    """What processing one shard produced: rows (or an Arrow table) per output artifact, and
    rejects; ``extra`` (small, JSON-able) is kept in the shard's marker for ``finalize``."""

    outputs: dict[str, list[dict[str, Any]] | pa.Table] = field(default_factory=dict)
    rejects: list[dict[str, Any]] = field(default_factory=list)
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
    def marker(self, index: int) -> dict[str, Any] | None:
        rel = self.rel(MARKERS, f"{index:05d}.json")
        if not self.run.exists(rel):
            return None
        return json.loads(self.run.read_text(rel))

    def shard_done(self, index: int, key: str) -> bool:
        m = self.marker(index)
        return bool(m) and m.get("key") == key

    def write_shard(self, index: int, key: str, result: ShardResult, placement: dict[str, Any] | None = None) -> dict[str, Any]:
        """Write every output of one shard, then its rejects, then (last) its marker; the marker
        carries the shard's ``placement`` (node and GPU, ``tasks.engine.placement``) when there is one."""
        counts: dict[str, int] = {}
        for name, schema in self.outputs.items():
            rows = result.outputs.get(name, [])
            table = table_from_output(schema, rows, where=f"{self.stage}/{name} shard {index}")
            write_table(self.run, self.rel(name, shard_name(index)), table)
            counts[name] = table.num_rows
        unknown = set(result.outputs) - set(self.outputs)
        if unknown:
            raise ValueError(f"stage {self.stage!r} produced undeclared artifacts {sorted(unknown)}")
        rej = table_from_rows(REJECTS, result.rejects, where=f"{self.stage}/rejects shard {index}")
        write_table(self.run, self.rel("rejects", shard_name(index)), rej)
        reasons: dict[str, int] = {}
        for r in result.rejects:
            reasons[r["reason"]] = reasons.get(r["reason"], 0) + 1
        marker = {
            "shard": index,
            "key": key,
            "rows_in": result.rows_in,
            "rows_out": counts,
            "rejected": len(result.rejects),
            "reject_reasons": reasons,
            "finished_at": utc_now(),
        }
        if result.items:
            marker["items"] = dict(result.items)
        if result.extra:
            marker["extra"] = result.extra
        if placement:
            marker["placement"] = placement
        self.run.write_text_atomic(self.rel(MARKERS, f"{index:05d}.json"), json.dumps(marker, indent=1))
        return marker

    def markers(self) -> list[dict[str, Any]]:
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

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        self.run.write_text_atomic(self.rel(MANIFEST), json.dumps(manifest, indent=1, sort_keys=True))

    def prune_shards(self, n_shards: int) -> None:
        """Delete shard files and markers with an index >= n_shards (left from an older plan)."""
        for folder in [*self.outputs, "rejects", MARKERS]:
            for name in self.run.listdir(self.rel(folder)):
                digits = "".join(ch for ch in name if ch.isdigit())
                if digits and int(digits) >= n_shards:
                    self.run.rm(self.rel(folder, name))

    def output_fingerprint(self) -> str:
        """Hash of the shard files' names and contents: what downstream stages key on."""
        parts = []
        for name in [*self.outputs, "rejects"]:
            for rel in self.reader(name).shard_files():
                parts.append((rel, sha256_hex(self.run.read_bytes(rel))))
        return sha256_hex(canonical_json(parts))[:16]

    def summarize(self, key: str) -> dict[str, Any]:
        """Counts aggregated over the shard markers that carry ``key``."""
        counts: dict[str, int] = {name: 0 for name in self.outputs}
        reasons: dict[str, int] = {}
        rows_in = rejected = 0
        items = {"reused": 0, "computed": 0}
        items_by_shard: dict[int, dict[str, int]] = {}
        done = []
        for m in self.markers():
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
            "completed_shards": done, "rows_in": rows_in, "rows_out": counts, "rejected": rejected, "reject_reasons": reasons,
            "items_reused": items["reused"], "items_computed": items["computed"], "items_by_shard": items_by_shard,
        }


def read_artifact(run: RunFS, stage: str, artifact: str, schema: ArtifactSchema | str | None = None) -> pa.Table:
    """Read a whole artifact of a stage (all shards)."""
    return ArtifactReader(run, f"{stage}/{artifact}", schema or artifact).read()
