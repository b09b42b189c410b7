"""One real Prefect server (and one local Ray instance) shared by every orchestration test.

``prefect server start`` runs as a subprocess on 127.0.0.1 with a temporary ``PREFECT_HOME``
(its own SQLite database); start-up takes 11-31 s here, so it is started once per session.
Tests that talk to it take the function-scoped ``prefect_api`` fixture, which points this
process's Prefect settings (and the environment inherited by subprocesses) at the server
only for the duration of the test, so other test areas keep running without a Prefect API.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from orch_support import HERE, REPO, PrefectServer, free_port


@pytest.fixture(scope="session")
def prefect_server() -> Iterator[PrefectServer]:
    with tempfile.TemporaryDirectory(prefix="rb-prefect-") as tmp:
        server = PrefectServer(Path(tmp), free_port())
        server.start()
        try:
            yield server
        finally:
            _flush_prefect_logs()
            server.stop()


def _flush_prefect_logs() -> None:
    """Send buffered run logs and events before the server goes away (else Prefect prints
    "Error logging to API" at exit)."""
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    for worker in (APILogWorker, EventsWorker):
        try:
            worker.drain_all(timeout=5)
        except Exception:  # pragma: no cover - nothing was started in this session
            pass


@pytest.fixture
def prefect_api(prefect_server: PrefectServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[PrefectServer]:
    """Point this process at the session's server for one test (settings and environment)."""
    from prefect.settings import PREFECT_API_URL, temporary_settings

    monkeypatch.setenv("PREFECT_API_URL", prefect_server.url)
    with temporary_settings(updates={PREFECT_API_URL: prefect_server.url}):
        yield prefect_server


@pytest.fixture(scope="module")
def ray_cluster(prefect_server: PrefectServer) -> Iterator[None]:
    """A local Ray instance (2 CPUs, no dashboard, temp dirs) whose workers report to the server.

    Module-scoped: only the Ray tests use it, and its worker processes go away right after them.

    Ray workers inherit the environment of ``ray.init``'s moment, so the Prefect API URL is
    set while Ray starts and restored right after.
    """
    import ray  # the ray extra is part of the test install: no skip

    saved = {k: os.environ.get(k) for k in ("PREFECT_API_URL", "RAY_AUTH_MODE", "RAY_USAGE_STATS_ENABLED")}
    os.environ.update(PREFECT_API_URL=prefect_server.url, RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0")
    tmp = tempfile.mkdtemp(prefix="rbray-", dir="/tmp")  # short: Ray's socket paths have a length limit
    try:
        # num_gpus=2 declares two logical GPUs: Ray then assigns ids and sets CUDA_VISIBLE_DEVICES
        # per task exactly as on a GPU node (nothing touches CUDA on this CPU-only machine).
        pythonpath = os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        ray.init(
            num_cpus=2,
            num_gpus=2,
            include_dashboard=False,
            _temp_dir=tmp,
            object_store_memory=200 * 1024 * 1024,
            runtime_env={"env_vars": {"PREFECT_API_URL": prefect_server.url, "PYTHONPATH": pythonpath}},
            log_to_driver=False,
        )
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    try:
        yield
    finally:
        ray.shutdown()
        subprocess.run(["rm", "-rf", tmp], check=False)


@pytest.fixture(scope="session")
def sample_config(sample_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo config with its sources pointing at the session's sample data (tests/conftest.py)."""
    import yaml

    data = yaml.safe_load((REPO / "configs" / "demo.yaml").read_text())
    data["sources"] = {"visual_genome": str(sample_dir / "visual_genome"), "fsc147": str(sample_dir / "fsc147")}
    data["orchestration"] = {"retries": 1, "retry_delay_s": 0.5}
    path = tmp_path_factory.mktemp("orch-config") / "config.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.fixture(scope="session")
def upstream_run(sample_config: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run directory where mine and instruct are complete (run locally: no orchestration needed)."""
    from flows.config import load_config
    from flows.runtime import run_pipeline

    run_dir = tmp_path_factory.mktemp("orch-upstream") / "run"
    run_pipeline(load_config(sample_config), str(run_dir), ["mine", "instruct"], orchestrator="local")
    return run_dir
