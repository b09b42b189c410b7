"""The edit stage across a Ray cluster of several nodes, one killed mid-edit, the run on S3.

For tests/orchestration/test_orch_multinode.py and benchmarks/multinode.py. Ray's own test
cluster (``ray.cluster_utils.Cluster``) starts a head node without GPUs and ``gpu_nodes``
worker nodes with one declared GPU each, all on this machine, as separate raylets. The same
upstream (mine + instruct) is built into two run directories on the S3 store; the edit stage
then runs once on threads (the single-node reference) and once through Prefect on the cluster
(``gpus_per_edit_task: 1``, so each node runs one shard at a time). As soon as the first shard
is complete, the node that is busy with another shard is removed (its raylet and workers die);
Ray reruns its shard elsewhere and the stage must end with the same files as the reference.
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARDS_DIR = ("edit", "_shards")


@dataclass
class MultinodeResult:
    """What one run across nodes gave (the figures of benchmarks/multinode.py)."""

    nodes: int
    edits: int = 0
    shards: int = 0
    node_killed: bool = False
    rerun_shards: int = 0  # shards that were running on the killed node
    identical_to_single_node: bool = False
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)


def _edit_files(url: str) -> dict[str, bytes]:
    from storage.fs import RunFS

    run = RunFS.open(url)
    return {p.removeprefix(run.root + "/"): bytes(run.fs.cat_file(p)) for p in run.walk_files("edit") if p.endswith(".parquet")}


def _busy_gpu_nodes(worker_ids: list[str]) -> dict[str, float]:
    """GPUs in use per worker node (a shard holds one while it runs)."""
    from ray._private.state import available_resources_per_node

    free = available_resources_per_node()
    return {n: 1.0 - free.get(n, {}).get("GPU", 0.0) for n in worker_ids if n in free}


def edit_across_nodes(config_path: str, single_url: str, multi_url: str, prefect_url: str, gpu_nodes: int = 2) -> MultinodeResult:
    """Build mine + instruct in both run directories, edit one on threads and one on the cluster
    with a node killed mid-edit, and compare. The S3 endpoint and credentials must be in
    ``os.environ`` (every Ray worker gets them), ``PREFECT_API_URL`` is ``prefect_url``."""
    import ray
    from prefect.settings import PREFECT_API_URL, temporary_settings
    from ray.cluster_utils import Cluster

    from flows.config import load_config
    from flows.prefect_flows import stage_flow
    from flows.runtime import run_pipeline
    from storage.fs import RunFS

    for url in (single_url, multi_url):
        run_pipeline(load_config(config_path), url, ["mine", "instruct"], orchestrator="local")
    result = MultinodeResult(nodes=gpu_nodes)
    temp = tempfile.mkdtemp(prefix="rbn-", dir="/tmp")  # short: Ray's socket paths have a length limit
    os.makedirs("/tmp/ray", exist_ok=True)  # Ray writes its current-cluster address there
    env = {k: v for k, v in os.environ.items() if k.startswith("AWS_")}
    env.update(PREFECT_API_URL=prefect_url, PYTHONPATH=str(ROOT))
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "num_gpus": 0, "include_dashboard": False, "temp_dir": temp, "object_store_memory": 100 << 20})
    try:
        workers = {cluster.add_node(num_cpus=1, num_gpus=1, object_store_memory=100 << 20).node_id: None for _ in range(gpu_nodes)}
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, runtime_env={"env_vars": env}, log_to_driver=False)
        nodes = {n.node_id: n for n in cluster.worker_nodes}
        with temporary_settings(updates={PREFECT_API_URL: prefect_url}):
            stage_flow(stage_name="edit", config=config_path, run_dir=single_url)

            def kill_a_busy_node() -> None:
                run = RunFS.open(multi_url)
                deadline = time.monotonic() + 600
                while time.monotonic() < deadline and not result.node_killed:
                    if run.listdir(*SHARDS_DIR):  # one shard done: the others are on their nodes
                        busy = {n: g for n, g in _busy_gpu_nodes(list(workers)).items() if g > 0}
                        if busy:
                            victim = next(iter(busy))
                            cluster.remove_node(nodes[victim])
                            result.node_killed, result.rerun_shards = True, int(round(busy[victim]))
                            return
                    time.sleep(0.1)

            killer = threading.Thread(target=kill_a_busy_node, name="node-killer", daemon=True)
            killer.start()
            started = time.perf_counter()
            summary = stage_flow(
                stage_name="edit", config=config_path, run_dir=multi_url,
                overrides={"orchestration.task_runner": "ray", "orchestration.ray_address": cluster.address, "orchestration.gpus_per_edit_task": 1},
            )
            result.seconds = time.perf_counter() - started
            killer.join(timeout=5)
        result.edits, result.shards = summary.rows_out.get("edits", 0), summary.shards_run
        single, multi = _edit_files(single_url), _edit_files(multi_url)
        result.identical_to_single_node = bool(single) and single == multi
    finally:
        ray.shutdown()
        cluster.shutdown()
    return result


def small_edit_config(sample_dir: str, db_path: str) -> dict[str, Any]:
    """Relational erasure only, two items per shard: a few shards of real classical edits."""
    import yaml

    cfg = yaml.safe_load((ROOT / "configs" / "demo.yaml").read_text())
    cfg["sources"] = {"visual_genome": f"{sample_dir}/visual_genome", "fsc147": f"{sample_dir}/fsc147"}
    cfg["run"]["shard_size"] = 2
    cfg["mine"]["tasks"] = ["relational_erasure"]
    cfg["mine"]["relational_erasure"]["images_per_pair"] = 2
    cfg["review"] = {"db_url": f"sqlite:///{db_path}"}
    cfg["orchestration"] = {"retries": 1, "retry_delay_s": 0.5}
    return cfg
