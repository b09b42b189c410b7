"""A CPU-only config never imports torch: the demo build and an eval of it run without it (its
import alone is ~1.7 CPU-s and ~730 MB, most of such a build's memory), while a config with a
model editor or the transformers backend still asks torch for the GPUs (tasks/tools/preflight.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import yaml

from flows.config import config_from_dict, load_config
from tasks.tools.preflight import CPU_ONLY, gpu_needed, run_preflight

if TYPE_CHECKING:
    from conftest import DemoBuild
    from guarded_cli import GuardedRun

ROOT = Path(__file__).resolve().parents[2]
PAPER = ROOT / "configs" / "reactbench.yaml"
CLOSED = "http://127.0.0.1:9/v1"  # nothing listens on the discard port: the endpoint check answers at once


def _demo(sample_dir: Path, **mllm: str) -> dict:
    data = yaml.safe_load((ROOT / "configs" / "demo.yaml").read_text())
    data["sources"] = {"visual_genome": str(sample_dir / "visual_genome"), "fsc147": str(sample_dir / "fsc147")}
    data["mllm"].update(mllm)
    return data


def test_demo_build_and_eval_never_import_torch(demo_build: DemoBuild, demo_eval: tuple[Path, GuardedRun]) -> None:
    """The session's demo build and its eval (tests/conftest.py: the real CLI in a fresh interpreter,
    default orchestration, no Prefect API), each reporting whether torch was ever imported."""
    build, run = demo_build.build, demo_build.run
    assert build.proc.returncode == 0, build.output()
    assert (run / "edit" / "_manifest.json").is_file() and (run / "qa" / "_manifest.json").is_file(), build.proc.stderr
    assert build.torch_loaded is False, "a CPU-only build imported torch"
    eval_run, evaluated = demo_eval
    assert evaluated.proc.returncode == 0, evaluated.output()
    assert list((eval_run / "eval").glob("*/metrics.json")), evaluated.proc.stderr
    assert evaluated.torch_loaded is False, "a rules-backend eval imported torch"


def test_preflight_of_a_cpu_config_reports_cpu_without_probing(sample_dir: Path) -> None:
    report = run_preflight(config_from_dict(_demo(sample_dir)))
    assert report.ok and report.gpus == 0 and report.gpu_source == CPU_ONLY
    # flags still plan for the GPUs they name, without torch either
    flagged = run_preflight(config_from_dict(_demo(sample_dir)), 2, 24)
    assert (flagged.gpus, flagged.gpu_memory_gb, flagged.gpu_source) == (2, 24.0, "flags")


def test_what_needs_a_gpu(sample_dir: Path) -> None:
    every = {"mine", "instruct", "edit", "qa", "review"}
    assert not gpu_needed(config_from_dict(_demo(sample_dir)), every)
    assert not gpu_needed(config_from_dict(_demo(sample_dir, backend="openai", base_url=CLOSED, model="m")), every)
    transformers = config_from_dict(_demo(sample_dir, backend="transformers", model="some/local-model"))
    assert gpu_needed(transformers, every) and gpu_needed(transformers, {"qa"})
    assert not gpu_needed(transformers, {"mine", "edit", "review"})  # the backend answers only in instruct and qa
    for name in ("qwen-image-edit", "sam-lama", "instruct-pix2pix"):
        data = _demo(sample_dir)
        data["editors"] = [*data["editors"], {"name": name}]
        cfg = config_from_dict(data)
        assert gpu_needed(cfg, every) and gpu_needed(cfg, {"edit"}), name
        assert not gpu_needed(cfg, {"mine", "instruct", "qa"}), name  # no edit, no editor placed


def test_a_model_editor_config_still_detects_the_gpus() -> None:
    """In a fresh interpreter: the paper config's preflight asks torch.cuda (its answer depends on
    the machine: a count and memory, or none)."""
    code = (
        "import json, sys\n"
        "from flows.config import load_config\n"
        "from tasks.tools.preflight import run_preflight\n"
        f"r = run_preflight(load_config({str(PAPER)!r}, {{'mllm.base_url': {CLOSED!r}}}), stages=['edit'])\n"
        "print(json.dumps([r.gpus, r.gpu_source, 'torch' in sys.modules, [f.key for f in r.fits_list]]))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}  # sized from the known architecture
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    gpus, source, torch_loaded, fitted = json.loads(proc.stdout.strip().splitlines()[-1])
    assert torch_loaded is True and fitted == ["qwen-image-edit"]
    assert source in ("torch.cuda", "no CUDA device: CPU", "no torch: CPU"), source
    assert (gpus > 0) == (source == "torch.cuda")


@pytest.mark.parametrize("stages", [None, ["edit"]])
def test_paper_config_with_flags_keeps_its_plan(stages: list[str] | None) -> None:
    report = run_preflight(load_config(PAPER, {"mllm.base_url": CLOSED}), 1, 48, stages=stages)
    assert report.gpu_source == "flags" and report.fits and report.plan == "two_phase"
