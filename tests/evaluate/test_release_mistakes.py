"""Issue 31.6 on the release side, through the real ``reactbench`` executable: an export without
the ``export`` extra, and a verified export or evaluation with no accepted item, are one line
naming the fix, a non-zero exit, and nothing written (the run directory byte for byte as it was,
no release folder, not even its parent)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from eval_helpers import write_run

from storage.parquet_io import table_from_rows
from storage.schemas import VERIFIED_EDITS, VERIFIED_QUESTIONS

ROOT = Path(__file__).resolve().parents[2]


def _cli(*args: str, without: str | None = None) -> subprocess.CompletedProcess:
    """``reactbench ARGS`` in a fresh interpreter; ``without``: a module taken away first, as an
    install without its extra lacks it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env["PYTHONPATH"] = str(ROOT)
    block = f"sys.modules[{without!r}] = None\n" if without else ""
    code = f"import sys\n{block}from flows.entry import main\nsys.argv = ['reactbench', *sys.argv[1:]]\nmain()\n"
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=180, cwd=ROOT
    )


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _lines(proc: subprocess.CompletedProcess) -> list[str]:
    return [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip()]


def test_export_without_the_export_extra_names_it_and_writes_nothing(tmp_path: Path) -> None:
    """Was ``ModuleNotFoundError: No module named 'datasets'`` with an empty ``releases/`` left behind."""
    run = tmp_path / "run"
    write_run(run, verified=False)
    before = _tree(run)
    proc = _cli(
        "export", "--run-dir", str(run), "--out", str(tmp_path / "releases" / "v1"), "--unverified", without="datasets"
    )
    lines = _lines(proc)
    assert proc.returncode == 2 and len(lines) == 1, lines
    assert (
        lines[0]
        == "reactbench export needs the `export` extra (no module named 'datasets'): pip install 'reactbench-pipeline[export]'; nothing was written"
    )
    assert not (tmp_path / "releases").exists()
    assert _tree(run) == before


@pytest.mark.parametrize(
    "command",
    [["export", "--out", "{tmp}/releases/v1"], ["eval", "--model", "rules:rules-v1"]],
    ids=["export", "eval"],
)
def test_a_verified_release_of_no_accepted_item_is_refused(tmp_path: Path, command: list[str]) -> None:
    """A review export holding no accepted question (nobody has reviewed yet): export wrote a
    release of ``{}`` and eval a metrics.json of nothing, both exiting 0."""
    from storage.fs import RunFS
    from tasks.review.export_set import write_export_set

    run = tmp_path / "run"
    write_run(run, verified=False)
    write_export_set(
        RunFS.open(str(run)),
        {
            "verified_edits": table_from_rows(VERIFIED_EDITS, []),
            "verified_questions": table_from_rows(VERIFIED_QUESTIONS, []),
        },
        0,
    )
    before = _tree(run)
    proc = _cli(*[c.replace("{tmp}", str(tmp_path)) for c in command], "--run-dir", str(run))
    lines = _lines(proc)
    assert proc.returncode == 2 and len(lines) == 1, lines
    assert "review/verified_questions: the review export holds no accepted question" in lines[0]
    assert (
        f"`reactbench review serve --run-dir {run}`" in lines[0]
        and f"`reactbench review export --run-dir {run}`" in lines[0]
    )
    assert "or pass --unverified" in lines[0]
    assert not (tmp_path / "releases").exists() and _tree(run) == before
