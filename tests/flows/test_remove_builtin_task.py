"""Removing a built-in task is deleting its folder and its entry-point line (issue 35).

In a temporary copy of the package sources, one built-in task's folder
``tasks/builtin_tasks/<id>/`` and its ``reactbench.tasks`` line in pyproject.toml are deleted; the
copy gets the entry-point metadata its pyproject now declares (a ``dist-info`` ahead of the
installed one on ``sys.path``, exactly what reinstalling the copy would write), and
``reactbench build`` of the remaining three tasks runs there as a user runs it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CLI = str(Path(sys.executable).with_name("reactbench"))
PACKAGES = ("flows", "tasks", "editors", "prompts", "miners", "storage", "configs")
REMOVED = "counterfactual_attribute"  # the task with its own Visual Genome reads, dedup hook and prior

pytestmark = pytest.mark.slow


def write_dist_info(root: Path) -> None:
    """The installed metadata of the copy: name, version and the entry points of its pyproject."""
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    info = root / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    groups = project.get("entry-points", {})
    lines = []
    for group, eps in groups.items():
        lines.append(f"[{group}]")
        lines.extend(f"{name} = {value}" for name, value in eps.items())
        lines.append("")
    lines += ["[console_scripts]", *(f"{k} = {v}" for k, v in project.get("scripts", {}).items()), ""]
    (info / "entry_points.txt").write_text("\n".join(lines))


@pytest.fixture(scope="module")
def copy_without_task(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("three_tasks")
    for pkg in PACKAGES:
        shutil.copytree(ROOT / pkg, root / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.rmtree(root / "tasks" / "builtin_tasks" / REMOVED)
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    line = f'{REMOVED} = "tasks.builtin_tasks.{REMOVED}:TASK"\n'
    assert text.count(line) == 1, "the entry point of the task to remove is one line of pyproject.toml"
    (root / "pyproject.toml").write_text(text.replace(line, ""), encoding="utf-8")
    write_dist_info(root)
    return root


def _run(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env["PYTHONPATH"] = str(root)  # the copy ahead of the editable install (its code and its metadata)
    return subprocess.run([CLI, *args], capture_output=True, text=True, env=env, timeout=900, cwd=root)


def test_the_copy_registers_the_remaining_builtin_tasks(copy_without_task: Path) -> None:
    proc = _run(copy_without_task, "tasks", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    ids = {t["id"] for t in rows["tasks"]}
    assert {"relational_erasure", "alteration_tracing", "dense_counting"} <= ids
    assert REMOVED not in ids


def test_the_remaining_three_tasks_build(copy_without_task: Path, sample_dir: Path, tmp_path: Path) -> None:
    data = yaml.safe_load((ROOT / "configs" / "demo.yaml").read_text())
    remaining = [t for t in data["mine"]["tasks"] if t != REMOVED]
    assert len(remaining) == 3
    data["mine"]["tasks"] = remaining
    data["mine"].pop(REMOVED)
    data["sources"] = {"visual_genome": str(sample_dir / "visual_genome"), "fsc147": str(sample_dir / "fsc147")}
    config = tmp_path / "three.yaml"
    config.write_text(yaml.safe_dump(data))
    run_dir = tmp_path / "run"
    proc = _run(copy_without_task, "build", "--config", str(config), "--run-dir", str(run_dir))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    queued = {
        t
        for f in (run_dir / "review" / "queue").glob("*.parquet")
        for t in pq.read_table(f, columns=["task"]).column("task").to_pylist()
    }
    assert queued == set(remaining), queued
    audit = _run(copy_without_task, "audit", "--run-dir", str(run_dir))
    assert audit.returncode == 0, audit.stdout[-2000:] + audit.stderr[-2000:]
    summary = json.loads(audit.stdout.strip().splitlines()[-1])
    assert summary["fraction"] == 1.0 and set(summary["per_task"]) == set(remaining)
