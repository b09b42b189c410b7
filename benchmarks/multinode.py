"""Beyond one machine: the run lease on a real S3 API raced by real processes, and one edit stage
across Ray nodes with a node killed mid-edit.

Starts a local S3 API server (moto, tests/s3_server.py) and ``--racers`` processes
(tests/lease_race.py) that race for one lease per trial: ``--trials`` trials on a free lease
and as many on a stale one (a holder on another host that stopped beating ten minutes ago).
Every trial must have exactly one winner; the losers must name it. ``lease_lost_writes``
counts the conditional writes the store refused because another racer's came first: the
proof that the races were real and that the store, not timing, decided them.

Then (unless ``--no-ray``) a Prefect server and Ray's multi-node test cluster on this machine
(a head and ``--gpu-nodes`` worker nodes with one declared GPU each) run the edit stage of the
sample (relational erasure, two items per shard) with the run directory on the S3 server; once
the first shard is done, a node busy with another shard is removed, and the stage's files are
compared with a single-node run (tests/multinode_build.py).

    python benchmarks/multinode.py [--racers 4] [--trials 50] [--gpu-nodes 2] [--no-ray]

Ends with one JSON line: nodes, edits, node_killed, rerun_shards, identical_to_single_node,
ray_edit_s, lease_trials, lease_double_wins, lease_no_winner, lease_wrong_holder_named,
lease_lost_writes, lease_acquire_p50_ms, lease_acquire_p95_ms, racers. Exits 1 when a lease
trial had two winners or none, or the run across nodes differs from the single-node one.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "orchestration")]

from lease_race import RaceTally, Racers, plant_stale_lease  # noqa: E402
from s3_server import S3Server  # noqa: E402


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def across_nodes(server: S3Server, gpu_nodes: int) -> dict[str, Any]:
    """The Ray part: the edit stage on a multi-node test cluster, one node killed mid-edit."""
    import yaml

    from miners.sample_data import generate_sample
    from multinode_build import edit_across_nodes, small_edit_config
    from orch_support import PrefectServer, free_port

    with tempfile.TemporaryDirectory(prefix="rb-multinode-") as tmp:
        generate_sample(Path(tmp) / "sample", seed=0)
        config = Path(tmp) / "multinode.yaml"
        config.write_text(yaml.safe_dump(small_edit_config(str(Path(tmp) / "sample"), str(Path(tmp) / "queue.sqlite"))))
        (Path(tmp) / "prefect").mkdir()
        prefect = PrefectServer(Path(tmp) / "prefect", free_port())
        prefect.start()
        try:
            bucket = server.bucket("rb-nodes")
            result = edit_across_nodes(str(config), f"s3://{bucket}/single", f"s3://{bucket}/multi", prefect.url, gpu_nodes=gpu_nodes)
        finally:
            prefect.stop()
    print(f"{result.nodes} GPU nodes: {result.edits} edits in {result.shards} shards, node killed: {result.node_killed}, "
          f"{result.rerun_shards} shard(s) rerun, identical to one node: {result.identical_to_single_node} ({result.seconds:.1f} s)")
    return {"nodes": result.nodes, "edits": result.edits, "node_killed": result.node_killed, "rerun_shards": result.rerun_shards,
            "identical_to_single_node": result.identical_to_single_node, "ray_edit_s": round(result.seconds, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--racers", type=int, default=4, help="processes racing for each lease")
    parser.add_argument("--trials", type=int, default=50, help="trials on a free lease (as many again on a stale one)")
    parser.add_argument("--gpu-nodes", type=int, default=2, help="Ray worker nodes, one declared GPU each")
    parser.add_argument("--no-ray", action="store_true", help="measure the lease only")
    args = parser.parse_args()
    ray: dict[str, Any] = {"nodes": None, "edits": None, "node_killed": None, "rerun_shards": None, "identical_to_single_node": None, "ray_edit_s": None}

    with S3Server() as server:
        os.environ.update(server.env())
        bucket = server.bucket("rb-bench")
        tally = RaceTally()
        with Racers(args.racers) as racers:
            racers.race(f"s3://{bucket}/warm-up", RaceTally())  # imports and the store probe: not counted
            for trial in range(args.trials):
                racers.race(f"s3://{bucket}/free-{trial}", tally)
            for trial in range(args.trials):
                url = f"s3://{bucket}/stale-{trial}"
                plant_stale_lease(url)
                racers.race(url, tally)
        if not args.no_ray:
            ray = across_nodes(server, args.gpu_nodes)
    ms = [s * 1000 for s in tally.acquire_s]
    print(f"{tally.trials} trials, {args.racers} racers: {tally.double_wins} with two winners, {tally.no_winner} with none, "
          f"{tally.lost_writes} conditional writes lost to a faster racer; acquire median {statistics.median(ms):.0f} ms")
    for error in tally.errors[:5]:
        print(f"  {error}")
    figures = {
        **ray,
        "lease_trials": tally.trials, "lease_double_wins": tally.double_wins, "lease_no_winner": tally.no_winner,
        "lease_wrong_holder_named": tally.wrong_holder_named, "lease_lost_writes": tally.lost_writes,
        "lease_acquire_p50_ms": round(percentile(ms, 0.5), 1), "lease_acquire_p95_ms": round(percentile(ms, 0.95), 1),
        "racers": args.racers,
    }
    print(json.dumps(figures))
    if tally.double_wins or tally.no_winner or tally.errors or tally.wrong_holder_named:
        sys.exit(1)
    if not args.no_ray and not (ray["node_killed"] and ray["identical_to_single_node"]):
        sys.exit(1)


if __name__ == "__main__":
    main()
