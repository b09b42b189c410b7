"""Helpers shared by the orchestration tests: a real Prefect server process and its REST API.

A plain module (not conftest.py) so test modules can import it by a name no other test
folder uses.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from server_wait import wait_until_ready

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
VENV_BIN = Path(sys.executable).parent
STARTUP_TIMEOUT_S = 150.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PrefectServer:
    """``prefect server start`` on 127.0.0.1; its own SQLite database, or ``database_url``
    (``postgresql+asyncpg://...``) for a server that several workers and builds use at once."""

    def __init__(self, home: Path, port: int, database_url: str | None = None):
        self.home, self.port, self.database_url = home, port, database_url
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
        if self.database_url:
            env["PREFECT_API_DATABASE_CONNECTION_URL"] = self.database_url
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                [
                    str(VENV_BIN / "prefect"),
                    "server",
                    "start",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(self.port),
                    "--no-ui",
                ],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=str(self.home),
                start_new_session=True,
            )
        wait_until_ready(
            self.proc,
            lambda: httpx.get(f"{self.url}/health", timeout=2).status_code == 200,
            "prefect server",
            lambda: self.log.read_text()[-3000:],
            STARTUP_TIMEOUT_S,
            stop=self.stop,
        )

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


RUN_TERMINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}


def prefect_cli(server: PrefectServer, *args: str, **env: str) -> str:
    """Run ``prefect <args>`` against ``server`` from the repository root; its output (must succeed)."""
    # Prefect's CLI draws its tables at the terminal's width; the names the tests read must not
    # be folded across rows, whatever COLUMNS the suite runs with.
    proc = subprocess.run(
        [str(VENV_BIN / "prefect"), *args],
        cwd=REPO,
        env=server.env(COLUMNS="250", **env),
        capture_output=True,
        text=True,
        timeout=180,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"prefect {' '.join(args)} failed ({proc.returncode}):\n{out}"
    return out


def flow_run(server: PrefectServer, run_id: str) -> dict[str, Any]:
    reply = httpx.get(f"{server.url}/flow_runs/{run_id}", timeout=30)
    reply.raise_for_status()
    return reply.json()


def wait_for_flow_run(
    server: PrefectServer, run_id: str, timeout_s: float, states: set[str] = RUN_TERMINAL
) -> dict[str, Any]:
    """Poll a flow run until its state type is in ``states`` (terminal by default) or time runs out."""
    deadline = time.monotonic() + timeout_s
    run = flow_run(server, run_id)
    while run["state_type"] not in states and time.monotonic() < deadline:
        time.sleep(1.0)
        run = flow_run(server, run_id)
    return run


def start_worker(server: PrefectServer, pool: str, folder: Path, *extra: str, **env: str) -> subprocess.Popen:
    """``prefect worker start`` of a process pool, run from ``folder`` (its working folder; the
    log goes to ``folder/worker.log``); ``env`` adds variables (e.g. its own ``PREFECT_HOME``)."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "worker.log", "wb") as log:
        return subprocess.Popen(
            [str(VENV_BIN / "prefect"), "worker", "start", "--pool", pool, "--type", "process", *extra],
            cwd=folder,
            env=server.env(PREFECT_WORKER_QUERY_SECONDS="1", PREFECT_WORKER_PREFETCH_SECONDS="5", **env),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def stop_process(proc: subprocess.Popen, timeout_s: float = 20) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
