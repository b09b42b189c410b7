"""Build-time estimate (tasks/tools/estimate.py, editors/timing.py): pending edits counted with the
stage's own item keys, s/edit by source (measured | scaled | formula), the manifest's timing
record, and the window advice."""

from __future__ import annotations

import pytest
from edit_helpers import instruction_row, write_instructions

from editors.timing import TimingEntry, canonical_gpu, edit_cost, guess_gpu, manifest_entries
from flows.config import config_from_dict
from storage.fs import RunFS
from tasks.engine.base import RunContext
from tasks.engine.runner import run_stage
from tasks.stages.edit import EditStage
from tasks.tools.preflight import run_preflight


def test_half_the_items_reused_halves_pending_edits(tmp_path, scene_objects, sample_dir):
    rows = [instruction_row(o, sample_dir, "remove", f"remove the {o['name']}") for o in scene_objects[:8]]
    cfg = config_from_dict({"run": {"seed": 3, "shard_size": 4, "workers": 1}, "editors": [{"name": "classical"}]})
    write_instructions(tmp_path, rows)
    before = run_preflight(cfg, stages=["edit"], run_dir=str(tmp_path)).estimate
    assert before.pending_edits == 8 and before.to_json()["pending_edits"] == 8
    write_instructions(tmp_path, rows[:4])  # a first build edits half of them
    run_stage(EditStage(), RunContext(RunFS.open(str(tmp_path)), cfg))
    write_instructions(tmp_path, rows)  # the same instructions plus four new ones
    after = run_preflight(cfg, stages=["edit"], run_dir=str(tmp_path)).estimate
    assert after.pending_edits == 4
    assert after.s_per_edit is None and after.gpu_hours == 0.0  # classical runs on the CPU: no GPU time
    # the count is the one the stage then computes (same item keys)
    summary = run_stage(EditStage(), RunContext(RunFS.open(str(tmp_path)), cfg))
    assert summary.items_computed == 4 and summary.items_reused == 4


def test_manifest_timing_record_gives_measured_figures(tmp_path, scene_objects, sample_dir):
    rows = [instruction_row(o, sample_dir, "remove", f"remove the {o['name']}") for o in scene_objects[:3]]
    write_instructions(tmp_path, rows)
    ctx = RunContext(
        RunFS.open(str(tmp_path)),
        config_from_dict({"run": {"seed": 1, "shard_size": 2}, "editors": [{"name": "classical"}]}),
    )
    run_stage(EditStage(), ctx)
    manifest = EditStage().store(ctx).read_manifest()
    (rec,) = manifest["extra"]["timings"].values()
    assert (
        rec["gpu"] == "cpu"
        and rec["plan"] == "single"
        and rec["items"] == 3
        and rec["s_per_edit"] > 0
        and rec["steps"] is None
    )
    (entry,) = manifest_entries(manifest)
    assert entry.source == "build" and entry.s_per_edit == pytest.approx(rec["s_per_edit"], abs=1e-3)


def test_gpu_names_and_the_memory_guess():
    assert canonical_gpu("NVIDIA H100 80GB HBM3") == "H100" and canonical_gpu("NVIDIA H100 PCIe") == "H100 PCIe"
    assert canonical_gpu("NVIDIA RTX A6000") == "RTX A6000" and canonical_gpu("NVIDIA A100-SXM4-80GB") == "A100"
    assert canonical_gpu("Radeon 7") is None and guess_gpu(48) == "A40" and guess_gpu(141) == "H200"


def test_edit_cost_prefers_measured_then_scaled_then_formula():
    h100 = TimingEntry("NVIDIA H100 80GB HBM3", "qwen-image-edit", "m", "single", 40, 1024, 60.0)
    args = ("qwen-image-edit", "m", "single", 20, 1024, 1e16)
    measured = edit_cost([h100], "H100", *args)
    assert measured.source == "measured" and measured.s_per_edit == 30.0 and "40 to 20 steps" in measured.note
    scaled = edit_cost([h100], "RTX A6000", *args)
    assert scaled.source == "scaled" and scaled.s_per_edit == pytest.approx(30.0 * 989 / 154.8, rel=1e-3)
    other_plan = edit_cost([h100], "H100", "qwen-image-edit", "m", "two_phase", 20, 1024, 1e16)
    assert other_plan.source == "formula" and other_plan.s_per_edit == pytest.approx(1e16 / (989e12 * 0.4), rel=1e-3)
    assert edit_cost([], "Radeon 7", *args).source == "unknown"


def test_paper_config_estimate_and_window_advice(monkeypatch):
    """No card measured yet: the formula, stated as such; 8 h on 4 A6000s is far too short for the
    paper's 40 steps at 1024 px, and the advice says by how much each setting helps."""
    from pathlib import Path

    from flows.config import load_config

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    cfg = load_config(
        Path(__file__).resolve().parents[2] / "configs" / "reactbench.yaml", {"mllm.base_url": "http://127.0.0.1:9/v1"}
    )
    report = run_preflight(cfg, 4, 48, stages=["edit"], items=1000, gpu_name="NVIDIA RTX A6000", window_h=8)
    out = report.to_json()
    assert out["pending_edits"] == 1000 and out["s_per_edit_source"] == "formula" and out["fits_window"] is False
    est = report.estimate
    assert est.wall_h == pytest.approx(1000 * out["s_per_edit"] / 2 / 3600, rel=1e-3)  # split: 2 replicas on 4 GPUs
    assert out["gpu_hours"] == pytest.approx(2 * est.wall_h * 2, rel=1e-3)
    advice = " | ".join(out["fit_advice"])
    assert "4 steps" in advice and "process_area 512x512" in advice and "--gpus" in advice
    bigger = int(advice.split("--gpus ")[1].split()[0])
    assert bigger % 2 == 0 and est.wall_h * 2 / (bigger / 2) <= 8.01
    assert (
        run_preflight(cfg, 4, 48, stages=["edit"], gpu_name="A6000").to_json()["pending_edits"] is None
    )  # nothing to count yet


def test_a_build_prints_the_estimate_before_its_first_stage(monkeypatch, tmp_path):
    """`reactbench build`'s gate on a 48 GB node: the chain's preflight (flows/chain.py) with the CLI's estimate printer."""
    import io
    from pathlib import Path

    from rich.console import Console

    import tasks.tools.preflight as preflight
    from flows.cli_preflight import render_estimate
    from flows.config import load_config

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(preflight, "detect_gpus", lambda gpus, mem: (1, 48.0, "flags"))
    cfg = load_config(Path(__file__).resolve().parents[2] / "configs" / "reactbench.yaml")
    buf = io.StringIO()
    render_estimate(preflight.require_preflight(cfg, ["edit"], str(tmp_path / "run")), Console(file=buf, width=200))
    text = buf.getvalue()
    assert "build-time estimate on A40" in text and "two_phase" in text and "formula" in text
    assert "? pending edit(s)" in text  # no instructions yet: the count is unknown, not invented


def test_the_issue_command_prints_the_estimate_keys():
    """`reactbench preflight --config configs/reactbench.yaml --gpus 4 --gpu-memory-gb 48 --window-h 8`."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE" and not k.startswith("PREFECT_API")}
    proc = subprocess.run(
        [
            str(Path(sys.executable).with_name("reactbench")),
            "preflight",
            "--config",
            "configs/reactbench.yaml",
            "--gpus",
            "4",
            "--gpu-memory-gb",
            "48",
            "--window-h",
            "8",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        timeout=300,
    )
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert {"pending_edits", "s_per_edit", "s_per_edit_source", "gpu_hours", "fits_window"} <= set(out)
    assert out["s_per_edit_source"] == "formula" and out["s_per_edit"] > 0 and out["plan"] == "split"
    assert out["pending_edits"] is None and out["fits_window"] is None  # nothing to count before instruct (no --items)
    assert "build-time estimate on A40" in proc.stderr
