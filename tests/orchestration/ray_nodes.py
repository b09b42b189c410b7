"""A Ray cluster of several real nodes on this machine (Ray's own ``ray.cluster_utils.Cluster``).

Each node is its own raylet with its own worker processes; ``kill`` ends every process of a node
at once, as a lost machine would. The head runs no tasks (0 CPUs), so the driver's node is never
the one killed; the other nodes declare GPUs (``num_gpus``: logical, nothing touches CUDA) and
get their own temporary and cache folders (``TMPDIR``, ``XDG_CACHE_HOME``, ``HF_HOME``,
``TORCH_HOME``), which their worker processes inherit.

The nodes start with the caller's environment minus ``PREFECT_*``: a Ray worker only reports to
a Prefect server when the build hands it the API URL (``flows.prefect_flows.ray_init_kwargs``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

NODE_ENV = ("TMPDIR", "XDG_CACHE_HOME", "HF_HOME", "TORCH_HOME")


@dataclass
class RayNode:
    name: str
    node: Any  # ray._private.node.Node
    tmp: Path
    cache: Path

    @property
    def node_id(self) -> str:
        return str(self.node.node_id)


@dataclass
class RayNodes:
    """``nodes`` worker nodes of ``gpus`` declared GPUs and ``cpus`` CPUs each, plus a task-less head."""

    nodes: int = 2
    gpus: int = 2
    cpus: int = 1
    pythonpath: list[str] = field(default_factory=list)
    root: Path | None = None
    cluster: Any = None
    members: list[RayNode] = field(default_factory=list)
    killed: list[RayNode] = field(default_factory=list)

    @property
    def address(self) -> str:
        return str(self.cluster.address)

    def start(self) -> RayNodes:
        from ray.cluster_utils import Cluster

        self.root = Path(tempfile.mkdtemp(prefix="rbn-", dir="/tmp"))  # short: Ray's socket paths have a length limit
        (self.root / "ray").mkdir()  # Ray notes the cluster's address there (RAY_TMPDIR)
        with _node_environment(self.pythonpath, {"RAY_TMPDIR": str(self.root)}):  # not the machine-wide /tmp/ray
            self.cluster = Cluster()
            self.cluster.add_node(
                num_cpus=0,
                num_gpus=0,
                include_dashboard=False,
                temp_dir=str(self.root / "head"),
                object_store_memory=80 * 1024 * 1024,
            )
        for i in range(self.nodes):
            name = f"node{i + 1}"
            tmp, cache = self.root / name / "tmp", self.root / name / "cache"
            tmp.mkdir(parents=True)
            cache.mkdir(parents=True)
            folders = {
                "RAY_TMPDIR": str(self.root),
                "TMPDIR": str(tmp),
                "XDG_CACHE_HOME": str(cache),
                "HF_HOME": str(cache / "hf"),
                "TORCH_HOME": str(cache / "torch"),
            }
            with _node_environment(self.pythonpath, folders):
                node = self.cluster.add_node(
                    num_cpus=self.cpus, num_gpus=self.gpus, object_store_memory=80 * 1024 * 1024
                )
            self.members.append(RayNode(name, node, tmp, cache))
        self.cluster.wait_for_nodes()
        return self

    def by_id(self, node_id: str) -> RayNode | None:
        return next((m for m in self.members if m.node_id == node_id), None)

    def kill(self, member: RayNode) -> None:
        """End every process of ``member`` at once (no graceful shutdown), as a lost machine."""
        self.cluster.remove_node(member.node, allow_graceful=False)
        self.members.remove(member)
        self.killed.append(member)

    def stop(self) -> None:
        import ray

        if ray.is_initialized():
            ray.shutdown()
        if self.cluster is not None:
            self.cluster.shutdown()
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> RayNodes:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: Any) -> None:
        self.stop()


@contextmanager
def _node_environment(pythonpath: list[str], folders: dict[str, str]) -> Iterator[None]:
    """The environment a node's processes start with (they copy it when spawned): no Prefect
    settings, Ray's telemetry and auth off, ``pythonpath`` first, the node's own folders."""
    saved = dict(os.environ)
    try:
        for key in [k for k in os.environ if k.startswith("PREFECT_")]:
            del os.environ[key]
        paths = [*pythonpath, *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]]
        os.environ.update(
            RAY_AUTH_MODE="disabled",
            RAY_USAGE_STATS_ENABLED="0",
            PYTHONPATH=os.pathsep.join(dict.fromkeys(paths)),
            **folders,
        )
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)
