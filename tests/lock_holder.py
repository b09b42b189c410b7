"""Another process holding a run directory's lease, for the lock tests of several areas."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@contextmanager
def held_by_another_process(
    root: Path, owner: str = "reactbench build", **lock_options: float
) -> Iterator[subprocess.Popen]:
    """A live process holding the lease of ``root``; killed on exit (its lease file stays behind, stale).

    ``lock_options`` go to its ``RunLock`` (``ttl_s``, ``heartbeat_s``: a short lease for tests
    that let it lapse)."""
    code = (
        "import time; from storage.fs import RunFS; from storage.run_lock import RunLock\n"
        f"RunLock(RunFS.open({str(root)!r}), {owner!r}, **{lock_options!r}).acquire(); print('held', flush=True); time.sleep(120)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        yield proc
    finally:
        proc.kill()
        proc.wait()
