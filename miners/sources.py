"""Sources by name: one :class:`SourceSpec` per annotation format, built-ins plus the
``reactbench.sources`` entry points.

Why one object: the mine stage should not know which datasets exist. It asks each configured
source which tasks it feeds, which files it reads (fingerprinted, so a replaced file re-mines)
and to mine; a new format is then one registration, not edits across the stage. Which tasks a
source feeds is the task registry's answer (the tasks whose ``TaskSpec.miners`` name the source),
given by the mine stage (``tasks.stages.mine.fed_tasks``), which also hands the source the
requested tasks' miners: a new task on an existing source is one registration too. A third-party
package declares, in its own pyproject::

    [project.entry-points."reactbench.sources"]
    my-format = "my_pkg.source:SPEC"

and sets ``sources.other: {my-format: <its setting>}`` in the run config. Built-ins are named by
import string, so listing them imports no reader; the lookup is the one editors and tasks use
(``storage.plugins.PluginRegistry``: same order, same errors).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from storage.plugins import PluginRegistry, instance_check
from storage.task_spec import all_tasks

if TYPE_CHECKING:
    from miners.config import MineSettings
    from miners.dispatch import TaskMiner
    from miners.result import MineResult
    from storage.task_spec import TaskSpec

ENTRY_POINT_GROUP = "reactbench.sources"

# What a source can yield; the miners' canonical rows are built from these.
YIELDS = frozenset({"images", "objects", "relations", "attributes", "points"})

BUILTIN: dict[str, str] = {  # order matters: it is the order of the mine stage's work units (and shards)
    "visual_genome": "miners.mine:VISUAL_GENOME",
    "fsc147": "miners.mine:FSC147",
    "coco": "miners.coco:COCO",
}

Progress = Callable[[str, int], None]


class SourceError(ValueError):
    """An unknown source name, or an entry point that does not give a :class:`SourceSpec`."""


@dataclass(frozen=True)
class SourceSpec:
    """Everything the mine stage needs to know about one annotation format.

    ``setting`` is the value of ``sources.<name>`` (a folder or a file, as the source documents
    it in ``setting_help``). ``files`` lists every annotation file read for ``tasks`` (their size
    and time key the stage, so editing one re-mines); ``required`` those mining cannot start
    without. ``mine(setting, config, seed, progress, miners)`` returns candidates, statistics and
    rejects: it reads the files once and passes ``miners`` (the requested tasks' miners for this
    source, resolved by the stage: :class:`miners.dispatch.TaskMiner`) to
    ``miners.dispatch.run_miners``. A ``mine`` with four parameters (plugin API 2.1) still works:
    it is handed no miners and finds them with ``miners.dispatch.miner_specs``. ``manifest`` is
    what the mine manifest reports for this source beyond counts.

    What the source feeds is derived by the stage (``tasks.stages.mine.fed_tasks``): the
    registered tasks whose spec has a miner for this source, plus ``own_tasks``: tasks this
    source's ``mine`` produces by itself (a new format for an existing task whose spec names no
    miner for it).
    """

    name: str
    format: str
    yields: frozenset[str]
    setting_help: str
    files: Callable[[str, MineSettings], list[str]]
    required: Callable[[str, MineSettings], list[str]]
    mine: Callable[..., MineResult]
    manifest: Callable[[MineResult], dict[str, Any]]
    images_key: str = "images"  # summary key holding the number of images read (the shard's rows_in)
    own_tasks: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        unknown = set(self.yields) - YIELDS
        if unknown:
            raise SourceError(f"source {self.name!r}: unknown yields {sorted(unknown)}; choose from {sorted(YIELDS)}")

    def fed_by(self, specs: Mapping[str, TaskSpec]) -> tuple[str, ...]:
        """The tasks among ``specs`` this source feeds, in their order: those whose spec has a
        miner for it, then ``own_tasks``. The mine stage passes the registry's specs
        (``tasks.stages.mine.fed_tasks``)."""
        fed = [tid for tid, spec in specs.items() if spec.miners.get(self.name)]
        return tuple(dict.fromkeys([*fed, *self.own_tasks]))

    @property
    def tasks(self) -> tuple[str, ...]:
        """Compatibility (plugin API 2.1): :meth:`fed_by` the installed task registry."""
        return self.fed_by(all_tasks())

    def run(
        self, setting: str, config: MineSettings, seed: int, progress: Progress | None, miners: Sequence[TaskMiner]
    ) -> MineResult:
        """Call ``mine`` with the miners the stage resolved, or without them for a ``mine`` that
        takes four parameters (it looks them up itself)."""
        if _takes_miners(self.mine):
            return self.mine(setting, config, seed, progress, miners)
        return self.mine(setting, config, seed, progress)


def _takes_miners(mine: Callable[..., MineResult]) -> bool:
    """Whether ``mine`` accepts a fifth positional argument (the plugin API 2.2 signature)."""
    params = list(inspect.signature(mine).parameters.values())
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return True
    return len([p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]) >= 5


REGISTRY: PluginRegistry[SourceSpec] = PluginRegistry(
    kind="source",
    group=ENTRY_POINT_GROUP,
    error=SourceError,
    check=instance_check(SourceSpec, SourceError, "source"),
    builtin=BUILTIN,
)
_EXTRA = REGISTRY.registered  # the sources registered in this process (tests clear theirs)


def register(spec: SourceSpec) -> SourceSpec:
    """Register a source in this process (tests, notebooks); entry points are the durable way."""
    return REGISTRY.register(spec.name, spec)


def available() -> list[str]:
    """Every source name, built-ins first in their fixed order, then the others sorted."""
    return REGISTRY.names()


def source_spec(name: str) -> SourceSpec:
    """The spec registered under ``name``; unknown names list what exists."""
    return REGISTRY.get(name)
