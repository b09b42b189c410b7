"""Many ``reactbench`` command lines through the real entry point in one Python process.

Why: each CLI subprocess pays the interpreter and import start-up (2-4 s on the 2-core CI
machine); a test file of 45 one-line refusals spent minutes on it. Here one child process runs
``flows.entry.main`` once per command line, each in its own working folder with its own
``sys.argv``, and reports the exit status, stdout, stderr and seconds of every call. What is
checked is unchanged: the same entry point, the same exit statuses, the same printed lines.
Commands that start servers, threads or signal handlers belong in a subprocess of their own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_DRIVER = r"""
import json, os, sys, tempfile, time
from flows.entry import main

report = os.fdopen(os.dup(1), "w")  # the results go here; fds 1 and 2 are each call's files
results = []
for call in json.load(sys.stdin):
    os.chdir(call["cwd"])
    sys.argv = ["reactbench", *call["args"]]
    files = [tempfile.TemporaryFile(), tempfile.TemporaryFile()]
    saved = [os.dup(1), os.dup(2)]
    sys.stdout.flush(); sys.stderr.flush()
    os.dup2(files[0].fileno(), 1); os.dup2(files[1].fileno(), 2)  # what anything prints, logging included
    started = time.monotonic()
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # uncaught: printed as the executable would print it
        import traceback
        traceback.print_exc()
        code = 1
    seconds = time.monotonic() - started
    sys.stdout.flush(); sys.stderr.flush()
    os.dup2(saved[0], 1); os.dup2(saved[1], 2)
    os.close(saved[0]); os.close(saved[1])
    texts = []
    for f in files:
        f.seek(0)
        texts.append(f.read().decode("utf-8", "replace"))
        f.close()
    results.append({"rc": code, "stdout": texts[0], "stderr": texts[1], "seconds": seconds})
report.write(json.dumps(results))
report.flush()
"""


@dataclass(frozen=True)
class CliCall:
    args: list[str]
    cwd: Path


@dataclass(frozen=True)
class CliResult:
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    def lines(self) -> list[str]:
        """The non-blank lines printed on stdout and stderr together."""
        return [line for line in (self.stdout + self.stderr).splitlines() if line.strip()]


def run_cli_batch(calls: list[CliCall], timeout: float = 600) -> list[CliResult]:
    """Run every call through ``flows.entry.main`` in one child process, in order."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env.update(PYTHONPATH=str(ROOT), COLUMNS="80")
    payload = json.dumps([{"args": c.args, "cwd": str(c.cwd)} for c in calls])
    proc = subprocess.run(
        [sys.executable, "-c", _DRIVER],
        input=payload,
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        errors="replace",
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return [CliResult(r["rc"], r["stdout"], r["stderr"], r["seconds"]) for r in json.loads(proc.stdout)]
