"""What orchestration costs a single stage run: local threads vs Prefect, side by side.

Runs ``reactbench mine --force`` on the sample (a sub-second stage, so the numbers are
orchestration overhead) as a real subprocess, several ways, in one go:

  local            --orchestrator local (no Prefect API contact)
  auto_no_api      --orchestrator auto without PREFECT_API_URL (what a laptop user gets)
  ephemeral_cold   --orchestrator prefect, no API: Prefect starts a temporary server,
                   fresh PREFECT_HOME (database migrations included)
  ephemeral_warm   the same with the migrated PREFECT_HOME
  server           --orchestrator prefect with PREFECT_API_URL pointing at a running server
                   (the GPU-node setup: runs recorded, artifacts published)

Prints a table with each mode's wall time and its ratio to ``local``, then one JSON line:
local_s, auto_no_api_s, ephemeral_cold_s, ephemeral_warm_s, server_s, server_startup_s,
ephemeral_warm_over_local, server_over_local.

Usage: python benchmarks/orchestration_startup.py [--repeats N]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
BIN = Path(sys.executable).parent


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(PREFECT_SERVER_ANALYTICS_ENABLED="false", PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="120")
    env.update(extra)
    return env


def _timed(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    return elapsed


def _start_server(home: Path) -> tuple[subprocess.Popen, str, float]:
    import httpx

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/api"
    start = time.perf_counter()
    proc = subprocess.Popen(
        [str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port), "--no-ui"],
        env=_clean_env(PREFECT_HOME=str(home)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    while time.perf_counter() - start < 180:
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return proc, url, time.perf_counter() - start
        except httpx.HTTPError:
            time.sleep(0.3)
    proc.kill()
    raise SystemExit("prefect server did not start within 180 s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2, help="runs per warm mode (median reported)")
    args = parser.parse_args()

    from miners.sample_data import generate_sample

    with tempfile.TemporaryDirectory(prefix="rb-orch-bench-") as tmp_s:
        tmp = Path(tmp_s)
        generate_sample(tmp / "sample")
        cfg = yaml.safe_load((ROOT / "configs" / "demo.yaml").read_text())
        cfg["sources"] = {
            "visual_genome": str(tmp / "sample" / "visual_genome"),
            "fsc147": str(tmp / "sample" / "fsc147"),
        }
        config = tmp / "config.yaml"
        config.write_text(yaml.safe_dump(cfg))
        base = [str(BIN / "reactbench"), "mine", "--config", str(config), "--run-dir", str(tmp / "run"), "--force"]
        results: dict[str, float] = {}

        def median(orch: str, env: dict[str, str]) -> float:
            return statistics.median(_timed([*base, "--orchestrator", orch], env) for _ in range(args.repeats))

        client_home = tmp / "client-home"
        results["local"] = median("local", _clean_env(PREFECT_HOME=str(client_home)))
        results["auto_no_api"] = median("auto", _clean_env(PREFECT_HOME=str(client_home)))
        eph_home = tmp / "ephemeral-home"
        results["ephemeral_cold"] = _timed(
            [*base, "--orchestrator", "prefect"], _clean_env(PREFECT_HOME=str(eph_home))
        )
        results["ephemeral_warm"] = median("prefect", _clean_env(PREFECT_HOME=str(eph_home)))
        server, url, startup = _start_server(tmp / "server-home")
        try:
            results["server"] = median("prefect", _clean_env(PREFECT_HOME=str(client_home), PREFECT_API_URL=url))
        finally:
            server.terminate()
            server.wait(30)

    local = results["local"]
    print(f"{'mode':<16} {'wall s':>8} {'x local':>8}")
    for mode, secs in results.items():
        print(f"{mode:<16} {secs:8.2f} {secs / local:8.1f}")
    print(f"{'server start-up':<16} {startup:8.2f}   (once per machine, not per run)")
    out = {f"{k}_s": round(v, 2) for k, v in results.items()}
    out.update(
        server_startup_s=round(startup, 2),
        ephemeral_warm_over_local=round(results["ephemeral_warm"] / local, 2),
        server_over_local=round(results["server"] / local, 2),
    )
    print(json.dumps(out))


if __name__ == "__main__":
    main()
