"""benchmarks/gpu_validate.py --size tiny: the GPU validation's code path (real-size build aside)
run on the CPU with the tiny models, so the script a CUDA session runs cannot rot."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "gpu_validate.py"


def _run(*args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=timeout, cwd=ROOT
    )


@pytest.fixture(scope="module")
def tiny_run() -> dict:
    proc = _run("--size", "tiny")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_tiny_run_ends_with_the_json_line(tiny_run: dict) -> None:
    assert tiny_run["gpu"] == "cpu" and tiny_run["size"] == "tiny"
    assert set(tiny_run["plans"]) == {"single", "two_phase"}  # the plans a CPU can run
    assert {"model_offload", "split", "int8", "int4"} <= set(tiny_run["skipped"])
    for fig in tiny_run["plans"].values():
        assert fig["peak_gb"] is None and fig["predicted_gb"] > 0  # no CUDA: memory predicted, not measured
        assert {"s_per_step_64", "s_per_step_96", "s_per_edit_64", "s_per_edit_96"} <= set(fig)
        assert fig["s_per_edit_96"] > 0 and fig["s_per_step_64"] >= 0
    assert tiny_run["sam_lama_s_per_edit"] > 0
    from editors.diffusers_edit import FAMILIES

    fams = tiny_run["families"]  # every diffusers-edit family through DiffusersEditEditor
    assert {f["pipeline"] for f in fams.values()} == set(FAMILIES) - {
        "QwenImageEditPipeline",
        "QwenImageEditPlusPipeline",
    }  # (those: the plans above)
    for fig in fams.values():
        assert (
            fig["s_per_edit_64"] > 0
            and fig["default_steps"] == FAMILIES[fig["pipeline"]].steps
            and fig["peak_gb"] is None
        )
    assert tiny_run["cuda_matches_cpu"] is None  # no CUDA device here
    assert (
        0 <= tiny_run["bf16_mean_abs_diff"] <= tiny_run["tolerance"]
    )  # bf16 vs float32 on the CPU: the tolerance's basis


def test_a_build_manifest_fills_the_timing_table(tmp_path: Path) -> None:
    manifest = {
        "finished_at": "2026-11-26T10:00:00Z",
        "extra": {
            "timings": {
                "a": {
                    "editor": "qwen-image-edit",
                    "key": "q",
                    "model": "Qwen/Qwen-Image-Edit-2511",
                    "gpu": "NVIDIA RTX A6000",
                    "plan": "two_phase",
                    "steps": 40,
                    "resolution": 1024,
                    "seconds": 900.0,
                    "items": 6,
                },
                "b": {
                    "editor": "classical",
                    "key": "c",
                    "model": None,
                    "gpu": "cpu",
                    "plan": "single",
                    "steps": None,
                    "resolution": None,
                    "seconds": 1.0,
                    "items": 9,
                },
            }
        },
    }
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    table = tmp_path / "table.json"
    proc = _run("--from-manifest", str(tmp_path / "manifest.json"), "--table", str(table), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"recorded": 1}  # CPU figures are not GPU timings
    (entry,) = json.loads(table.read_text())["entries"]
    assert entry["gpu"] == "NVIDIA RTX A6000" and entry["s_per_edit"] == 150.0 and entry["source"] == "build"
