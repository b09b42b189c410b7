"""Pieces of the orchestration that need no server: retry policy, device leases, artifact text,
flow parameters, and prefect.yaml against the flows it names."""

from __future__ import annotations

import importlib
import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from orch_support import REPO


@pytest.mark.parametrize(
    "exc, transient",
    [
        (ConnectionResetError("peer reset"), True),
        (TimeoutError("read timed out"), True),
        (MemoryError(), True),
        (type("OutOfMemoryError", (RuntimeError,), {})("CUDA out of memory"), True),
        (type("APIConnectionError", (Exception,), {})("no route"), True),
        (type("RateLimitError", (Exception,), {})("slow down"), True),
        (FileNotFoundError("missing.jpg"), False),
        (OSError(28, "No space left on device"), False),  # a full disk stays full: the stage stops
        (OSError("pyarrow: IOError: No space left on device"), False),
        (ValueError("bad row"), False),
        (KeyError("field"), False),
    ],
)
def test_transient_errors(exc: BaseException, transient: bool) -> None:
    from tasks.engine.retries import is_transient

    assert is_transient(exc) is transient


def test_a_full_disk_is_never_retried_even_when_every_error_is() -> None:
    import errno

    from tasks.engine.retries import RetryPolicy

    full = RuntimeError("writing shard 3 failed")
    full.__cause__ = OSError(errno.ENOSPC, "No space left on device")
    assert not RetryPolicy(retries=3, transient_only=False).should_retry(full)
    assert RetryPolicy(retries=3, transient_only=False).should_retry(RuntimeError("flaky"))


def test_an_error_caused_by_a_transient_one_is_transient() -> None:
    from tasks.engine.retries import is_transient

    try:
        try:
            raise ConnectionError("socket closed")
        except ConnectionError as inner:
            raise RuntimeError("request failed") from inner
    except RuntimeError as outer:
        assert is_transient(outer)


_HOLDER = """
import json, sys, time
from tasks.engine.devices import lease_device
lock_dir, log = sys.argv[1], sys.argv[2]
with lease_device([0, 1], lock_dir, poll_s=0.02) as dev:
    start = time.monotonic()
    time.sleep(0.3)
    end = time.monotonic()
with open(log, "a") as f:
    f.write(json.dumps([dev, start, end]) + "\\n")
"""


def test_device_leases_exclude_other_processes(tmp_path: Path) -> None:
    """Four processes, two devices: never two holders of one device at once, both devices used."""
    log = tmp_path / "holds.jsonl"
    procs = [
        subprocess.Popen([sys.executable, "-c", _HOLDER, str(tmp_path / "locks"), str(log)], cwd=REPO)
        for _ in range(4)
    ]
    assert [p.wait(60) for p in procs] == [0, 0, 0, 0]
    holds = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(holds) == 4 and {h[0] for h in holds} == {0, 1}
    for dev in (0, 1):
        spans = sorted((s, e) for d, s, e in holds if d == dev)
        assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(spans, spans[1:])), spans


def test_device_lease_times_out_and_needs_devices(tmp_path: Path) -> None:
    from tasks.engine.devices import lease_device

    with pytest.raises(ValueError, match="gpu_devices"):
        with lease_device([], tmp_path):
            pass
    with lease_device([3], tmp_path):
        with pytest.raises(TimeoutError, match=r"no free GPU among \[3\]"):
            with lease_device([3], tmp_path, poll_s=0.01, timeout_s=0.1):
                pass


def test_build_summary_markdown_links_run_dir_and_names_failures(tmp_path: Path) -> None:
    from flows.artifacts import artifact_key, build_summary_markdown, stage_table_rows
    from tasks.engine.runner import StageSummary

    s = StageSummary("mine", 3, 1, 2, 180, {"candidates": 64}, 4, {"malformed_object": 3, "duplicate_object": 1}, 0.4)
    text = build_summary_markdown(
        str(tmp_path), [s], {"instruct": "ShardFailed: shards [2] did not complete"}, ["reports/build.html"]
    )
    assert f"file://{tmp_path.resolve()}" in text and "mine/_manifest.json" in text
    assert "| mine | 2 | 1 | 180 | candidates 64 | 4 | malformed_object 3, duplicate_object 1 |" in text
    assert (
        "**instruct**: ShardFailed" in text
        and f"[reports/build.html](file://{tmp_path.resolve()}/reports/build.html)" in text
    )
    assert "`s3://bucket/run/config.yaml`" in build_summary_markdown("s3://bucket/run", [s])
    rows = {r["metric"]: r["value"] for r in stage_table_rows(s)}
    assert rows["reject: malformed_object"] == 3 and rows["rows out: candidates"] == 64
    assert artifact_key("Edit Stage", "counts") == "reactbench-edit-stage-counts"


def test_resolve_config_from_path_mapping_and_overrides(tmp_path: Path) -> None:
    from flows.config import ConfigError
    from flows.config import resolve_run_config as resolve_config

    cfg = resolve_config(str(REPO / "configs" / "demo.yaml"), {"orchestration.task_runner": "ray"})
    assert cfg.orchestration.task_runner == "ray"
    again = resolve_config(cfg.model_dump(mode="json"), {"orchestration.gpu_devices": [0, 1]})
    assert again.orchestration.gpu_devices == (0, 1) and again.orchestration.task_runner == "ray"
    with pytest.raises(ConfigError, match="orchestration.retries"):
        resolve_config({}, {"orchestration.retries": -1})


def test_prefect_yaml_deploys_build_and_every_stage() -> None:
    from flows.stages import STAGE_ORDER

    spec = yaml.safe_load((REPO / "prefect.yaml").read_text())
    deployments = {d["name"]: d for d in spec["deployments"]}
    assert set(deployments) == {"build", *STAGE_ORDER}
    for name, dep in deployments.items():
        path, func = dep["entrypoint"].split(":")
        module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
        flow_obj = getattr(module, func)
        accepted = set(inspect.signature(flow_obj.fn).parameters)
        assert set(dep["parameters"]) <= accepted, f"{name}: {set(dep['parameters']) - accepted}"
        assert (REPO / dep["parameters"]["config"]).exists(), f"{name}: config file missing"
        if name != "build":
            assert dep["parameters"]["stage_name"] == name
    build = deployments["build"]
    assert (
        build["work_pool"]["name"] == "reactbench-gpu" and deployments["edit"]["work_pool"]["name"] == "reactbench-gpu"
    )
    assert build["schedules"][0]["cron"] == "0 2 * * *"


def test_ray_init_arguments_for_local_instance_and_cluster() -> None:
    """The URL comes from Prefect's active settings (what this process reports to). Prefect reads
    the environment once, when it is first imported, so the test sets the settings themselves:
    an environment variable changed later in a process that imported Prefect is not seen."""
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from flows.config import OrchestrationConfig
    from flows.prefect_flows import ray_init_kwargs

    with temporary_settings(updates={PREFECT_API_URL: "http://prefect:4200/api"}):
        local = ray_init_kwargs(OrchestrationConfig(task_runner="ray", ray_init={"num_cpus": 8}))
        joined = ray_init_kwargs(OrchestrationConfig(task_runner="ray", ray_address="auto"))
    env = {"runtime_env": {"env_vars": {"PREFECT_API_URL": "http://prefect:4200/api"}}}
    assert local == {"include_dashboard": False, "num_cpus": 8, **env}, (
        "a local instance's workers report to the build's server too"
    )
    assert joined == env
