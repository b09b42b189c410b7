"""A change to the ``rules`` backend's code must invalidate the items it answered.

Item keys hold the code version of the component (a hash of its source files), so a stored
instruction answered by the old rules code is never served after the code changed. Dropping the
code version from the key failed no test before this one. The change is real: the source tree is
copied, one rules function there answers differently, and builds run on that copy in a
subprocess (a hash of the copied files, as a user's upgrade would give).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("storage", "miners", "prompts", "editors", "tasks", "flows", "configs")
RULES = "prompts/instruct_rules.py"
OLD, NEW = "do not alter the background of the image.", "leave the background of the image as it is."
EVAL_RULES = "prompts/eval_rules.py"
EVAL_OLD, EVAL_NEW = 'return "Yes" if _prior_hit(q, ann) else "No"', 'return "No" if _prior_hit(q, ann) else "Yes"'


def _tree(dest: Path) -> Path:
    for name in PACKAGES:
        shutil.copytree(ROOT / name, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def _reactbench(tree: Path, *args: str) -> None:
    """The CLI of the copied tree, in a subprocess."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env["PYTHONPATH"] = str(tree)
    proc = subprocess.run([sys.executable, "-c", "from flows.entry import main; main()", *args], capture_output=True, text=True, env=env, cwd=tree, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _build(tree: Path, config: Path, run: Path, stages: str = "mine,instruct") -> None:
    _reactbench(tree, "build", "--config", str(config), "--run-dir", str(run), "--stages", stages, "--orchestrator", "local")


def _edit(tree: Path, path: str, old: str, new: str) -> None:
    source = tree / path
    assert old in source.read_text(), f"retarget this test: {path} no longer says {old!r}"
    source.write_text(source.read_text().replace(old, new))


def _instructions(run: Path) -> list[bytes]:
    return [p.read_bytes() for p in sorted((run / "instruct" / "instructions").glob("*.parquet"))]


@pytest.fixture
def config(sample_dir: Path, tmp_path: Path) -> Path:
    cfg = {
        "run": {"seed": 0, "shard_size": 8, "workers": 1},
        "sources": {"visual_genome": str(sample_dir / "visual_genome")},
        "mine": {"tasks": ["relational_erasure"],
                 "relational_erasure": {"n_min": 20, "theta": 0.2, "area_range": [0.003, 0.5], "images_per_pair": 2}},
        "mllm": {"backend": "rules", "model": "rules-v1"},
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_changed_rules_code_recomputes_the_items_it_answered(config: Path, tmp_path: Path) -> None:
    tree = _tree(tmp_path / "tree")
    run = tmp_path / "run"
    _build(tree, config, run)
    before = _instructions(run)

    _edit(tree, RULES, OLD, NEW)
    shutil.rmtree(run / "instruct")  # the stage runs again (as after any key change); its items may come from the store
    _build(tree, config, run)
    fresh = tmp_path / "fresh"
    _build(tree, config, fresh)

    assert _instructions(fresh) != before, "the changed rules code must change some instruction"
    assert _instructions(run) == _instructions(fresh), "instructions answered by the old rules code were reused"


def test_changed_rules_code_recomputes_the_evaluation_answers_it_gave(config: Path, tmp_path: Path) -> None:
    tree = _tree(tmp_path / "tree")
    run, fresh = tmp_path / "run", tmp_path / "fresh"
    _build(tree, config, run, "mine,instruct,edit,qa")
    shutil.copytree(run, fresh, ignore=shutil.ignore_patterns("reuse"))
    evaluate = ("eval", "--model", "rules:rules-v1", "--unverified", "--run-dir")
    _reactbench(tree, *evaluate, str(run))
    folder = next((run / "eval").iterdir()).relative_to(run)
    before = _answers(run / folder)

    _edit(tree, EVAL_RULES, EVAL_OLD, EVAL_NEW)
    shutil.rmtree(run / "eval")  # the stage runs again; its answers may come from the store
    _reactbench(tree, *evaluate, str(run))
    _reactbench(tree, *evaluate, str(fresh))
    assert _answers(fresh / folder) != before, "the changed rules code must change some answer"
    assert _answers(run / folder) == _answers(fresh / folder), "answers given by the old rules code were reused"


def _answers(folder: Path) -> list[bytes]:
    return [p.read_bytes() for p in sorted((folder / "answers").glob("*.parquet"))]
