"""Preflight of the instruction editors from their published configs (meta device, no weights):
FLUX.1 Kontext dev, FLUX.2 klein 4B / 9B, LongCat-Image-Edit, Qwen-Image-Edit-2511."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from editors.diffusers_edit import DiffusersEditParams, memory_profile
from editors.memory import choose
from flows.config import CONFIG_DIR, load_config

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = {  # transformer and text encoder(s), billions of parameters, as published
    "black-forest-labs/FLUX.1-Kontext-dev": (12.0, 4.9),
    "black-forest-labs/FLUX.2-klein-4B": (3.9, 4.0),
    "black-forest-labs/FLUX.2-klein-9B": (9.1, 8.2),
    "meituan-longcat/LongCat-Image-Edit": (6.3, 8.3),
}


@pytest.mark.parametrize("model", sorted(PUBLISHED))
def test_published_architectures_are_sized_and_planned_on_one_and_four_48gb_gpus(model):
    profile = memory_profile(DiffusersEditParams(model=model), "m", "cuda")
    assert profile.source.endswith("(known architecture)")
    by = {c.name.split("/")[1]: c for c in profile.components}
    transformer, encoder = PUBLISHED[model]
    assert abs(by["transformer"].params / 1e9 - transformer) < 0.15
    text = sum(c.params for n, c in by.items() if n.startswith("text_encoder")) / 1e9
    assert abs(text - encoder) < 0.15
    for gpus in (1, 4):
        best, tried = choose(profile.components, gpus, 48.0, profile.layouts, profile.quants)
        assert best is not None and best.name == "single", [
            (f.name, f.peak_gb) for f in tried
        ]  # bf16, everything on one A6000
        assert best.replicas == gpus
        assert not any("fp8" in f.name for f in tried)  # A6000s have no FP8: no plan offers it


def test_the_meta_count_matches_the_loaded_tiny_pipeline(tiny_edit_families):
    from editors.architectures import count_module_params
    from editors.diffusers_edit import DiffusersEditEditor

    for family in ("flux-kontext", "flux2-klein", "longcat-image-edit"):
        params = {"model": str(tiny_edit_families[family]), "device": "cpu"}
        profile = memory_profile(DiffusersEditParams(**params), "t", "cpu")
        ed = DiffusersEditEditor(params)
        ed.ensure_loaded()
        for comp in profile.components:
            name = comp.name.split("/")[1]
            assert comp.params == count_module_params(getattr(ed.pipe, name))[0], (family, name)


def _preflight(*args: str) -> tuple[int, dict, str]:
    env = dict(os.environ, HF_HUB_OFFLINE="0", PYTHONPATH=str(ROOT), HF_HUB_CACHE=str(ROOT / ".no-such-hub-cache"))
    proc = subprocess.run(
        [sys.executable, "-m", "flows.cli", "preflight", "-c", str(CONFIG_DIR / "instruction-editors.yaml"), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=ROOT,
    )
    return proc.returncode, json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


def test_reactbench_preflight_plans_each_editor_on_one_48gb_gpu_and_says_what_fits_16gb():
    rc, out, err = _preflight("--gpus", "1", "--gpu-memory-gb", "48", "--gpu-name", "RTX A6000", "--items", "100")
    assert rc == 0 and out["verdict"] == "fits", err[-2000:]
    plans = dict(p.split(": ") for p in out["plan"].split(", "))
    assert plans == {
        "flux-kontext-dev": "single",
        "flux2-klein-4b": "single",
        "longcat-image-edit": "single",
        "qwen-image-edit-2511": "two_phase",
    }
    assert "flux2-klein-4b: 100 pending edit(s)" in err and "4 steps at 1024 px" in err
    rc, out, err = _preflight("--gpus", "1", "--gpu-memory-gb", "16")
    assert rc == 3 and out["verdict"] == "does not fit"
    assert "longcat-image-edit: no memory plan fits 1 GPU(s) of 16 GB" in err and "text_encoder alone" in err
    assert "flux2-klein-4b: model_offload" in out["plan"]


def test_the_demo_config_loads():
    assert [e.key for e in load_config(CONFIG_DIR / "instruction-editors.yaml").editors] == [
        "flux-kontext-dev",
        "flux2-klein-4b",
        "longcat-image-edit",
        "qwen-image-edit-2511",
    ]
