"""Beyond one machine: the run lease on a real S3 API, raced by real processes.

Starts a local S3 API server (moto, tests/s3_server.py) and ``--racers`` processes
(tests/lease_race.py) that race for one lease per trial: ``--trials`` trials on a free lease
and as many on a stale one (a holder on another host that stopped beating ten minutes ago).
Every trial must have exactly one winner; the losers must name it. ``lease_lost_writes``
counts the conditional writes the store refused because another racer's came first: the
proof that the races were real and that the store, not timing, decided them.

Then one build across Ray nodes (issue 24.3, tests/orchestration/multinode_build.py): a real
Prefect server, a ``ray.cluster_utils`` cluster of ``--nodes`` nodes with two declared GPUs each,
the sample's edit stage on S3 spread over them, one node killed in the middle of a shard, and the
result compared file by file with a one-node build of the same upstream.

    python benchmarks/multinode.py [--racers 4] [--trials 50] [--nodes 2]

Ends with one JSON line: nodes, edits, node_killed, rerun_shards, identical_to_single_node,
lease_trials, lease_double_wins, lease_no_winner, lease_lost_writes, lease_acquire_p50_ms,
lease_acquire_p95_ms, racers, cluster_start_s, multinode_build_s, load_1min. Exits 1 when a
lease trial had two winners or none, or when the multi-node build lost its node kill or differs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "orchestration")]

from lease_race import Racers, RaceTally, plant_stale_lease  # noqa: E402
from multinode_build import build_across_nodes, sample_upstream  # noqa: E402
from orch_support import PrefectServer, free_port  # noqa: E402
from ray_nodes import RayNodes  # noqa: E402
from s3_server import S3Server  # noqa: E402


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--racers", type=int, default=4, help="processes racing for each lease")
    parser.add_argument("--trials", type=int, default=50, help="trials on a free lease (as many again on a stale one)")
    parser.add_argument("--nodes", type=int, default=2, help="Ray worker nodes (two declared GPUs each)")
    args = parser.parse_args()

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
        ray_figures = across_nodes(bucket, args.nodes)
    ms = [s * 1000 for s in tally.acquire_s]
    print(
        f"{tally.trials} trials, {args.racers} racers: {tally.double_wins} with two winners, {tally.no_winner} with none, "
        f"{tally.lost_writes} conditional writes lost to a faster racer; acquire median {statistics.median(ms):.0f} ms"
    )
    for error in tally.errors[:5]:
        print(f"  {error}")
    figures = {
        **ray_figures,
        "lease_trials": tally.trials,
        "lease_double_wins": tally.double_wins,
        "lease_no_winner": tally.no_winner,
        "lease_wrong_holder_named": tally.wrong_holder_named,
        "lease_lost_writes": tally.lost_writes,
        "lease_acquire_p50_ms": round(percentile(ms, 0.5), 1),
        "lease_acquire_p95_ms": round(percentile(ms, 0.95), 1),
        "racers": args.racers,
        "load_1min": round(os.getloadavg()[0], 1),
    }
    print(json.dumps(figures))
    lease_bad = tally.double_wins or tally.no_winner or tally.errors or tally.wrong_holder_named
    if lease_bad or not (figures["node_killed"] and figures["rerun_shards"] and figures["identical_to_single_node"]):
        sys.exit(1)


def across_nodes(bucket: str, nodes: int) -> dict[str, object]:
    """The edit stage of the sample on a Ray cluster of ``nodes`` nodes with one killed mid-shard."""
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with tempfile.TemporaryDirectory(prefix="rb-multinode-") as tmp:
        work = Path(tmp)
        config, upstream = sample_upstream(work)
        (work / "prefect").mkdir()
        prefect = PrefectServer(work / "prefect", free_port())
        prefect.start()
        try:
            started = time.perf_counter()
            with RayNodes(
                nodes=nodes, gpus=2, cpus=1, pythonpath=[str(ROOT), str(ROOT / "tests" / "orchestration")]
            ) as cluster:
                cluster_s = time.perf_counter() - started
                os.environ["PREFECT_API_URL"] = prefect.url
                with temporary_settings(updates={PREFECT_API_URL: prefect.url}):
                    outcome = build_across_nodes(cluster, config, upstream, f"s3://{bucket}/across-nodes")
        finally:
            prefect.stop()
    rows_by_node: dict[str, int] = {}
    for row in outcome.rows:
        rows_by_node[str(row["node"])[:8]] = rows_by_node.get(str(row["node"])[:8], 0) + 1
    print(
        f"{nodes} nodes, {outcome.shards_total} edit shards, {outcome.edits} edits by node {rows_by_node}; killed "
        f"{outcome.killed.name if outcome.killed else None}, shards rerun elsewhere {outcome.rerun_shards}; "
        f"differences from one node: {outcome.differences[:5]}"
    )
    return {
        **outcome.figures(),
        "cluster_start_s": round(cluster_s, 1),
        "multinode_build_s": round(outcome.seconds, 1),
    }


if __name__ == "__main__":
    main()
