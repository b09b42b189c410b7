"""One build's edit stage spread over Ray nodes, one node killed mid-edit, against a one-node build.

Both run directories live on an object store (the moto S3 server) and start from the same
upstream (mine + instruct done). The one-node build runs the edit stage locally (threads); the
multi-node build runs ``build_flow`` through Prefect on a ``RayNodes`` cluster, and a watcher
kills a node once it has finished a shard and is in the middle of another: Ray reruns that
shard on a live node. Shared by tests/orchestration/test_orch_multinode.py (which asserts) and
benchmarks/multinode.py (which prints the figures).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ray_nodes import RayNode, RayNodes

from storage.fs import RunFS
from storage.stage_store import MARKERS
from tasks.engine.placement import attempts, row_placement

COMPARED = ("edit/edits", "edit/rejects", "images")
WATCH_POLL_S = 0.3


@dataclass
class MultinodeOutcome:
    nodes: int  # worker nodes the cluster started with
    shards_total: int
    edits: int
    killed: RayNode | None
    rerun_shards: list[int]  # shards the killed node started and a live node finished
    differences: list[str]  # files that differ from the one-node build (empty: identical)
    rows: list[dict[str, Any]] = field(default_factory=list)  # one placement per edit row
    attempts: list[dict[str, Any]] = field(default_factory=list)
    flow_run_id: str | None = None
    seconds: float = 0.0

    @property
    def identical(self) -> bool:
        return not self.differences

    def figures(self) -> dict[str, Any]:
        return {
            "nodes": self.nodes,
            "edits": self.edits,
            "node_killed": self.killed is not None,
            "rerun_shards": len(self.rerun_shards),
            "identical_to_single_node": self.identical,
        }


def upload_run(local: Path, url: str) -> None:
    """Copy a local run directory (its stage folders and config) to ``url`` on the object store."""
    run = RunFS.open(url)
    for path in sorted(p for p in local.rglob("*") if p.is_file()):
        run.write_bytes_atomic(str(path.relative_to(local)), path.read_bytes())


def digest(url: str, folders: tuple[str, ...] = COMPARED) -> dict[str, str]:
    """sha256 of every file under ``folders`` of the run at ``url``, by path inside the run."""
    run = RunFS.open(url)
    out: dict[str, str] = {}
    for folder in folders:
        for path in run.walk_files(folder):
            rel = path[len(run.path()) :].lstrip("/")
            out[rel] = hashlib.sha256(run.fs.cat_file(path)).hexdigest()
    return out


def _marker(run: RunFS, shard: int) -> dict[str, Any] | None:
    rel = f"edit/{MARKERS}/{shard:05d}.json"
    return json.loads(run.read_text(rel)) if run.exists(rel) else None


def kill_mid_shard(cluster: RayNodes, run: RunFS, stop: threading.Event) -> RayNode | None:
    """Wait for a node that finished an edit shard and is running another, then kill it."""
    while not stop.wait(WATCH_POLL_S):
        try:
            started = attempts(run, "edit")
        except FileNotFoundError:  # a listed record not readable yet
            continue
        for member in list(cluster.members):
            mine = {a["shard"] for a in started if a["node"] == member.node_id}
            finished = {s for s in mine if (_marker(run, s) or {}).get("placement", {}).get("node") == member.node_id}
            running = mine - {s for s in mine if _marker(run, s)}
            if finished and running:
                cluster.kill(member)
                return member
    return None


def build_across_nodes(
    cluster: RayNodes, config: Path, upstream: Path, base_url: str, **overrides: Any
) -> MultinodeOutcome:
    """The edit stage one-node at ``base_url/single`` and on ``cluster`` at ``base_url/multi``."""
    from flows.config import load_config
    from flows.prefect_flows import build_flow
    from flows.runtime import run_pipeline

    single, multi = f"{base_url}/single", f"{base_url}/multi"
    for url in (single, multi):
        upload_run(upstream, url)
    run_pipeline(load_config(config), single, ["edit"], orchestrator="local")

    settings = {
        "orchestration.task_runner": "ray",
        "orchestration.ray_address": cluster.address,
        "orchestration.gpus_per_edit_task": 1,
        **overrides,
    }
    started = time.perf_counter()
    stop = threading.Event()
    watcher: dict[str, RayNode | None] = {}
    watch = threading.Thread(
        target=lambda: watcher.update(killed=kill_mid_shard(cluster, RunFS.open(multi), stop)), name="node-killer"
    )
    watch.start()
    try:
        state = build_flow(config=str(config), run_dir=multi, stages=["edit"], overrides=settings, return_state=True)
    finally:
        stop.set()
        watch.join()
    seconds = time.perf_counter() - started
    if not state.is_completed():
        raise AssertionError(f"the multi-node build ended {state.type}: {state.message}")

    run = RunFS.open(multi)
    killed = watcher.get("killed")
    tried = attempts(run, "edit")
    manifest = json.loads(run.read_text("edit/_manifest.json"))
    rerun = sorted(
        {a["shard"] for a in tried if killed and a["node"] == killed.node_id}
        - {
            s
            for s in range(manifest["shards_total"])
            if killed and (_marker(run, s) or {}).get("placement", {}).get("node") == killed.node_id
        }
    )
    one, many = digest(single), digest(multi)
    differences = sorted(k for k in set(one) | set(many) if one.get(k) != many.get(k))
    fingerprints = [
        json.loads(RunFS.open(u).read_text("edit/_manifest.json"))["output_fingerprint"] for u in (single, multi)
    ]
    if fingerprints[0] != fingerprints[1]:
        differences.append(f"edit/_manifest.json output_fingerprint {fingerprints[0]} != {fingerprints[1]}")
    return MultinodeOutcome(
        nodes=cluster.nodes,
        shards_total=manifest["shards_total"],
        edits=manifest["counts"]["edits"],
        killed=killed,
        rerun_shards=rerun,
        differences=differences,
        rows=row_placement(run, "edit", "edits", "id"),
        attempts=tried,
        flow_run_id=str(state.state_details.flow_run_id),
        seconds=seconds,
    )


def sample_upstream(workdir: Path) -> tuple[Path, Path]:
    """For a script without the test fixtures: the sample data, the demo config pointing at it
    (as tests/orchestration/conftest.py writes it) and a local run with mine and instruct done."""
    import yaml

    from flows.config import load_config
    from flows.runtime import run_pipeline
    from miners.sample_data import generate_sample

    generate_sample(workdir / "sample", seed=0)
    data = yaml.safe_load((Path(__file__).resolve().parents[2] / "configs" / "demo.yaml").read_text())
    data["sources"] = {
        "visual_genome": str(workdir / "sample" / "visual_genome"),
        "fsc147": str(workdir / "sample" / "fsc147"),
    }
    data["orchestration"] = {"retries": 1, "retry_delay_s": 0.5}
    config = workdir / "config.yaml"
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    run_pipeline(load_config(config), str(workdir / "upstream"), ["mine", "instruct"], orchestrator="local")
    return config, workdir / "upstream"
