"""The stage contract: what every pipeline stage implements, independent of who runs it.

A stage plans its work as a list of shards (each a list of upstream rows or a small work
description), processes one shard at a time into a :class:`ShardResult`, and may finish with
stage-level work. Prefect, Ray or a plain thread pool only decide *where* ``process_shard``
runs (see ``tasks/engine/runner.py`` and ``flows/``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from prompts.config import MLLMConfig
from storage.fs import RunFS
from storage.image_store import ImageStore
from storage.schemas import ArtifactSchema
from storage.stage_store import ShardResult, StageStore
from tasks.engine.build_config import BuildConfig
from tasks.engine.suggest import suggest

T = TypeVar("T")  # the item type of a list split into shards

DEVICE_OPTION = "device"  # RunContext.options key: the device an orchestrator placed a shard on (e.g. cuda:1)

__all__ = ["DEVICE_OPTION", "RunContext", "Stage", "ShardResult", "StageInputError", "UpstreamMissing", "chunk"]


class StageInputError(RuntimeError):
    """What a stage reads is missing or unusable (a source folder, an upstream stage); the
    message says what to fix. The CLI prints it without a traceback."""


class UpstreamMissing(StageInputError):
    """A stage was asked to run before the stage it reads from finished (or after files of that
    finished stage went missing or changed: it must be recomputed first, not read as empty)."""


@dataclass
class RunContext:
    """Everything a stage needs: the run directory, the resolved config, the image store.

    ``config`` is the root pydantic config (``tasks.engine.build_config.BuildConfig``, loaded by
    ``flows.config``); stages read their own section of it, and the run-wide settings through the
    properties below.
    """

    run: RunFS
    config: BuildConfig
    options: dict[str, Any] = field(default_factory=dict)  # CLI overrides such as no_cache
    # The run a stage reads its inputs from when it is not ``run`` itself: an evaluation of a
    # read-only (published) run writes its answers into another folder and reads from here.
    inputs: RunFS | None = None

    @property
    def source(self) -> RunFS:
        """Where upstream artifacts and images are read (``inputs``, else the run itself)."""
        return self.inputs if self.inputs is not None else self.run

    @property
    def images(self) -> ImageStore:
        return ImageStore(self.source)

    @property
    def seed(self) -> int:
        return int(self.config.run.seed)

    @property
    def shard_size(self) -> int:
        """Items per shard (``run.shard_size``): the one place a stage's plan reads it."""
        return int(self.config.run.shard_size)


def chunk(items: list[T], size: int) -> list[list[T]]:
    """Split a list into shards of at most ``size`` items (at least one shard, maybe empty)."""
    size = max(1, int(size))
    if not items:
        return []
    return [items[i : i + size] for i in range(0, len(items), size)]


class Stage(ABC):
    """Base class of the five stages. Subclasses declare their name, outputs and upstream."""

    name: ClassVar[str]
    outputs: ClassVar[dict[str, ArtifactSchema]]
    upstream: ClassVar[tuple[str, ...]] = ()
    uses_gpu: ClassVar[bool] = False  # shards hold a GPU: the runner places them (tasks/engine/devices.py)

    def store(self, ctx: RunContext) -> StageStore:
        return StageStore(ctx.run, self.name, self.outputs)

    @abstractmethod
    def config_section(self, ctx: RunContext) -> dict[str, object]:
        """The part of the config that changes this stage's output (hashed into the stage key)."""

    def input_fingerprints(self, ctx: RunContext) -> dict[str, str]:
        """Fingerprints of what the stage reads; default: the upstream stages' output fingerprints."""
        fps = {}
        for up in self.upstream:
            manifest = StageStore(ctx.run, up, {}).read_manifest()
            if not manifest or manifest.get("status") != "complete":
                raise UpstreamMissing(
                    f"stage {self.name!r} reads {up!r}, which has not completed in {ctx.run.url}; "
                    f"run `{suggest(up, '--run-dir', ctx.run.url)}` (or `reactbench build`) first"
                )
            problems = StageStore(ctx.run, up, {}).finished_damage(manifest)  # one listing, then sha256s
            if problems:
                more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
                raise UpstreamMissing(
                    f"stage {self.name!r} reads {up!r}, whose finished output is damaged in {ctx.run.url}: {problems[0]}{more}; "
                    f"run `{suggest(up, '--run-dir', ctx.run.url)}` (or `reactbench build`) to recompute it first"
                )
            fps[up] = manifest["output_fingerprint"]
        return fps

    @abstractmethod
    def plan(self, ctx: RunContext) -> list[Any]:
        """The shards: a deterministic list of work units (same inputs -> same list)."""

    @abstractmethod
    def process_shard(self, ctx: RunContext, index: int, work: Any) -> ShardResult:
        """Turn one work unit into output rows and rejects. Must be deterministic and pure
        with respect to the run directory except for the image store and caches."""

    def model_endpoints(self, config: BuildConfig) -> list[MLLMConfig]:
        """The MLLM configs (``prompts.config.MLLMConfig``) whose servers this stage calls under
        ``config``; the runner checks them before the stage's shards run. Default: none."""
        return []

    def finalize(self, ctx: RunContext, summary: dict[str, Any]) -> dict[str, Any]:
        """Stage-level work after all shards (e.g. filling the review queue); returns extra manifest fields."""
        return {}
