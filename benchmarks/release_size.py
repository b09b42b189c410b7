"""How big is a release next to the images it holds, and does export memory grow with the benchmark?

Exports two scaled runs (built here from ``reactbench sample-data`` at ``--sizes`` Visual Genome
images, mine caps raised in proportion, offline ``rules`` backend, classical editor; or taken
with ``--run-dir``, twice) with ``reactbench export --unverified`` in a subprocess each, and prints
for each export:

  questions        rows released
  unique_image_mb  the distinct image files the release references, each counted once
  text_mb          the release's other columns (Arrow bytes of everything but the image bytes)
  inline_mb        what the images cost when every row carries its own copy (the layout before
                   issue 30: each question embedded its images; Parquet rarely found the repeats)
  export_mb        the ``datasets`` part of the release: the Parquet files and the card
  export_over_images  export_mb / unique_image_mb (target <= 1.3, text included)
  peak_rss_mb      peak resident memory of the export process alone (``benchmarks/_child_rusage.py``)

and the ratio of the two peaks next to the ratio of the two question counts: memory that grew
with the benchmark would follow the questions. Ends with one JSON line for the larger export:
``questions``, ``unique_image_mb``, ``export_mb``, ``export_over_images``, ``peak_rss_mb``,
``peak_rss_ratio`` (larger over smaller export), plus ``questions_ratio``, ``text_mb``,
``inline_mb``, ``export_s``, ``sizes`` (questions of both) and ``cyclic_mc``. Exits 1 when export_over_images passes 1.3.

    .venv/bin/python benchmarks/release_size.py                       # 900 and 3,600 images
    .venv/bin/python benchmarks/release_size.py --sizes 180 900 --cyclic
    .venv/bin/python benchmarks/release_size.py --run-dir runs/small --run-dir runs/large
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _child_rusage import run_measured  # noqa: E402  (a sibling script, by file location)

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "benchmarks" / ".cache" / "release_size"
CLI = str(Path(sys.executable).with_name("reactbench"))
LIMIT = 1.3
# /tmp/scale/c900.yaml's mine caps at 900 VG images; raised in proportion with the sample
BASE_IMAGES = 900
CONFIG = """version: 1
run: {{seed: 0, shard_size: 16, workers: 2}}
sources: {{visual_genome: {data}/visual_genome, fsc147: {data}/fsc147}}
mine:
  tasks: [relational_erasure, counterfactual_attribute, alteration_tracing, dense_counting]
  relational_erasure: {{n_min: 20, theta: 0.2, area_range: [0.003, 0.5], images_per_pair: {pairs}}}
  counterfactual_attribute: {{n_min: 20, theta: 0.3, area_range: [0.003, 0.8], images_per_attribute: {attrs}}}
  alteration_tracing: {{max_images: {at}}}
  dense_counting: {{count_range: [5, 150], bins: [5, 10, 25, 50, 100, 150], per_bin: 6}}
mllm: {{backend: rules, model: rules-v1}}
editors:
  - name: classical
    params: {{dilation_px: 5}}
qa: {{beaf: true, mc_mode: {mc_mode}}}
"""


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def built_run(vg_images: int, cyclic: bool) -> Path:
    """A scaled run of ``vg_images`` VG images, built once and cached (a rebuild skips finished shards)."""
    mode = "cyclic" if cyclic else "shuffle"
    data, run = CACHE / f"data-{vg_images}", CACHE / f"run-{vg_images}-{mode}"
    if not (data / ".complete").exists():
        shutil.rmtree(data, ignore_errors=True)
        _quiet([CLI, "sample-data", str(data), "--vg-images", str(vg_images)])
        (data / ".complete").touch()
    k = vg_images / BASE_IMAGES
    config = CACHE / f"config-{vg_images}-{mode}.yaml"
    config.write_text(
        CONFIG.format(data=data, pairs=round(50 * k), attrs=round(10 * k), at=round(120 * k), mc_mode=mode)
    )
    print(f"building {run} ...", flush=True)
    _quiet([CLI, "build", "-c", str(config), "--run-dir", str(run)])
    return run


def _quiet(cmd: list[str]) -> None:
    """Run a command, showing its output only when it fails."""
    proc = subprocess.run(cmd, env=_env(), capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{(proc.stdout + proc.stderr)[-3000:]}")


def export(run: Path, out: Path, vlmevalkit: bool) -> tuple[float, float, str]:
    """Run ``reactbench export`` as a child process measured alone (``_child_rusage``: its own peak,
    not this process's): (peak RSS MB, seconds, its summary lines)."""
    cmd = [CLI, "export", "--run-dir", str(run), "--out", str(out), "--unverified", "--replace"]
    cmd.append("--vlmevalkit" if vlmevalkit else "--no-vlmevalkit")
    out.parent.mkdir(parents=True, exist_ok=True)
    m = run_measured(cmd, out.parent / f"{out.name}.export.log", cap_mb=float("inf"), env=_env())
    if m.rc != 0:
        raise SystemExit(f"export of {run} failed:\n{m.log[-3000:]}")
    return m.rss_mb, m.wall_s, m.log


def measure(release: Path, run: Path) -> dict[str, float]:
    """Sizes of the release's ``datasets`` part next to the distinct images it references."""
    files = sorted((release / "data").glob("*/*.parquet"))
    names: set[str] = set()
    inline = text = questions = 0
    rotated = False  # any MC question in more than one rotation (cyclic MC)
    sizes: dict[str, int] = {}
    for f in files:
        pf = pq.ParquetFile(f)
        questions += pf.metadata.num_rows
        for row in pf.read(columns=["images.list.element.path"]).column("images").to_pylist():
            for im in row:
                name = im["path"]
                if name not in sizes:
                    sizes[name] = (run / "images" / name[:2] / name).stat().st_size
                names.add(name)
                inline += sizes[name]
        other = pf.read(columns=[c for c in pf.schema_arrow.names if c != "images"])
        text += other.nbytes
        rotated = rotated or any(other.column("rotation").to_pylist())
    export_bytes = sum(f.stat().st_size for f in files) + (release / "README.md").stat().st_size
    unique = sum(sizes[n] for n in names)
    tsv = sum(f.stat().st_size for f in (release / "vlmevalkit").glob("*.tsv"))
    return {
        "questions": questions,
        "unique_image_mb": unique / 1e6,
        "text_mb": text / 1e6,
        "inline_mb": inline / 1e6,
        "export_mb": export_bytes / 1e6,
        "export_over_images": export_bytes / unique,
        "export_over_images_plus_text": export_bytes / (unique + text),
        "tsv_mb": tsv / 1e6,
        "cyclic_mc": rotated,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--sizes",
        type=int,
        nargs=2,
        default=[900, 3600],
        metavar=("SMALL", "LARGE"),
        help="VG images of the two built runs",
    )
    ap.add_argument(
        "--run-dir", action="append", default=[], help="take this built run instead (give two: smaller, then larger)"
    )
    ap.add_argument(
        "--cyclic", action="store_true", help="build with qa.mc_mode: cyclic (every MC question in all its rotations)"
    )
    ap.add_argument(
        "--vlmevalkit",
        action="store_true",
        help="also write the VLMEvalKit TSVs (their size is printed apart; export_mb is the datasets part)",
    )
    ap.add_argument("--out", default=str(CACHE / "releases"), help="where the releases are written")
    args = ap.parse_args()
    if args.run_dir and len(args.run_dir) != 2:
        ap.error("--run-dir: give two runs, the smaller first")
    runs = [Path(r) for r in args.run_dir] or [built_run(n, args.cyclic) for n in args.sizes]
    results = []
    print(
        f"{'run':24} {'questions':>9} {'images MB':>10} {'text MB':>8} {'inline MB':>10} {'export MB':>10} {'ratio':>6} {'TSV MB':>8} {'peak MB':>8} {'s':>6}"
    )
    for i, run in enumerate(runs):
        release = Path(args.out) / f"release-{i}"
        peak, seconds, output = export(run, release, args.vlmevalkit)
        r = {**measure(release, run), "peak_rss_mb": peak, "export_s": seconds}
        results.append(r)
        print(
            f"{run.name[:24]:24} {r['questions']:9,d} {r['unique_image_mb']:10.1f} {r['text_mb']:8.1f} {r['inline_mb']:10.1f} {r['export_mb']:10.1f} "
            f"{r['export_over_images']:6.3f} {r['tsv_mb']:8.1f} {peak:8.0f} {seconds:6.1f}"
        )
        for line in output.splitlines():
            if line.startswith("export: "):
                print(f"    {line}")
    small, large = results
    print(
        f"questions x{large['questions'] / small['questions']:.2f}, export peak memory x{large['peak_rss_mb'] / small['peak_rss_mb']:.2f}; "
        f"release over its distinct images {large['export_over_images']:.3f} (text included; limit {LIMIT}), "
        f"where one copy per row would need {large['inline_mb'] / large['unique_image_mb']:.1f}x"
    )
    figures = {
        "questions": large["questions"],
        "unique_image_mb": round(large["unique_image_mb"], 1),
        "export_mb": round(large["export_mb"], 1),
        "export_over_images": round(large["export_over_images"], 4),
        "peak_rss_mb": round(large["peak_rss_mb"]),
        "peak_rss_ratio": round(large["peak_rss_mb"] / small["peak_rss_mb"], 3),
        "questions_ratio": round(large["questions"] / small["questions"], 3),
        "text_mb": round(large["text_mb"], 1),
        "inline_mb": round(large["inline_mb"], 1),
        "export_s": round(large["export_s"], 1),
        "sizes": [r["questions"] for r in results],
        "cyclic_mc": large["cyclic_mc"],
    }
    print(json.dumps(figures))
    if large["export_over_images"] > LIMIT or small["export_over_images"] > LIMIT:
        sys.exit(1)


if __name__ == "__main__":
    main()
