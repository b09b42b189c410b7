"""Every script under benchmarks/ starts in the environment `make test` builds (its imports and
arguments parse); `make benchmarks` runs them in full. A script importing the test helpers as
`tests.<module>` would fail here: latex2sympy2 (via lmms-eval) installs a top-level `tests`
package that shadows the repository's folder."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(
    p.name for p in (ROOT / "benchmarks").glob("*.py") if not p.name.startswith("_")
)  # _name.py: a helper the scripts share


@pytest.mark.parametrize("script", SCRIPTS)
def test_script_starts(script: str) -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), "--help"],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        timeout=300,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "usage:" in proc.stdout


def test_no_script_imports_the_tests_package() -> None:
    for script in SCRIPTS:
        text = (ROOT / "benchmarks" / script).read_text(encoding="utf-8")
        assert not re.search(r"^\s*(from|import) tests[.\s]", text, re.M), (
            f"{script} imports `tests.`: load the helper by location"
        )


def test_make_benchmarks_runs_every_script() -> None:
    target = (ROOT / "Makefile").read_text(encoding="utf-8").split("\nbenchmarks:", 1)[1].split("\n\n", 1)[0]
    assert set(SCRIPTS) <= set(re.findall(r"benchmarks/(\w+\.py)", target))


def _paper_scale():
    """benchmarks/paper_scale.py loaded by location (benchmarks/ is not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("paper_scale", ROOT / "benchmarks" / "paper_scale.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["paper_scale"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def test_paper_scale_measures_each_child_alone_and_stops_one_over_the_cap(tmp_path: Path) -> None:
    ps = _paper_scale()
    grab = "import time; b = bytearray({n} * 2**20); b[::4096] = b'x' * len(b[::4096]); time.sleep({s})"
    small = ps.run_measured(
        [sys.executable, "-c", grab.format(n=50, s=0)], tmp_path / "a.log", cap_mb=4096, env=dict(os.environ)
    )
    big = ps.run_measured(
        [sys.executable, "-c", grab.format(n=300, s=0)], tmp_path / "b.log", cap_mb=4096, env=dict(os.environ)
    )
    assert small.rc == big.rc == 0 and not small.stopped
    assert 50 < small.rss_mb < 200 and 300 < big.rss_mb < 450  # each child's own peak, not the parent's
    assert big.cpu_s > 0
    over = ps.run_measured(
        [sys.executable, "-c", grab.format(n=300, s=60)], tmp_path / "c.log", cap_mb=200, env=dict(os.environ)
    )
    assert over.stopped and over.rc != 0 and over.wall_s < 30


def test_paper_scale_exponent_is_the_log_ratio_over_the_question_ratio() -> None:
    ps = _paper_scale()
    full, tenth = ps.SizeResult(1.0, 0, 0, 0), ps.SizeResult(0.1, 0, 0, 0)
    full.figures["shuffle"], tenth.figures["shuffle"] = {"questions": 50_000}, {"questions": 5_000}
    full.runs["export"], tenth.runs["export"] = ps.Measured(0, 1.0, 100.0, 500.0), ps.Measured(0, 1.0, 10.0, 500.0)
    full.runs["eval"], tenth.runs["eval"] = (
        ps.Measured(0, 1.0, 40.0, 300.0),
        ps.Measured(1, 1.0, 10.0, 300.0),
    )  # failed at a tenth: no exponent
    assert ps.exponents(full, tenth) == {"export": {"time": 1.0, "rss": 0.0}}


def test_paper_scale_tiny_run_ends_with_the_json_line(tmp_path: Path) -> None:
    """The whole script at a tiny size (no tenth): every command runs, the JSON line has the keys
    the issue names, and the exit status says whether a target was missed."""
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "paper_scale.py"),
            "--size",
            "0.005",
            "--skip-tenth",
            "--work",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        timeout=600,
        cwd=ROOT,
    )
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    keys = {
        "questions",
        "images",
        "build_s",
        "eval_s",
        "export_s",
        "audit_fraction",
        "export_mb",
        "unique_image_mb",
        "export_over_images",
        "peak_rss_mb",
        "exponent",
        "questions_per_task",
        "cyclic",
        "misses",
    }
    assert keys <= set(result), proc.stderr[-2000:]
    assert set(result["peak_rss_mb"]) == {
        "sample",
        "build",
        "status",
        "eval",
        "audit",
        "export",
        "report",
        "build_cyclic",
        "export_cyclic",
    }, proc.stderr[-2000:]
    assert result["failed"] == {}, proc.stderr[-2000:]
    assert result["checksum"]["files"] > 0 and result["checksum"]["mb"] > 0  # what status hashed
    assert result["questions"] == sum(result["questions_per_task"].values()) > 0
    assert result["questions_per_task"]["dense_counting"] > 0
    assert result["cyclic"]["questions"] > result["questions"]  # every rotation of each MC question
    assert 0 < result["unique_image_mb"] <= result["export_mb"] and result["audit_fraction"] is not None
    assert (proc.returncode == 1) == bool(result["misses"]), proc.stdout[-3000:]
    assert any(
        m.startswith("questions ") for m in result["misses"]
    )  # 0.005 of the paper's size is below 250 questions
