"""One build across Ray nodes (issue 24.3): a head and two nodes with two declared GPUs each, the
run directory on S3 (moto), the edit shards spread over both nodes, one node killed in the middle
of a shard: Ray reruns its shard on the live node and the build ends with the same files, row for
row, as a one-node build. The node and GPU of every edit row are in the shard markers (never in
the rows, which must not depend on where they were computed)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from multinode_build import build_across_nodes
from orch_support import HERE, REPO, PrefectServer
from ray_nodes import RayNodes

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def ray_nodes(s3_server: Any) -> Iterator[RayNodes]:
    """The module's cluster; started after the S3 server, so the nodes' processes reach it."""
    with RayNodes(nodes=2, gpus=2, cpus=1, pythonpath=[str(REPO), str(HERE)]) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def big_shards(sample_config: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The orchestration config with 32 edits per shard: 5 shards of the sample (each Ray GPU task
    starts a fresh worker process, so fewer, larger shards keep the test short); the upstream
    (mine, instruct) is the session's, since the shard size only plans the edit stage."""
    import yaml

    data = yaml.safe_load(sample_config.read_text())
    data["run"]["shard_size"] = 32
    path = tmp_path_factory.mktemp("multinode") / "config.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _task_runs(server: PrefectServer, flow_run_id: str) -> list[dict[str, Any]]:
    """The shard task runs the build's flow run and its stage subflows reported to ``server``."""
    subflows = server.post("/flow_runs/filter", {"flow_runs": {"parent_flow_run_id": {"any_": [flow_run_id]}}})
    ids = [flow_run_id, *(f["id"] for f in subflows)]
    return server.post("/task_runs/filter", {"flow_runs": {"id": {"any_": ids}}, "limit": 200})


def test_edit_shards_spread_over_nodes_and_survive_a_killed_node(
    ray_nodes: RayNodes, prefect_api: PrefectServer, s3_server: Any, big_shards: Path, upstream_run: Path
) -> None:
    node_ids = {m.node_id for m in ray_nodes.members}
    outcome = build_across_nodes(ray_nodes, big_shards, upstream_run, f"s3://{s3_server.bucket()}")

    assert outcome.killed is not None, f"no node was caught in the middle of a shard: {outcome.attempts}"
    assert outcome.killed.node_id in node_ids and outcome.killed.node_id not in {m.node_id for m in ray_nodes.members}
    assert outcome.rerun_shards, f"the killed node's unfinished shard was not rerun elsewhere: {outcome.attempts}"
    assert outcome.identical, f"the multi-node build differs from the one-node build: {outcome.differences[:10]}"
    assert outcome.edits > 0 and len(outcome.rows) == outcome.edits

    # Every edit row names the Ray node and the (declared) GPU its shard ran on; both nodes wrote rows.
    assert all(r["node"] in node_ids and r["gpus"] and r["device"] == "cuda:0" for r in outcome.rows), outcome.rows[:3]
    assert {r["node"] for r in outcome.rows} == node_ids, "the edit shards ran on both nodes"
    assert all(r["gpus"][0] in (0, 1) for r in outcome.rows)
    for shard in outcome.rerun_shards:
        tried = [a["node"] for a in outcome.attempts if a["shard"] == shard]
        assert outcome.killed.node_id in tried and set(tried) - {outcome.killed.node_id}, (shard, tried)

    # The Ray workers reported to the build's Prefect server (their nodes started without PREFECT_API_URL).
    runs = _task_runs(prefect_api, outcome.flow_run_id)
    shard_runs = {r["name"] for r in runs if r["name"].startswith("edit-shard-") and r["state_type"] == "COMPLETED"}
    assert shard_runs == {f"edit-shard-{i}" for i in range(outcome.shards_total)}, sorted(
        r["name"] + ":" + r["state_type"] for r in runs
    )
