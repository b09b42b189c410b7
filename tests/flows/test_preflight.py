"""Preflight: the paper config sized on the meta device, plans chosen per GPU count and memory,
and a build that names something missing stops before `mine`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from flows.config import config_from_dict, load_config
from tasks.tools.preflight import run_preflight

ROOT = Path(__file__).resolve().parents[2]
CLI = str(Path(sys.executable).with_name("reactbench"))
PAPER = ROOT / "configs" / "reactbench.yaml"
CLOSED = "http://127.0.0.1:9/v1"  # nothing listens on the discard port: the endpoint check answers at once


def _run(*args: str, timeout: int = 300, online: bool = False) -> subprocess.CompletedProcess:
    """``online``: HF_HUB_OFFLINE unset, so hub ids not cached here are a warning (downloaded at
    edit time), not an error; the preflight itself only reads the local cache."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("PREFECT_API") and not (online and k == "HF_HUB_OFFLINE")
    }
    return subprocess.run([CLI, *args], capture_output=True, text=True, env=env, timeout=timeout, cwd=ROOT)


@pytest.fixture(autouse=True)
def _online(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)  # sizing from the known architecture reads no hub


def _paper(**overrides: object):
    return load_config(PAPER, {"mllm.base_url": CLOSED, **overrides})


def test_offline_without_the_weights_is_an_error_naming_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    report = run_preflight(_paper(), 1, 48)
    assert report.fits and not report.ok
    assert any("Qwen/Qwen-Image-Edit-2511" in p.detail and "hf download" in p.detail for p in report.errors)


def test_cli_sizes_the_paper_transformer_and_picks_a_plan_that_fits_one_a6000() -> None:
    proc = _run("preflight", "--config", str(PAPER), "--gpus", "1", "--gpu-memory-gb", "48", online=True)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert set(out) >= {"gpus", "gpu_memory_gb", "fits", "plan", "peak_gb", "models"}
    assert out["gpus"] == 1 and out["gpu_memory_gb"] == 48
    assert abs(out["models"]["qwen-image-edit/transformer"] / 20.43e9 - 1) < 0.02
    assert abs(out["models"]["qwen-image-edit/text_encoder"] / 8.3e9 - 1) < 0.02
    assert out["fits"] is True and out["plan"] == "two_phase" and out["peak_gb"] <= 48 - 1.5
    assert "qwen-image-edit/transformer" in proc.stderr and "single" in proc.stderr  # the table and the plans tried


def test_two_gpus_pick_the_split_and_four_run_two_replicas() -> None:
    cfg = _paper()
    two = run_preflight(cfg, 2, 48)
    assert two.fits and two.plan == "split"
    single = next(t for t in two.fits_list[0].tried if t.name == "single")
    assert not single.fits and single.peak_gb > 55  # 20.4 B + 8.3 B params in bf16: the whole pipeline needs ~58 GB
    four = run_preflight(cfg, 4, 48)
    assert four.plan == "split" and four.fits_list[0].plan.replicas == 2


def test_sixteen_gb_says_clearly_that_nothing_fits() -> None:
    report = run_preflight(_paper(), 1, 16)
    assert not report.fits and not report.ok and report.plan == "none fits"
    fix = report.fix()
    assert "no memory plan fits 1 GPU(s) of 16 GB" in fix and "text_encoder alone" in fix
    # with the text encoder out of the way (24 GB cards), the 8-bit transformer fits in two phases
    assert run_preflight(_paper(), 1, 24).plan == "two_phase+int8"


def test_a_fixed_plan_is_checked_not_replaced() -> None:
    report = run_preflight(
        _paper(
            **{"editors": [{"name": "qwen-image-edit", "params": {"memory_plan": "single", "quantization": "none"}}]}
        ),
        1,
        48,
    )
    assert not report.fits and [t.name for t in report.fits_list[0].tried] == ["single"]


def _bad_config(tmp_path: Path, misspelt: bool = False, sample: Path | None = None) -> Path:
    """Editors whose weights are missing (the preflight's job); with ``misspelt``, also an editor
    name the registry does not know (refused earlier, when the config loads); with ``sample``,
    its sources (a build checks them before its preflight, flows/config_checks.py)."""
    cfg: dict = {
        "editors": [
            *([{"name": "qwen-imge-edit"}] if misspelt else []),
            {"name": "qwen-image-edit", "label": "folder", "params": {"model": str(tmp_path / "no-such-model")}},
            {
                "name": "qwen-image-edit",
                "label": "lora",
                "params": {"lora": str(tmp_path / "no-such-lora.safetensors")},
            },
        ],
    }
    if sample is not None:
        cfg["sources"] = {"visual_genome": str(sample / "visual_genome"), "fsc147": str(sample / "fsc147")}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_build_naming_a_missing_editor_lora_or_model_folder_stops_before_mine(
    tmp_path: Path, sample_dir: Path
) -> None:
    run_dir = tmp_path / "run"
    config = _bad_config(tmp_path, sample=sample_dir)
    proc = _run("build", "--config", str(config), "--run-dir", str(run_dir), "--orchestrator", "local")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "preflight failed, nothing was run" in proc.stderr
    assert "no-such-model" in proc.stderr and "no-such-lora.safetensors" in proc.stderr
    assert not (run_dir / "mine").exists()
    # a misspelt editor name does not even reach the preflight: the config is refused as it loads
    proc = _run(
        "build",
        "--config",
        str(_bad_config(tmp_path, misspelt=True)),
        "--run-dir",
        str(run_dir),
        "--orchestrator",
        "local",
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "unknown editor 'qwen-imge-edit'" in proc.stderr
    assert not (run_dir / "mine").exists()


def test_preflight_of_a_run_directory_takes_its_saved_config(tmp_path: Path) -> None:
    """``--run-dir`` without ``--config``: the run's own config.yaml (flows/config.py::resolve_run_config),
    not the demo config; an explicit ``--config`` still wins."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "config.yaml").write_text(_bad_config(tmp_path).read_text())
    proc = _run("preflight", "--run-dir", str(run_dir), "--gpus", "1", "--gpu-memory-gb", "48")
    # exit 4: the editor whose model folder is missing could not be sized (issue 31: preflight's exit says which)
    assert proc.returncode == 4 and "no-such-lora.safetensors" in proc.stderr, proc.stderr[-2000:]
    demo = _run(
        "preflight",
        "--run-dir",
        str(run_dir),
        "--config",
        str(ROOT / "configs" / "demo.yaml"),
        "--gpus",
        "1",
        "--gpu-memory-gb",
        "48",
    )
    assert demo.returncode == 0 and "no-such-lora" not in demo.stderr, demo.stderr[-2000:]


def test_prefect_build_flow_runs_the_same_gate(tmp_path: Path) -> None:
    """In a subprocess: importing Prefect here would freeze its settings for later tests."""
    code = (
        "import sys, yaml\n"
        "from tasks.tools.preflight import PreflightFailed\n"
        "from flows.prefect_flows import build_flow\n"
        "try:\n"
        "    build_flow.fn(config=yaml.safe_load(open(sys.argv[1])), run_dir=sys.argv[2])\n"
        "except PreflightFailed as exc:\n"
        "    print('STOPPED', exc)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")} | {
        "PYTHONPATH": os.pathsep.join(sys.path)
    }
    proc = subprocess.run(
        [sys.executable, "-c", code, str(_bad_config(tmp_path)), str(tmp_path / "run")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=ROOT,
    )
    assert "STOPPED preflight failed" in proc.stdout and "no-such-lora.safetensors" in proc.stdout, proc.stderr[-2000:]
    assert not (tmp_path / "run" / "mine").exists()


def test_builds_without_edit_or_without_models_pass_quickly() -> None:
    from tasks.tools.preflight import require_preflight

    cfg = config_from_dict({})  # classical editor, rules MLLM
    require_preflight(cfg, None, None)
    report = run_preflight(cfg)
    assert report.ok and report.fits_list == [] and report.plan == "no models"
    bad_weights = config_from_dict(
        {"editors": [{"name": "qwen-image-edit", "params": {"lora": "/no/such/lora.safetensors"}}]}
    )
    assert require_preflight(bad_weights, ["mine", "instruct"], None) is None  # edit not run: not checked


def _verdict(proc: subprocess.CompletedProcess) -> tuple[int, dict, list[str]]:
    """(exit status, the JSON line, the verdict lines on stderr)."""
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return proc.returncode, out, [ln for ln in proc.stderr.splitlines() if ln.startswith("preflight: ")]


@pytest.mark.parametrize(
    "flags, code, verdict",
    [
        (["--gpus", "1", "--gpu-memory-gb", "16"], 3, "does not fit"),
        (
            ["--gpus", "4", "--gpu-memory-gb", "48", "--gpu-name", "RTX A6000", "--items", "1000", "--window-h", "8"],
            3,
            "does not fit",
        ),
        (
            ["--gpus", "4", "--gpu-memory-gb", "48", "--gpu-name", "RTX A6000", "--items", "10", "--window-h", "8"],
            0,
            "fits",
        ),
        (["--gpus", "4", "--gpu-memory-gb", "48", "--window-h", "8"], 4, "not sized"),
    ],
    ids=["memory", "window-missed", "window-met", "window-without-items"],
)
def test_the_exit_status_says_fits_does_not_fit_or_not_sized(flags: list[str], code: int, verdict: str) -> None:
    """Issue 31.6: a build that did not fit --window-h exited 0, so a nightly job could not gate
    on it. The exit status and the JSON line's verdict agree, with one verdict line naming why."""
    status, out, said = _verdict(_run("preflight", "--config", str(PAPER), *flags, online=True))
    assert status == code and out["verdict"] == verdict and out["exit_code"] == code, (status, out)
    assert len(said) == 1 and said[0].startswith(f"preflight: {verdict}: ") and said[0].endswith(f"(exit {code})"), (
        said
    )
    if verdict == "does not fit":
        assert out["fits"] is False or out["fits_window"] is False


def test_the_core_install_cannot_size_and_says_so_in_the_exit_and_the_json() -> None:
    """Without the gpu extra (torch taken away, as on the core install) the paper's editor cannot be
    sized: it exited 1 while its JSON said ``"fits": true, "plan": "no models"``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API") and k != "HF_HUB_OFFLINE"}
    code = "import sys\nsys.modules['torch'] = None\nfrom flows.entry import main\nsys.argv = ['reactbench', *sys.argv[1:]]\nmain()\n"
    proc = subprocess.run(
        [sys.executable, "-c", code, "preflight", "--config", str(PAPER), "--gpus", "1", "--gpu-memory-gb", "48"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=ROOT,
    )
    status, out, said = _verdict(proc)
    assert status == 4 and out["verdict"] == "not sized" and out["fits"] is None and out["plan"] == "not sized", out
    assert said == ["preflight: not sized: qwen-image-edit: its models could not be sized (exit 4)"], proc.stderr[
        -2000:
    ]
    assert "pip install 'reactbench-pipeline[gpu]'" in proc.stderr
