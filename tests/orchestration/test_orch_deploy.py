"""The whole path a GPU node takes, on this machine: server, work pool, deploy from prefect.yaml,
worker, a triggered run of `build` on the sample with the CPU backends, artifacts in the API."""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path
from typing import Any

from orch_support import REPO, VENV_BIN, PrefectServer

RUN_TIMEOUT_S = 240.0
TERMINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}


def _prefect(server: PrefectServer, *args: str, **env: str) -> str:
    # Prefect's CLI draws its tables at the terminal's width; the names this test reads must not
    # be folded across rows, whatever COLUMNS the suite runs with.
    proc = subprocess.run(
        [str(VENV_BIN / "prefect"), *args], cwd=REPO, env=server.env(COLUMNS="250", **env), capture_output=True, text=True, timeout=180
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"prefect {' '.join(args)} failed ({proc.returncode}):\n{out}"
    return out


def _flow_run(server: PrefectServer, run_id: str) -> dict[str, Any]:
    import httpx

    reply = httpx.get(f"{server.url}/flow_runs/{run_id}", timeout=30)
    reply.raise_for_status()
    return reply.json()


def test_deployed_build_runs_on_a_worker_and_publishes_artifacts(prefect_server: PrefectServer, sample_config: Path, tmp_path: Path) -> None:
    # The commands of the README's "Run on GPU nodes", step 2: the two process pools, then every deployment.
    pool = "reactbench-gpu"
    for name in (pool, "reactbench-cpu"):
        _prefect(prefect_server, "work-pool", "create", name, "--type", "process")
    out = _prefect(prefect_server, "deploy", "--prefect-file", str(REPO / "prefect.yaml"), "--all", REACTBENCH_HOME=str(REPO))
    listed = _prefect(prefect_server, "deployment", "ls")
    for name in ("reactbench-build/build", *(f"reactbench-stage/{s}" for s in ("mine", "instruct", "edit", "qa", "review"))):
        assert name in out and name in listed, f"{name} not deployed:\n{out}\n{listed}"

    deployments = prefect_server.post("/deployments/filter", {"deployments": {"name": {"any_": ["build"]}}})
    assert len(deployments) == 1
    dep = deployments[0]
    assert dep["work_pool_name"] == pool and dep["entrypoint"] == "flows/prefect_flows.py:build_flow"
    assert [s["schedule"].get("cron") for s in dep["schedules"]] == ["0 2 * * *"], "the nightly schedule from prefect.yaml"
    assert dep["pull_steps"][0]["prefect.deployments.steps.set_working_directory"]["directory"] == str(REPO)

    run_dir = tmp_path / "run"
    out = _prefect(
        prefect_server, "deployment", "run", "reactbench-build/build",
        "--param", f"config={json.dumps(str(sample_config))}", "--param", f"run_dir={json.dumps(str(run_dir))}",
    )
    run_id = re.search(r"UUID:\s*([0-9a-f-]{36})", out).group(1)

    worker_log = tmp_path / "worker.log"
    with open(worker_log, "wb") as log:
        worker = subprocess.Popen(
            [str(VENV_BIN / "prefect"), "worker", "start", "--pool", pool, "--type", "process", "--limit", "1"],
            cwd=tmp_path, env=prefect_server.env(PREFECT_WORKER_QUERY_SECONDS="1", PREFECT_WORKER_PREFETCH_SECONDS="5"),
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
    try:
        deadline = time.monotonic() + RUN_TIMEOUT_S
        state = None
        while time.monotonic() < deadline:
            state = _flow_run(prefect_server, run_id)["state_type"]
            if state in TERMINAL:
                break
            time.sleep(1.0)
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()
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
