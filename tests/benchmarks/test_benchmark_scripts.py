"""Every script under benchmarks/ starts in the environment `make test` builds (its imports and
arguments parse); `make benchmarks` runs them in full. A script importing the test helpers as
`tests.<module>` would fail here: latex2sympy2 (via lmms-eval) installs a top-level `tests`
package that shadows the repository's folder."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(p.name for p in (ROOT / "benchmarks").glob("*.py"))


@pytest.mark.parametrize("script", SCRIPTS)
def test_script_starts(script: str) -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), "--help"], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "usage:" in proc.stdout


def test_no_script_imports_the_tests_package() -> None:
    for script in SCRIPTS:
        text = (ROOT / "benchmarks" / script).read_text(encoding="utf-8")
        assert not re.search(r"^\s*(from|import) tests[.\s]", text, re.M), f"{script} imports `tests.`: load the helper by location"


def test_make_benchmarks_runs_every_script() -> None:
    target = (ROOT / "Makefile").read_text(encoding="utf-8").split("\nbenchmarks:", 1)[1].split("\n\n", 1)[0]
    assert set(SCRIPTS) <= set(re.findall(r"benchmarks/(\w+\.py)", target))
