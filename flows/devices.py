"""Which GPU an edit shard runs on: Ray's assignment, or a lease on one of this node's devices.

Two ways to spread the edit stage over several GPUs:

* **Ray** (``orchestration.task_runner: ray``, ``gpus_per_edit_task: 1``): Ray reserves a GPU
  per shard task and sets ``CUDA_VISIBLE_DEVICES`` in the worker process, so the shard sees
  its GPU as ``cuda:0``.
* **One node, threads or several flow runs** (``orchestration.gpu_devices: [0, 1, ...]``):
  a Prefect global concurrency limit bounds how many edit shards run at once, and each shard
  takes an exclusive file lock on one device index (``lease_device``) so two shards never share
  a GPU, even across processes on the node.

Either way the chosen device reaches the stage as ``ctx.options["device"]`` (``DEVICE_OPTION``),
e.g. ``"cuda:1"``; the edit stage hands it to its editors. It is also exported as
``REACTBENCH_DEVICE`` in Ray worker processes (one shard per process there, so the variable is
safe to read; in the thread runner read the option, never the environment).
"""

from __future__ import annotations

import fcntl
import os
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Sequence

DEVICE_ENV = "REACTBENCH_DEVICE"


def ray_gpu_ids() -> list[int]:
    """GPU ids Ray assigned to the current task ([] outside a Ray worker or without GPUs)."""
    try:
        import ray
    except ImportError:
        return []
    if not ray.is_initialized():
        return []
    try:
        if ray.get_runtime_context().worker.mode != ray.WORKER_MODE:
            return []
        return [int(i) for i in ray.get_gpu_ids()]
    except Exception:  # pragma: no cover - Ray internals differ between versions
        return []


def default_lock_dir() -> Path:
    return Path(tempfile.gettempdir()) / "reactbench-gpu-locks"


@contextmanager
def lease_device(
    devices: Sequence[int],
    lock_dir: str | Path | None = None,
    *,
    poll_s: float = 0.2,
    timeout_s: float | None = None,
) -> Iterator[int]:
    """Hold an exclusive lock on one free device index from ``devices`` while the block runs.

    Locks are ``flock`` files (one per device) in ``lock_dir``, so they exclude other threads
    and other processes on the same node, and vanish when a holder dies (no stale leases).
    Waits (polling) when every device is busy; ``timeout_s`` bounds that wait.
    """
    if not devices:
        raise ValueError("lease_device needs at least one device index (orchestration.gpu_devices)")
    folder = Path(lock_dir) if lock_dir else default_lock_dir()
    folder.mkdir(parents=True, exist_ok=True)
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        for dev in devices:
            fh = open(folder / f"gpu-{int(dev)}.lock", "a+")  # noqa: SIM115 - closed in finally
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                fh.close()
                continue
            try:
                yield int(dev)
                return
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)
                fh.close()
        if deadline is not None and time.monotonic() > deadline:
            raise TimeoutError(f"no free GPU among {list(devices)} after {timeout_s} s (locks in {folder})")
        time.sleep(poll_s)


def ray_device() -> str | None:
    """The device string for a shard running in a Ray worker that holds GPUs, else None.

    Ray narrows ``CUDA_VISIBLE_DEVICES`` to the assigned GPUs, so the first one is ``cuda:0``.
    """
    ids = ray_gpu_ids()
    if not ids:
        return None
    os.environ[DEVICE_ENV] = "cuda:0"
    return "cuda:0"
