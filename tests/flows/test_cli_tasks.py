"""``reactbench tasks`` as a user runs it (a subprocess): every registered task and source with
the package that declared it, and a plugin whose entry point does not load named, exit 2."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILTIN = ["relational_erasure", "counterfactual_attribute", "alteration_tracing", "dense_counting"]


def _tasks(*args: str, pythonpath: str = "") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (pythonpath, str(ROOT)) if p)
    return subprocess.run(
        [sys.executable, "-m", "flows.entry", "tasks", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )


def test_lists_the_builtin_tasks_the_installed_plugins_and_the_sources() -> None:
    proc = _tasks("--json")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    tasks = {t["id"]: t for t in rows["tasks"]}
    assert list(tasks)[:4] == BUILTIN
    assert {tasks[t]["package"] for t in BUILTIN} == {"reactbench-pipeline"}
    assert tasks["dense_counting"]["sources"] == ["fsc147", "coco"] and tasks["dense_counting"]["short"] == "DC"
    assert abs(sum(t["share"] for t in tasks.values()) - 1.0) < 1e-3
    if importlib.util.find_spec("reactbench_spatial_relation") is not None:  # make test installs the example plugin
        sr = tasks["spatial_relation"]
        assert (sr["package"], sr["short"], sr["sources"]) == ("reactbench-spatial-relation", "SR", ["visual_genome"])
        assert {"instruct_rules", "eval_rules", "audit_checks"} <= set(sr["hooks"])
    sources = {s["name"]: s for s in rows["sources"]}
    assert list(sources)[:3] == ["visual_genome", "fsc147", "coco"]
    assert sources["coco"]["tasks"] == ["relational_erasure", "alteration_tracing", "dense_counting"]
    table = _tasks()
    assert table.returncode == 0 and "relational_erasure" in table.stdout and "reactbench-pipeline" in table.stdout


def test_a_plugin_whose_entry_point_fails_is_named(tmp_path: Path) -> None:
    """An installed distribution (its dist-info on the path) declaring a task module that is missing."""
    info = tmp_path / "broken_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[reactbench.tasks]\nbroken_task = no_such_module_here:TASK\n")
    proc = _tasks(pythonpath=str(tmp_path))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    said = " ".join((proc.stdout + proc.stderr).split())
    assert "broken_task" in said and "no_such_module_here" in said and "failed to load" in said, said
    assert (
        "declared by broken-plugin 0.1" in said
        and "pip uninstall broken-plugin" in said
        and "Traceback" not in proc.stderr
    ), said
