"""``reactbench`` as a user runs it, in a fresh interpreter under the run-time layer guard
(``tests/layer_guard.py``), reporting what the tests of that one command check: the guard's
refusals, the registry lookups made from a lower room, and whether torch was ever imported.

One guarded demo build (and one guarded eval of a copy of it) serves several test files through
the session fixtures ``demo_build`` and ``demo_eval`` (tests/conftest.py): the layer tests
(tests/flows/test_runtime_layers.py), the CPU-only test (tests/flows/test_cpu_build_no_torch.py),
and the tests that only read a finished demo build (tests/faults, tests/qa/test_audit.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from layer_guard import LOOKUP_MARK, MARK

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
TORCH_MARK = "TORCH_LOADED="

# Runs the real CLI in this interpreter under the guard; at exit (a module once imported stays in
# sys.modules) it prints, as marked stderr lines, the guard's refusals, the lookups and torch's presence.
_WRAPPER = (
    "import atexit, json, sys\n"
    f"atexit.register(lambda: print({TORCH_MARK!r} + json.dumps('torch' in sys.modules), file=sys.stderr))\n"
    "import layer_guard\n"
    "layer_guard.run_cli(sys.argv[1:])\n"
)


@dataclass(frozen=True)
class GuardedRun:
    """One ``reactbench`` command run under the guard, and what it reported."""

    proc: subprocess.CompletedProcess
    violations: list[str]  # tasks imports refused from a lower room
    lookups: list[str]  # "<file> calls <lookup>" for each registry lookup from a lower room
    torch_loaded: bool | None  # None: the command printed no flag

    def output(self) -> str:
        return self.proc.stdout + self.proc.stderr


def _marked(stderr: str, mark: str) -> object | None:
    lines = [line for line in stderr.splitlines() if line.startswith(mark)]
    return json.loads(lines[-1][len(mark) :]) if lines else None


def guarded(*args: str, cwd: Path = ROOT) -> GuardedRun:
    """``reactbench <args>`` in a fresh interpreter with the layer guard installed (no Prefect API)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(TESTS), env.get("PYTHONPATH", "")])
    proc = subprocess.run(
        [sys.executable, "-c", _WRAPPER, *args], capture_output=True, text=True, env=env, timeout=600, cwd=cwd
    )
    violations = _marked(proc.stderr, MARK)
    assert violations is not None, proc.stdout + proc.stderr
    lookups = _marked(proc.stderr, LOOKUP_MARK)
    assert lookups is not None, proc.stderr
    torch_loaded = _marked(proc.stderr, TORCH_MARK)
    return GuardedRun(proc, list(violations), list(lookups), None if torch_loaded is None else bool(torch_loaded))
