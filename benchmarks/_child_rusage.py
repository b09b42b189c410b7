"""Measure one command alone: its exit status, wall and CPU time and peak resident memory.

Why a launcher: Linux folds the spawning process's peak resident size into a child's
``ru_maxrss`` when the child execs (the old address space's high-water mark is kept, even for a
vfork-style spawn), so a command started straight from a benchmark that has read a few tables,
or from pytest, reports at least their peak. :func:`run_measured` therefore starts a fresh
small interpreter (this file run as a script) which starts the command, watches it, reaps it
with ``os.wait4`` and prints one JSON line.

Shared by ``benchmarks/paper_scale.py`` and ``benchmarks/release_size.py``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Measured:
    """One child command: its exit status, wall and CPU seconds, peak RSS, and whether it was stopped at the cap."""

    rc: int
    wall_s: float
    cpu_s: float
    rss_mb: float
    stopped: bool = False
    log: str = ""


def _rss_now_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def run_measured(argv: list[str], log: Path, cap_mb: float, env: dict[str, str]) -> Measured:
    """Run ``argv`` (in the repository root) alone and measure it through a fresh small launcher
    (:func:`measure_child`; see the module doc); its output goes to ``log``, which is returned too."""
    started = time.perf_counter()
    spec = json.dumps({"argv": argv, "log": str(log), "cap_mb": cap_mb})
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), spec], env=env, cwd=ROOT, capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise RuntimeError(f"the measuring launcher failed ({proc.returncode}): {proc.stderr[-2000:]}")
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    text = log.read_text(encoding="utf-8", errors="replace")
    return Measured(got["rc"], time.perf_counter() - started, got["cpu_s"], got["rss_mb"], got["stopped"], text)


def measure_child(argv: list[str], log: str, cap_mb: float) -> dict[str, Any]:
    """In the launcher: run ``argv`` with its output in ``log``; kill it once its resident memory
    passes ``cap_mb`` (SIGKILL: on SIGTERM a command finishes its running shards, and an export
    went on from 14 to 15.8 GB that way); its return code, CPU seconds, peak RSS (``os.wait4``,
    which alone reaps it, so a signal never reaches a reused pid) and whether it was stopped."""
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    try:  # should the machine run out of memory anyway, the kernel takes this command, not a neighbour's work
        Path(f"/proc/{proc.pid}/oom_score_adj").write_text("1000", encoding="ascii")
    except OSError:
        pass
    stopped = False
    while True:
        pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if not stopped and _rss_now_mb(proc.pid) > cap_mb:
            stopped = True
            os.kill(proc.pid, signal.SIGKILL)
        time.sleep(0.1)
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: keep Popen from waiting again
    return {
        "rc": proc.returncode,
        "cpu_s": ru.ru_utime + ru.ru_stime,
        "rss_mb": ru.ru_maxrss / 1024,
        "stopped": stopped,
    }


if __name__ == "__main__":
    spec = json.loads(sys.argv[1])
    print(json.dumps(measure_child(spec["argv"], spec["log"], spec["cap_mb"])))
