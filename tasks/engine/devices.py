"""Which GPU a shard runs on: Ray's assignment, or a lease on one of this node's devices.

Placement belongs to the runner (``tasks.engine.runner``): it works the same in local, Prefect and Ray
modes for every stage that declares ``uses_gpu = True`` (the edit stage). Two ways to spread
such a stage over several GPUs:

* **Ray** (``orchestration.task_runner: ray``, ``gpus_per_edit_task: 1``): Ray reserves a GPU
  per shard task and sets ``CUDA_VISIBLE_DEVICES`` in the worker process, so the shard sees
  its GPU as ``cuda:0``.
* **One node, threads or several flow runs** (``orchestration.gpu_devices: [0, 1, ...]``):
  each shard takes an exclusive file lock on one device index (``lease_device``) so two shards
  never share a GPU, even across processes on the node; in Prefect mode a global concurrency
  limit (``orchestration.gpu_concurrency_limit``) may bound them further (the flows pass it to
  the runner as the ``gpu_slot``).

Either way the chosen device reaches the stage as ``ctx.options["device"]`` (``DEVICE_OPTION``),
e.g. ``"cuda:1"``; the edit stage hands it to its editors. It is also exported as
``REACTBENCH_DEVICE`` in Ray worker processes (one shard per process there, so the variable is
safe to read; in the thread runner read the option, never the environment).

Where a GPU shard ran (node and GPU) is recorded by ``tasks.engine.placement``: an attempt record when it
starts (``shard_placement`` with ``shard``) and the ``placement`` of its completion marker.
"""

from __future__ import annotations

import fcntl
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import replace
from pathlib import Path

from tasks.engine.base import DEVICE_OPTION, RunContext, Stage
from tasks.engine.placement import PLACEMENT_OPTION, current_placement, record_attempt

DEVICE_ENV = "REACTBENCH_DEVICE"
GpuSlot = Callable[[], AbstractContextManager[object]]  # e.g. a Prefect global-concurrency slot


def ray_gpu_ids() -> list[int]:
    """GPU ids Ray assigned to the current task ([] outside a Ray worker or without GPUs).

    Looks at an already imported ``ray`` only: a Ray worker has imported it, and a local run
    must not pay (or need) the import.
    """
    ray = sys.modules.get("ray")
    if ray is None or not hasattr(ray, "is_initialized") or not ray.is_initialized():
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


@contextmanager
def shard_placement(
    stage: Stage, ctx: RunContext, gpu_slot: GpuSlot | None = None, shard: int | None = None
) -> Iterator[RunContext]:
    """Place one shard of ``stage``: a Ray-assigned GPU, or a slot plus a leased device on this node.

    Yields the context the shard runs with; a chosen device is in ``ctx.options["device"]`` and
    the node and GPU in ``ctx.options["placement"]``. With ``shard`` (its index) the start is
    recorded in the stage's attempt records. Stages without ``uses_gpu`` run as they are.
    """
    if not getattr(stage, "uses_gpu", False):
        yield ctx
        return
    device = ray_device()
    if device is not None:
        yield _placed(stage, ctx, shard, device, ray_gpu_ids())
        return
    orch = getattr(ctx.config, "orchestration", None)
    devices = tuple(getattr(orch, "gpu_devices", ()) or ())
    with gpu_slot() if gpu_slot else nullcontext():
        if devices:
            with lease_device(devices, getattr(orch, "device_lock_dir", None)) as index:
                yield _placed(stage, ctx, shard, f"cuda:{index}", [index])
        else:
            yield _placed(stage, ctx, shard, None, [])


def _placed(stage: Stage, ctx: RunContext, shard: int | None, device: str | None, gpus: list[int]) -> RunContext:
    placement = current_placement(device, gpus)
    if shard is not None:
        record_attempt(ctx.run, stage.name, shard, placement)
    options = {**ctx.options, PLACEMENT_OPTION: placement}
    if device is not None:
        options[DEVICE_OPTION] = device
    return replace(ctx, options=options)
