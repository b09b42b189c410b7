"""The layers hold at run time (issue 41): a demo build, and an eval of it, run under an import guard
(``tests/layer_guard.py``) that refuses any import of a ``tasks`` module made from code under
``storage/``, ``miners/``, ``prompts/`` or ``editors/``. The task registry lives in ``tasks/engine``;
the rooms below get what a task does from above. The static half is import-linter's contract
"The rooms below the stages never import tasks" (pyproject ``[tool.importlinter]``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from layer_guard import LOOKUP_MARK, MARK

if TYPE_CHECKING:
    from conftest import DemoBuild
    from guarded_cli import GuardedRun

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"


def _lookups(proc: subprocess.CompletedProcess) -> list[str]:
    marks = [line for line in proc.stderr.splitlines() if line.startswith(LOOKUP_MARK)]
    assert marks, proc.stderr
    return json.loads(marks[-1][len(LOOKUP_MARK) :])


@pytest.mark.slow
def test_a_demo_build_and_eval_import_no_task_module_from_a_lower_room(
    demo_build: DemoBuild, demo_eval: tuple[Path, GuardedRun]
) -> None:
    """The session's guarded demo build (``demo_build``, tests/conftest.py: ``reactbench build`` in a
    fresh interpreter under the guard, local threads) and the guarded eval of it (``demo_eval``)."""
    build, run = demo_build.build, demo_build.run
    assert build.violations == [], build.violations
    assert build.proc.returncode == 0, build.output()
    assert "(local orchestration)" in build.proc.stderr, build.proc.stderr[-3000:]
    assert (run / "qa" / "_manifest.json").is_file(), build.proc.stderr
    called = list(build.lookups)
    eval_run, evaluated = demo_eval
    assert evaluated.violations == [], evaluated.violations
    called += evaluated.lookups
    # No lower room calls the task registry's lookups: the stages hand every task's behaviour down.
    assert called == [], sorted(set(called))
    assert evaluated.proc.returncode == 0 and list((eval_run / "eval").glob("*/metrics.json")), evaluated.output()


# Code the guard must refuse, compiled as if it were storage/_probe.py (lines 4 and 8 import tasks).
PROBE = """
import importlib
try:
    import tasks.plugin_api
except ImportError as e:
    print(e)
try:
    importlib.import_module("tasks.engine.registry")
except ImportError as e:
    print(e)
"""


def test_the_guard_catches_a_lower_room_importing_a_task_module() -> None:
    """The guard itself: code under storage/ that imports a task module, statically or through
    importlib, is refused and recorded (so the test above cannot pass by watching nothing); the
    same import from elsewhere is allowed."""
    probe = str(ROOT / "storage" / "_probe.py")
    code = (
        "import layer_guard\n"
        "layer_guard.install()\n"
        f"exec(compile({PROBE!r}, {probe!r}, 'exec'), {{}})\n"
        "import tasks.engine.registry\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(TESTS)])}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    marks = [line for line in proc.stderr.splitlines() if line.startswith(MARK)]
    assert json.loads(marks[-1][len(MARK) :]) == [
        "storage/_probe.py:4 imports tasks.plugin_api",
        "storage/_probe.py:8 imports tasks.engine.registry",
    ]
    assert proc.stdout.count("layer guard: storage/_probe.py") == 2


# A lookup the watch must record, compiled as if it were prompts/_probe.py (no module of prompts/
# calls the registry any more, so the probe stands in for one that would).
LOOKUP_PROBE = """
from storage.task_spec import task_hook
task_hook("relational_erasure", "eval_rules")
"""


def test_the_lookup_watch_records_a_lower_room_calling_the_registry() -> None:
    """The registry-lookup watch itself: a lookup called from prompts/ is recorded (so the demo
    test cannot pass by watching nothing); the same lookup from tasks/ code is not."""
    probe = str(ROOT / "prompts" / "_probe.py")
    code = (
        "import layer_guard\n"
        "layer_guard.install()\n"
        "layer_guard._watch_lookups()\n"
        "import tasks.engine.registry\n"
        f"exec(compile({LOOKUP_PROBE!r}, {probe!r}, 'exec'), {{}})\n"
        f"exec(compile({LOOKUP_PROBE!r}, {str(ROOT / 'tasks' / '_probe.py')!r}, 'exec'), {{}})\n"
        "from tasks.engine.prompt_hooks import judge_rule\n"
        "judge_rule('relational_erasure')\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(TESTS)])}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert _lookups(proc) == ["prompts/_probe.py calls task_hook"]
