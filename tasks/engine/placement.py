"""Where each shard of a GPU stage ran (node and GPU), recorded beside its outputs, never in them.

Outputs must be the same bytes wherever they were computed (a Ray build across nodes equals a
one-node thread build, row for row), so the node and GPU cannot be columns of the edit rows.
They are kept in two side records of the stage folder instead:

* the shard's completion marker (``<stage>/_shards/NNNNN.json``, key ``placement``): the node
  and GPU that wrote the shard's outputs. Every output row of shard N (``part-NNNNN``) was
  computed there; ``row_placement`` joins the two, one record per row.
* one attempt record per start (``<stage>/_placement/NNNNN-<node>-<pid>.json``), written when
  a shard starts on a node: a shard that a dead node began and another node finished shows
  both, which is how a node failure is seen after the fact.

Neither is part of the stage's output fingerprint, so downstream keys do not change with them.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from typing import TypedDict

from storage.fs import RunFS

PLACEMENT_OPTION = "placement"  # RunContext.options key: where the running shard was placed
ATTEMPTS = "_placement"


class Placement(TypedDict):
    """Where a shard ran (kept in its marker and its attempt records)."""

    node: str  # the Ray node id in a Ray worker, else the host name
    host: str
    ray: bool
    gpus: list[int]  # node-local GPU ids the shard held; empty on CPU
    device: str | None  # what the stage was handed, e.g. cuda:0


class Attempt(Placement):
    """One recorded start of a shard (``<stage>/_placement/``)."""

    shard: int
    started_at: float


class RowPlacement(TypedDict):
    """Where the shard that wrote one output row ran (``node`` None: no placement recorded)."""

    id: str
    shard: int
    node: str | None
    gpus: list[int] | None
    device: str | None


def ray_node_id() -> str | None:
    """The Ray node this process runs on, when it is a Ray worker (None otherwise); looks at an
    already imported ``ray`` only, like ``tasks.engine.devices.ray_gpu_ids``."""
    ray = sys.modules.get("ray")
    if ray is None or not hasattr(ray, "is_initialized") or not ray.is_initialized():
        return None
    try:
        if ray.get_runtime_context().worker.mode != ray.WORKER_MODE:
            return None
        return str(ray.get_runtime_context().get_node_id())
    except Exception:  # pragma: no cover - Ray internals differ between versions
        return None


def current_placement(device: str | None, gpus: list[int]) -> Placement:
    """This shard's node (the Ray node id in a Ray worker, else the host name) and GPU.

    ``gpus`` are the node-local GPU ids the shard holds (Ray's assignment or the leased device),
    empty on CPU; ``device`` is what the stage was handed (e.g. ``cuda:0``).
    """
    host = socket.gethostname()
    node = ray_node_id()
    return {"node": node or host, "host": host, "ray": node is not None, "gpus": list(gpus), "device": device}


def record_attempt(run: RunFS, stage: str, index: int, placement: Placement) -> None:
    """Note that shard ``index`` started where ``placement`` says (one small object per start)."""
    name = f"{index:05d}-{str(placement['node'])[:16]}-{os.getpid()}.json"
    run.write_text_atomic(
        f"{stage}/{ATTEMPTS}/{name}", json.dumps({"shard": index, **placement, "started_at": time.time()})
    )


def attempts(run: RunFS, stage: str) -> list[Attempt]:
    """Every recorded shard start of ``stage``, oldest first."""
    out = [json.loads(run.read_text(stage, ATTEMPTS, n)) for n in run.listdir(stage, ATTEMPTS) if n.endswith(".json")]
    return sorted(out, key=lambda a: (a["started_at"], a["shard"]))


def row_placement(run: RunFS, stage: str, artifact: str, id_column: str) -> list[RowPlacement]:
    """One record per output row of ``stage/artifact``: its id, shard, and the node and GPU of
    the shard's marker. A finished shard without a placement (written before placement was
    recorded) gives ``node: None``."""
    import pyarrow.parquet as pq

    from storage.stage_store import MARKERS

    out: list[RowPlacement] = []
    for name in run.listdir(stage, artifact):
        digits = "".join(ch for ch in name if ch.isdigit())
        if not name.endswith(".parquet") or not digits:
            continue
        shard = int(digits)
        marker_rel = f"{stage}/{MARKERS}/{shard:05d}.json"
        placed = json.loads(run.read_text(marker_rel)).get("placement") if run.exists(marker_rel) else None
        with run.fs.open(run.path(stage, artifact, name), "rb") as fh:
            ids = pq.read_table(fh, columns=[id_column]).column(id_column).to_pylist()
        placed = placed or {}
        out.extend(
            {
                "id": i,
                "shard": shard,
                "node": placed.get("node"),
                "gpus": placed.get("gpus"),
                "device": placed.get("device"),
            }
            for i in ids
        )
    return out
