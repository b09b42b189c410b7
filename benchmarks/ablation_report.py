"""Does the editor ablation report decide? A demo ablation built, evaluated and reported end to end.

Builds a scaled sample (``reactbench sample-data``, ``--vg-images`` Visual Genome images) with
control variants on (``mine.control: true``, so induction can be measured) and three editors on
the same instructions: ``classical`` (OpenCV, Telea inpainting, 5 px removal margin),
``classical-ns`` (Navier-Stokes inpainting, 9 px) and ``classical-wide`` (Telea, 15 px): ablation
labels of one editor, configured differently. ``--pix2pix`` / ``--qwen`` add a tiny random
InstructPix2Pix / Qwen-Image-Edit (tests/tiny_checkpoints.py, loaded through diffusers like a real
checkpoint; ~4 s per edit on a busy 2-core CPU, and the instructor then writes free-form attributes
the classical editors refuse, which the funnel shows). Evaluates the offline models available:
the ``rules`` baseline (it answers from the annotations, blind to the pixels, so its induction is
0 by construction) and a tiny random Qwen2.5-VL through the ``transformers`` backend
(tests/prompts/tiny_qwen.py; ``--no-tiny-vlm`` skips it). Every step is the real CLI (``build``,
``eval --unverified``, ``report ablation``); the figures are the report's own
(``tasks.release.report.ablation_figures.ablation_summary``). The build is not reviewed, so kept
items are verified edits with questions (the report says so).

Prints, per editor, the yield funnel, seconds per edit and per kept item, targeted minus control
accuracy with its 95% interval, and the verdict; ends with one JSON line with ``editors``,
``yield`` (per editor), ``s_per_accepted_item`` (per editor), ``induction`` (per editor: pooled
targeted minus control with its interval, and per model), ``recommended`` and the rest of the
report's figures, plus ``steps_s`` (wall seconds of each CLI step).

    .venv/bin/python benchmarks/ablation_report.py                     # 180 VG images
    .venv/bin/python benchmarks/ablation_report.py --vg-images 360 --pix2pix --qwen --no-tiny-vlm
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLI = str(Path(sys.executable).with_name("reactbench"))


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _by_location(path: Path) -> object:
    """A test helper module loaded by file location (benchmarks never import ``tests.``)."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _step(name: str, cmd: list[str], log: Path, steps: dict[str, float]) -> None:
    t0 = time.perf_counter()
    with log.open("a") as fh:
        fh.write(f"$ {' '.join(cmd)}\n")
        fh.flush()
        proc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, env=_env(), cwd=ROOT)
    steps[name] = round(time.perf_counter() - t0, 2)
    if proc.returncode != 0:
        sys.exit(f"{name} failed (exit {proc.returncode}); see {log}")
    print(f"{name}: {steps[name]:.1f} s", flush=True)


def config(data: Path, models: Path, pix2pix: bool, qwen: bool) -> dict:
    """The demo config with control variants and the ablation's editors."""
    import yaml

    cfg = yaml.safe_load((ROOT / "configs" / "demo.yaml").read_text())
    cfg["sources"] = {"visual_genome": str(data / "visual_genome"), "fsc147": str(data / "fsc147")}
    cfg["mine"]["control"] = True
    cfg["editors"] = [
        {"name": "classical", "params": {"dilation_px": 5}},
        {"name": "classical", "label": "classical-ns", "params": {"dilation_px": 9, "inpaint_method": "ns"}},
        {"name": "classical", "label": "classical-wide", "params": {"dilation_px": 15}},
    ]
    if pix2pix:
        cfg["editors"].append(
            {
                "name": "instruct-pix2pix",
                "params": {"model": str(models / "instruct-pix2pix"), "steps": 2, "max_side": 64, "batch_size": 4},
            }
        )
    if qwen:
        cfg["editors"].append(
            {
                "name": "qwen-image-edit",
                "params": {"model": str(models / "qwen-image-edit"), "steps": 2, "process_area": 64 * 64},
            }
        )
    return cfg


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vg-images", type=int, default=180, help="Visual Genome images of the sample (default 180)")
    ap.add_argument(
        "--work", default="/tmp/ablation_report", help="scratch folder (sample, tiny models, run); emptied first"
    )
    ap.add_argument(
        "--no-tiny-vlm", action="store_true", help="evaluate the rules baseline only (not the tiny random Qwen2.5-VL)"
    )
    ap.add_argument("--pix2pix", action="store_true", help="one more editor: a tiny random InstructPix2Pix")
    ap.add_argument("--qwen", action="store_true", help="one more editor: a tiny random Qwen-Image-Edit")
    args = ap.parse_args()

    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    log, steps = work / "steps.log", {}
    data, models, run = work / "sample", work / "models", work / "run"
    _step("sample-data", [CLI, "sample-data", str(data), "--vg-images", str(args.vg_images)], log, steps)
    sys.path.insert(0, str(ROOT / "tests"))
    tiny = _by_location(ROOT / "tests" / "tiny_checkpoints.py")
    t0 = time.perf_counter()
    if args.pix2pix:
        tiny.build_instruct_pix2pix(models / "instruct-pix2pix")  # type: ignore[attr-defined]
    if args.qwen:
        tiny.build_qwen_image_edit(models / "qwen-image-edit")  # type: ignore[attr-defined]
    vlm = None
    if not args.no_tiny_vlm:
        vlm = _by_location(ROOT / "tests" / "prompts" / "tiny_qwen.py").build_tiny_qwen25_vl(models / "qwen25-vl")  # type: ignore[attr-defined]
    steps["tiny models"] = round(time.perf_counter() - t0, 2)
    import yaml

    (work / "ablation.yaml").write_text(yaml.safe_dump(config(data, models, args.pix2pix, args.qwen), sort_keys=False))
    _step("build", [CLI, "build", "--config", str(work / "ablation.yaml"), "--run-dir", str(run)], log, steps)
    _step("eval rules", [CLI, "eval", "--run-dir", str(run), "--model", "rules:rules-v1", "--unverified"], log, steps)
    if vlm is not None:
        _step(
            "eval tiny-vlm",
            [CLI, "eval", "--run-dir", str(run), "--model", f"transformers:{vlm}", "--unverified"],
            log,
            steps,
        )
    _step("report ablation", [CLI, "report", "ablation", "--run-dir", str(run)], log, steps)

    sys.path.insert(0, str(ROOT))
    from storage.fs import RunFS
    from tasks.release.report.ablation_figures import ablation_summary, summary_json

    summary = ablation_summary(RunFS.open(str(run)))
    figures = summary_json(summary)
    print(f"\nreport: {run / 'reports' / 'ablation.html'}")
    print(f"verdict: {summary['verdict'].text}")
    for w in figures["licence_warnings"]:
        print(f"licence: {w}")
    print(f"unedited items (no editor): {figures['unedited']['items']}")
    print(
        f"{'editor':<18}{'instr':>6}{'supp':>6}{'edited':>7}{'qc':>6}{'verif':>6}{'w/ q':>6}{'kept %':>8}{'s/edit':>10}{'s/kept':>10}  induction (pooled, 95% CI)"
    )
    for ed in figures["editors"]:
        y, s, ind = figures["yield"][ed], figures["s_per_edit"][ed], figures["induction"][ed]["pooled"]
        sk = figures["s_per_accepted_item"][ed]
        ind_s = (
            "n/a"
            if not ind or ind["difference"] is None
            else f"{ind['difference']:+.1f} [{ind['ci95'][0]:+.1f}, {ind['ci95'][1]:+.1f}]"
        )
        print(
            f"{ed:<18}{y['instructions']:>6}{y['supported']:>6}{y['edited']:>7}{y['auto_qc_pass']:>6}{y['verified']:>6}{y['with_questions']:>6}"
            f"{(y['share_accepted'] if y['share_accepted'] is not None else float('nan')):>8.1f}"
            f"{(s['s'] if s['s'] is not None else float('nan')):>10.4g}{(sk if sk is not None else float('nan')):>10.4g}  {ind_s}"
        )
    figures["steps_s"] = steps
    figures["vg_images"] = args.vg_images
    print(json.dumps(figures, sort_keys=True))


if __name__ == "__main__":
    main()
