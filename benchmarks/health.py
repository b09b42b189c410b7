"""The benchmark's health at the demo's and at the paper's size (issue 40): trivial and blind
prior baselines, balance, duplicates and Table 2, and what the report costs.

Builds the demo (``sample-data`` + ``build --config configs/demo.yaml``) and a paper-size sample
and build exactly as ``benchmarks/paper_scale.py`` does at ``--size 1`` (its ``scaled_config``:
the demo config with the mine caps raised; one build, no tenth), then runs
``reactbench report health`` on each as its own measured child (``_child_rusage``: wall time,
CPU time, peak RSS of that command alone). ``--paper-run DIR`` reuses a finished paper-size run
(its sample and build are then not repeated).

Prints the two runs side by side and ends with one JSON line: ``trivial`` (per task and type,
the best trivial accuracy), ``blind_prior`` (targeted / control accuracy per task),
``yes_ratio``, ``letter_p``, ``duplicate_questions``, ``duplicate_images``, ``table2`` (ours /
paper questions per task), ``balanced`` (the demo built again with ``qa.balance_yes_no``: best
trivial accuracy per task and type, audit fraction), ``health_s`` and ``health_peak_rss_mb`` (paper size),
and ``demo`` (the same figures on the demo). Exits 1 when the paper-size report takes more
than 60 s or 2,048 MB, or the balanced demo has a trivial accuracy over 0.6 or an audit under 1.0.

Usage: python benchmarks/health.py [--work DIR] [--paper-run DIR] [--skip-paper]
(the paper-size sample and build take about 20 minutes on the 2-core development machine).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _child_rusage import Measured, run_measured  # noqa: E402  (sibling scripts, by file location)
from paper_scale import DC_PER_BIN, DEMO_VG_IMAGES, VG_FACTOR, scaled_config  # noqa: E402

TARGET_S = 60.0
TARGET_RSS_MB = 2048.0


def _exe() -> str:
    exe = Path(sys.executable).with_name("reactbench")
    return str(exe if exe.exists() else ROOT / ".venv" / "bin" / "reactbench")


def _env() -> dict[str, str]:
    extra = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), *extra]))


def _step(name: str, args: list[str], work: Path, say: Any, cap_mb: float = 8192.0) -> Measured:
    say(f"{name}: reactbench {' '.join(args)}")
    m = run_measured([_exe(), *args], work / f"{name}.log", cap_mb, _env())
    say(f"{name}: rc {m.rc}, {m.wall_s:.1f} s wall, {m.cpu_s:.1f} s CPU, peak {m.rss_mb:.0f} MB")
    if m.rc != 0:
        raise SystemExit(f"{name} failed (rc {m.rc}); log {work / f'{name}.log'}:\n{m.log[-3000:]}")
    return m


def build_demo(work: Path, say: Any, balanced: bool = False) -> Path:
    """The demo run (sample data + configs/demo.yaml); ``balanced``: with ``qa.balance_yes_no``."""
    import yaml

    sample = work / "demo_sample"
    name = "demo_balanced" if balanced else "demo"
    run = work / f"{name}_run"
    if not (sample / ".complete").exists():
        _step("demo_sample", ["sample-data", str(sample)], work, say)
        (sample / ".complete").touch()
    data = yaml.safe_load((ROOT / "configs" / "demo.yaml").read_text(encoding="utf-8"))
    data["sources"] = {"visual_genome": str(sample / "visual_genome"), "fsc147": str(sample / "fsc147")}
    if balanced:
        data.setdefault("qa", {})["balance_yes_no"] = True
    (work / f"{name}.yaml").write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    _step(f"{name}_build", ["build", "--config", str(work / f"{name}.yaml"), "--run-dir", str(run)], work, say)
    return run


def balanced_figures(work: Path, say: Any) -> dict[str, Any]:
    """The demo with ``qa.balance_yes_no``: best trivial accuracy per task and type, the worst of
    them, the yes-ratio and the audit's fraction (every added twin's gold checked against the truth)."""
    run = build_demo(work, say, balanced=True)
    h, _ = health(run, "demo_balanced", work, say)
    audit = _step("demo_balanced_audit", ["audit", "--run-dir", str(run)], work, say)
    fraction = json.loads(next(ln for ln in reversed(audit.log.splitlines()) if ln.startswith("{")))["fraction"]
    trivial = {k: v["accuracy"] for k, v in h["headline"]["trivial"].items()}
    yes_no = {k: v for k, v in trivial.items() if k.endswith("/YN")}
    return {
        "size": "demo",
        "questions": h["headline"]["questions"],
        "trivial": trivial,
        "best_trivial_yes_no": max(yes_no.values()) if yes_no else None,
        "best_trivial": max(trivial.values()) if trivial else None,
        "yes_ratio": h["headline"]["yes_ratio"],
        "audit_fraction": fraction,
    }


def build_paper(work: Path, say: Any) -> Path:
    """The paper-size run, as paper_scale.py builds it at --size 1 (shuffled MC)."""
    import yaml

    sample, run = work / "paper_sample", work / "paper_run"
    cfg, per_bin = scaled_config(sample, 1.0, cyclic=False)
    (work / "paper.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
    vg, fsc = round(DEMO_VG_IMAGES * VG_FACTOR), 30 + 5 * per_bin
    assert per_bin == DC_PER_BIN
    _step("paper_sample", ["sample-data", str(sample), "--vg-images", str(vg), "--fsc-images", str(fsc)], work, say)
    _step("paper_build", ["build", "--config", str(work / "paper.yaml"), "--run-dir", str(run)], work, say)
    return run


def health(run: Path, name: str, work: Path, say: Any) -> tuple[dict[str, Any], Measured]:
    """``report health`` on ``run``, measured alone; its headline (the JSON line) and full figures."""
    m = _step(f"{name}_health", ["report", "health", "--run-dir", str(run)], work, say)
    line = next(ln for ln in reversed(m.log.splitlines()) if ln.startswith("{"))
    figures = json.loads((run / "reports" / "health.json").read_text(encoding="utf-8"))
    return {"headline": json.loads(line), "figures": figures}, m


def summary(h: dict[str, Any]) -> dict[str, Any]:
    """The JSON line's keys from one report."""
    head = h["headline"]
    return {
        "questions": head["questions"],
        "trivial": {k: v["accuracy"] for k, v in head["trivial"].items()},
        "trivial_best": {k: v["best"] for k, v in head["trivial"].items()},
        "trivial_react_score": head["trivial_react_score"],
        "blind_prior": head["blind_prior"],
        "blind_prior_react_score": head["blind_prior_react_score"],
        "not_probing_prior": head["not_probing_prior"],
        "yes_ratio": head["yes_ratio"],
        "letter_p": head["letter_p"],
        "duplicate_questions": head["duplicate_questions"],
        "duplicate_images": head["duplicate_images"],
        "table2": {
            t: {"ours": v["questions"], "paper": v["paper_questions"], "ratio": v["questions_ratio"]}
            for t, v in h["figures"]["table2"]["tasks"].items()
        },
    }


def table(demo: dict[str, Any], paper: dict[str, Any] | None) -> str:
    """Demo and paper size side by side."""

    def fmt(v: Any) -> str:
        if v is None:
            return "n/a"
        if isinstance(v, float):
            return f"{v:.4g}"
        if isinstance(v, dict):
            return "/".join(fmt(x) for x in v.values())
        return str(v)

    rows = [("questions", "questions")]
    rows += [(f"trivial {k}", ("trivial", k)) for k in demo["trivial"]]
    rows += [(f"blind prior {t} (targeted/control)", ("blind_prior", t)) for t in demo["blind_prior"]]
    rows += [(k, k) for k in ("trivial_react_score", "blind_prior_react_score", "not_probing_prior", "yes_ratio")]
    rows += [(k, k) for k in ("letter_p", "duplicate_questions", "duplicate_images")]
    rows += [(f"table2 {t} (ours/paper/ratio)", ("table2", t)) for t in demo["table2"]]
    rows += [(k, k) for k in ("health_s", "health_cpu_s", "health_peak_rss_mb")]

    def get(d: dict[str, Any] | None, key: Any) -> Any:
        if d is None:
            return None
        if not isinstance(key, tuple):
            return d.get(key)
        v = d.get(key[0], {}).get(key[1])
        if key[0] == "blind_prior" and v is not None:
            return {"targeted": v.get("targeted"), "control": v.get("control")}  # the label's order
        if key[0] == "table2" and v is not None:
            return {"ours": v["ours"], "paper": v["paper"], "ratio": v["ratio"]}
        return v

    width = max(len(r[0]) for r in rows) + 2
    out = [f"{'figure':<{width}}{'demo':>24}{'paper size':>24}"]
    out += [f"{label:<{width}}{fmt(get(demo, key)):>24}{fmt(get(paper, key)):>24}" for label, key in rows]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--work", type=Path, default=None, help="keep samples, runs and logs here (default: a temporary folder)"
    )
    ap.add_argument(
        "--paper-run", type=Path, default=None, help="a finished paper-size run to reuse (no sample, no build)"
    )
    ap.add_argument("--skip-paper", action="store_true", help="the demo only (no paper-size figures)")
    args = ap.parse_args(argv)
    started = time.perf_counter()
    work = args.work or Path(tempfile.mkdtemp(prefix="health-"))
    work.mkdir(parents=True, exist_ok=True)

    def say(msg: str) -> None:
        print(f"{time.perf_counter() - started:7.1f}s {msg}", file=sys.stderr, flush=True)

    try:
        demo_h, demo_m = health(build_demo(work, say), "demo", work, say)
        demo = {**summary(demo_h), "health_s": round(demo_m.wall_s, 2), "health_cpu_s": round(demo_m.cpu_s, 2)}
        demo["health_peak_rss_mb"] = round(demo_m.rss_mb, 1)
        balanced = balanced_figures(work, say)
        paper = None
        if not args.skip_paper:
            paper_run = args.paper_run or build_paper(work, say)
            paper_h, paper_m = health(paper_run, "paper", work, say)
            paper = {**summary(paper_h), "health_s": round(paper_m.wall_s, 2), "health_cpu_s": round(paper_m.cpu_s, 2)}
            paper["health_peak_rss_mb"] = round(paper_m.rss_mb, 1)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    print(table(demo, paper))
    top = paper or demo
    result = {
        "size": "paper" if paper else "demo",
        **{k: top[k] for k in ("trivial", "blind_prior", "yes_ratio", "letter_p", "duplicate_questions")},
        **{k: top[k] for k in ("duplicate_images", "table2", "trivial_react_score", "blind_prior_react_score")},
        # The demo's figures with qa.balance_yes_no (target: best trivial <= 0.6 on every task and
        # type, audit 1.0)
        "balanced": balanced,
        "health_s": top["health_s"],
        "health_cpu_s": top["health_cpu_s"],
        "health_peak_rss_mb": top["health_peak_rss_mb"],
        "demo": demo,
        "total_s": round(time.perf_counter() - started, 1),
    }
    misses = []
    if paper and paper["health_s"] > TARGET_S:
        misses.append(f"health_s {paper['health_s']} > {TARGET_S:g}")
    if paper and paper["health_peak_rss_mb"] > TARGET_RSS_MB:
        misses.append(f"health_peak_rss_mb {paper['health_peak_rss_mb']} > {TARGET_RSS_MB:g}")
    if balanced["best_trivial"] is not None and balanced["best_trivial"] > 0.6:
        misses.append(f"balanced best_trivial {balanced['best_trivial']} > 0.6")
    if balanced["audit_fraction"] != 1.0:
        misses.append(f"balanced audit_fraction {balanced['audit_fraction']} != 1.0")
    for miss in misses:
        print(f"MISSED: {miss}")
    result["misses"] = misses
    print(json.dumps(result))
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
