"""One real Prefect server (and one local Ray instance) shared by every orchestration test.

``prefect server start`` runs as a subprocess on 127.0.0.1 with a temporary ``PREFECT_HOME``
(its own SQLite database); start-up takes 11-31 s here, so it is started once per session.
Tests that talk to it take the function-scoped ``prefect_api`` fixture, which points this
process's Prefect settings (and the environment inherited by subprocesses) at the server
only for the duration of the test, so other test areas keep running without a Prefect API.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
VENV_BIN = Path(sys.executable).parent
STARTUP_TIMEOUT_S = 150.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PrefectServer:
    def __init__(self, home: Path, port: int):
        self.home, self.port = home, port
        self.url = f"http://127.0.0.1:{port}/api"
        self.log = home / "server.log"
        self.proc: subprocess.Popen | None = None

    def env(self, **extra: str) -> dict[str, str]:
        """Environment for subprocesses (CLI, worker) that talk to this server."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
        env.update(
            PREFECT_HOME=str(self.home / "client"),
            PREFECT_API_URL=self.url,
            PREFECT_SERVER_ANALYTICS_ENABLED="false",
            PREFECT_CLI_PROMPT="false",
            PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        )
        env.update(extra)
        return env

    def post(self, path: str, body: dict | None = None) -> Any:
        """POST to the server's REST API (e.g. ``/artifacts/filter``) and return the JSON reply."""
        reply = httpx.post(f"{self.url}{path}", json=body or {}, timeout=30)
        reply.raise_for_status()
        return reply.json() if reply.content else None

    def artifacts(self, key: str, **filters: Any) -> list[dict[str, Any]]:
        """Artifacts with ``key``, newest first (``filters``: extra body fields such as flow_runs)."""
        body = {"artifacts": {"key": {"any_": [key]}}, "sort": "CREATED_DESC", "limit": 50, **filters}
        return self.post("/artifacts/filter", body)

    def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
        env.update(
            PREFECT_HOME=str(self.home / "server"),
            PREFECT_SERVER_ANALYTICS_ENABLED="false",
            PREFECT_SERVER_UI_ENABLED="false",
            PREFECT_LOGGING_SERVER_LEVEL="WARNING",
        )
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                [str(VENV_BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(self.port), "--no-ui"],
                env=env, stdout=log, stderr=subprocess.STDOUT, cwd=str(self.home), start_new_session=True,
            )
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"prefect server exited with {self.proc.returncode}:\n{self.log.read_text()[-3000:]}")
            try:
                if httpx.get(f"{self.url}/health", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"prefect server not healthy after {STARTUP_TIMEOUT_S} s:\n{self.log.read_text()[-3000:]}")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture(scope="session")
def prefect_server() -> Iterator[PrefectServer]:
    with tempfile.TemporaryDirectory(prefix="rb-prefect-") as tmp:
        server = PrefectServer(Path(tmp), _free_port())
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
            num_cpus=2, num_gpus=2, include_dashboard=False, _temp_dir=tmp, object_store_memory=200 * 1024 * 1024,
            runtime_env={"env_vars": {"PREFECT_API_URL": prefect_server.url, "PYTHONPATH": pythonpath}}, log_to_driver=False,
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
def sample_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled sample data (generated once) and a demo config whose sources point at it."""
    import yaml

    from miners.sample_data import generate_sample

    root = tmp_path_factory.mktemp("orch-sample")
    generate_sample(root / "sample")
    data = yaml.safe_load((REPO / "configs" / "demo.yaml").read_text())
    data["sources"] = {"visual_genome": str(root / "sample" / "visual_genome"), "fsc147": str(root / "sample" / "fsc147")}
    data["orchestration"] = {"retries": 1, "retry_delay_s": 0.5}
    path = root / "config.yaml"
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
