"""The whole path a GPU node takes, on this machine: server, work pool, deploy from prefect.yaml,
worker, a triggered run of `build` on the sample with the CPU backends, artifacts in the API."""

from __future__ import annotations

import json
import re
from pathlib import Path

from orch_support import REPO, PrefectServer, prefect_cli, start_worker, stop_process, wait_for_flow_run

RUN_TIMEOUT_S = 240.0


def test_deployed_build_runs_on_a_worker_and_publishes_artifacts(
    prefect_server: PrefectServer, sample_config: Path, tmp_path: Path
) -> None:
    # The commands of the README's "Run on GPU nodes", step 2: the two process pools, then every deployment.
    pool = "reactbench-gpu"
    for name in (pool, "reactbench-cpu"):
        prefect_cli(prefect_server, "work-pool", "create", name, "--type", "process")
    out = prefect_cli(
        prefect_server, "deploy", "--prefect-file", str(REPO / "prefect.yaml"), "--all", REACTBENCH_HOME=str(REPO)
    )
    listed = prefect_cli(prefect_server, "deployment", "ls")
    for name in (
        "reactbench-build/build",
        *(f"reactbench-stage/{s}" for s in ("mine", "instruct", "edit", "qa", "review")),
    ):
        assert name in out and name in listed, f"{name} not deployed:\n{out}\n{listed}"

    deployments = prefect_server.post("/deployments/filter", {"deployments": {"name": {"any_": ["build"]}}})
    assert len(deployments) == 1
    dep = deployments[0]
    assert dep["work_pool_name"] == pool and dep["entrypoint"] == "flows/prefect_flows.py:build_flow"
    assert [s["schedule"].get("cron") for s in dep["schedules"]] == ["0 2 * * *"], (
        "the nightly schedule from prefect.yaml"
    )
    assert dep["pull_steps"][0]["prefect.deployments.steps.set_working_directory"]["directory"] == str(REPO)

    run_dir = tmp_path / "run"
    out = prefect_cli(
        prefect_server,
        "deployment",
        "run",
        "reactbench-build/build",
        "--param",
        f"config={json.dumps(str(sample_config))}",
        "--param",
        f"run_dir={json.dumps(str(run_dir))}",
    )
    run_id = re.search(r"UUID:\s*([0-9a-f-]{36})", out).group(1)

    worker = start_worker(prefect_server, pool, tmp_path, "--limit", "1")
    try:
        state = wait_for_flow_run(prefect_server, run_id, RUN_TIMEOUT_S)["state_type"]
    finally:
        stop_process(worker)
    worker_log = tmp_path / "worker.log"
    assert state == "COMPLETED", f"flow run {run_id} ended {state}; worker log:\n{worker_log.read_text()[-4000:]}"

    for stage in ("mine", "instruct", "edit", "qa", "review"):
        manifest = json.loads((run_dir / stage / "_manifest.json").read_text())
        assert manifest["status"] == "complete", stage
        table = prefect_server.artifacts(f"reactbench-{stage}-counts")
        assert table and table[0]["type"] == "table", stage
        assert prefect_server.artifacts(f"reactbench-{stage}-progress"), stage
    assert json.loads((run_dir / "edit" / "_manifest.json").read_text())["counts"]["edits"] > 0

    summary = prefect_server.artifacts("reactbench-build-summary", flow_runs={"id": {"any_": [run_id]}})
    assert len(summary) == 1 and summary[0]["type"] == "markdown"
    text = summary[0]["data"]
    assert str(run_dir) in text and "| edit |" in text and "_manifest.json" in text
    assert "reports/build.html" in text and (run_dir / "reports" / "build.html").stat().st_size > 0
