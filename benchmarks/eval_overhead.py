"""Per-call overhead of eval and instruct: prompt rendering, and what a CPU-only build imports.

In one run, on the demo config (``sample-data`` + ``configs/demo.yaml``: classical editor, offline
``rules`` backend) in a temporary folder:

1. ``reactbench build`` and ``reactbench eval --unverified --model rules:rules-v1`` in
   subprocesses, each reporting at exit whether ``torch`` was ever imported, its CPU seconds and
   its peak RSS (target: no torch; issue 30 measured ~1.7 CPU-s and ~730 MB for it);
2. the same figures for an interpreter that loads the CLI, with and without what the preflight
   ran before (``import torch; torch.cuda.is_available()``), side by side: what every CPU build paid;
3. every (question, mode) prompt of that eval rendered twice, side by side: through the product's
   ``prompts.spec.render`` (one compiled template per process) and through a new Jinja environment
   per call, the path ``render`` took before (the template loaded and compiled on every call).
   Both must give the same text.

    .venv/bin/python benchmarks/eval_overhead.py [--renders 3000] [--keep]

Ends with one JSON line: ``render_us_per_call_uncached``, ``render_us_per_call``,
``render_speedup``, ``cpu_build_imports_torch``, ``cpu_build_peak_rss_mb``, ``cpu_build_cpu_s``,
``eval_imports_torch``, ``eval_peak_rss_mb``, ``eval_cpu_s``, ``torch_import_rss_mb``,
``torch_import_cpu_s``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# Runs ``code`` (or the reactbench CLI with the given arguments) and prints, as the last stderr
# line, whether torch was imported, the CPU seconds and the peak RSS of this process.
_REPORT = """
import atexit, json, resource, sys
def _report():
    u = resource.getrusage(resource.RUSAGE_SELF)
    print("OVERHEAD=" + json.dumps({"torch": "torch" in sys.modules, "cpu_s": u.ru_utime + u.ru_stime, "peak_rss_mb": u.ru_maxrss / 1024}), file=sys.stderr)
atexit.register(_report)
"""
_CLI = (
    _REPORT
    + """
from flows.entry import main
sys.argv = ["reactbench", *sys.argv[1:]]
main()
"""
)


def measured(code: str, *args: str) -> dict[str, Any]:
    """Run ``code`` in a fresh interpreter; its torch flag, CPU seconds and peak RSS (MB)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    proc = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, cwd=ROOT, check=False
    )
    if proc.returncode != 0:
        raise SystemExit(
            f"{' '.join(args) or 'interpreter'} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
        )
    line = [x for x in proc.stderr.splitlines() if x.startswith("OVERHEAD=")][-1]
    return json.loads(line.split("=", 1)[1])


def render_per_call_env(spec: Any, context: dict[str, Any]) -> str:
    """The render path before issue 30: a new Jinja environment per call (same settings as
    prompts/spec.py), so the template file is read, parsed and compiled on every call."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(spec.folder)),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=False,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env.get_template(spec.template).render(**context).strip() + "\n"


def eval_prompts(run_dir: Path, limit: int) -> list[tuple[Any, dict[str, Any]]]:
    """(spec, context) of the eval's answering prompts, as the eval stage builds them."""
    from prompts.eval_prompts import answer_spec
    from storage.fs import RunFS
    from tasks.release.evaluate.answer import answer_context
    from tasks.release.items import edit_annotations, read_inputs

    questions, edits = read_inputs(RunFS.open(str(run_dir)), True)
    annotations = edit_annotations(questions, edits)
    out = []
    for q in questions:
        for mode in ("standard", "cot"):
            out.append(
                (
                    answer_spec(q["qtype"], mode, len(q["images"])),
                    answer_context(q, mode, annotations.get(q["edit_id"], {})),
                )
            )
    return (out * (1 + limit // max(1, len(out))))[:limit]


def per_call_us(fn: Any, prompts: list[tuple[Any, dict[str, Any]]]) -> tuple[float, list[str]]:
    start = time.perf_counter()
    texts = [fn(spec, ctx) for spec, ctx in prompts]
    return (time.perf_counter() - start) / len(prompts) * 1e6, texts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--renders", type=int, default=3000, help="prompts rendered by each path")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = ap.parse_args()
    import yaml

    from miners.sample_data import generate_sample
    from prompts.spec import render

    tmp = Path(tempfile.mkdtemp(prefix="reactbench-eval-overhead-"))
    try:
        generate_sample(tmp / "data", seed=0)
        cfg = yaml.safe_load((ROOT / "configs" / "demo.yaml").read_text())
        cfg["sources"] = {"visual_genome": str(tmp / "data" / "visual_genome"), "fsc147": str(tmp / "data" / "fsc147")}
        (tmp / "demo.yaml").write_text(yaml.safe_dump(cfg))
        run = tmp / "run"
        build = measured(_CLI, "build", "--config", str(tmp / "demo.yaml"), "--run-dir", str(run))
        ev = measured(_CLI, "eval", "--run-dir", str(run), "--model", "rules:rules-v1", "--unverified")
        bare = measured(_REPORT + "import flows.cli\n")
        with_torch = measured(
            _REPORT + "import flows.cli\nimport torch\ntorch.cuda.is_available()\n"
        )  # what the preflight ran

        prompts = eval_prompts(run, args.renders)
        render(*prompts[0])  # warm-up: imports, the first compile of each template
        render_per_call_env(*prompts[0])
        uncached_us, old = per_call_us(render_per_call_env, prompts)
        cached_us, new = per_call_us(render, prompts)
        if old != new:
            raise SystemExit("the cached render differs from a fresh environment's: a bug in prompts/spec.py")
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)

    torch_rss, torch_cpu = with_torch["peak_rss_mb"] - bare["peak_rss_mb"], with_torch["cpu_s"] - bare["cpu_s"]
    print(
        f"render, {len(prompts)} eval prompts: {uncached_us:,.0f} us/call with an environment per call, {cached_us:,.1f} us/call compiled once "
        f"({uncached_us / cached_us:,.0f}x)"
    )
    print(
        f"demo build (CPU, classical, rules): torch imported: {build['torch']}; {build['cpu_s']:.1f} CPU-s, peak RSS {build['peak_rss_mb']:.0f} MB"
    )
    print(
        f"demo eval (rules): torch imported: {ev['torch']}; {ev['cpu_s']:.1f} CPU-s, peak RSS {ev['peak_rss_mb']:.0f} MB"
    )
    print(
        f"the old preflight's torch probe on top of the CLI costs {torch_cpu:.1f} CPU-s and {torch_rss:.0f} MB here "
        f"({bare['peak_rss_mb']:.0f} -> {with_torch['peak_rss_mb']:.0f} MB)"
    )
    print(
        json.dumps(
            {
                "render_us_per_call_uncached": round(uncached_us, 1),
                "render_us_per_call": round(cached_us, 2),
                "render_speedup": round(uncached_us / cached_us, 1),
                "render_calls": len(prompts),
                "cpu_build_imports_torch": build["torch"],
                "cpu_build_peak_rss_mb": round(build["peak_rss_mb"], 1),
                "cpu_build_cpu_s": round(build["cpu_s"], 2),
                "eval_imports_torch": ev["torch"],
                "eval_peak_rss_mb": round(ev["peak_rss_mb"], 1),
                "eval_cpu_s": round(ev["cpu_s"], 2),
                "torch_import_rss_mb": round(torch_rss, 1),
                "torch_import_cpu_s": round(torch_cpu, 2),
            }
        )
    )


if __name__ == "__main__":
    main()
