"""One source, many tasks: a source reads its files once, then hands its scan to the miner of each
requested task that can be mined from it (``TaskSpec.miners[<source name>]``).

The miner contract (also in ``storage/task_spec.py``, :class:`~storage.task_spec.TaskSpec`)::

    def miner(job: MineJob) -> None

Which miners run is decided above this room: the mine stage resolves the requested tasks'
miners for a source (``tasks.stages.mine.task_miners``, a :class:`TaskMiner` each, in benchmark order) and hands
them to the source's ``mine``, which passes them to :func:`run_miners`; nothing here looks a task
up. :func:`miner_specs` is the compatibility path for a third-party source whose ``mine`` takes
four parameters (plugin API 2.1) and so is handed none: it asks the installed task registry.

A miner reads ``job.scan`` (and ``job.rows`` to build candidate rows), adds its selection with
``job.result.add(selection)``, may set ``job.result.pair_table`` / ``attribute_table`` and put
counts into ``job.result.summary``, and must honour ``job.candidates`` (False: statistics only).
It keys every seeded choice and row id on ``job.task``, never on a literal, and writes
``job.task`` into the rows' ``task`` column.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from miners.extend import keeping_first, previous_selection
from storage.task_spec import all_tasks

if TYPE_CHECKING:
    from miners.config import MineSettings
    from miners.result import MineResult


@dataclass(frozen=True)
class MineJob:
    """What a task's miner gets: one task on one source's scan.

    ``task``: the task id (``spec.id``): the rows' ``task`` column and the key of every seeded choice.
    ``source``: the source name (``visual_genome``, ``coco``, ``fsc147``, or a third-party one).
    ``scan``: what the source read, one object shared by every task mined from it:
      - ``visual_genome`` and ``coco``: a :class:`miners.vg_scan.Scan`: ``images`` (id ->
        ``ImageInfo(width, height, url)``), ``names.names`` (class names by class id),
        ``predicates.names`` (canonical predicate names by predicate id), ``attributes.names``;
        columns as numpy arrays: ``objects`` (``img, oid, nid, x, y, w, h, valid``),
        ``relations`` (``img, rid, pid, s_oid, s_nid, sx, sy, sw, sh, o_oid, o_nid, ox, oy, ow,
        oh, valid``: one row per relationship, subject ``s_*`` and object ``o_*`` with their
        object ids, class ids and boxes; None when no requested task reads relationships),
        ``instances`` / ``annotations`` (attributes.json, when read). COCO's ``relations`` are
        co-occurrence links (predicate ``with``), not scene facts.
      - ``fsc147``: a :class:`miners.fsc147.FSCData`.
    ``rows``: the source's candidate-row builder (``VGRows`` / ``CocoRows``: ``image_path(iid,
      sel)``, ``row(task, variant, iid, path, target=..., ...)``, ``index`` per image); None for
      FSC147 and when ``candidates`` is False.
    ``params``: the validated ``mine.<task>`` section (``config.params_for(task)``).
    ``control``: whether to emit control variants (``config.control_for(task)``).
    ``config``: the whole ``mine`` section; ``seed``: the run seed.
    ``result``: the source's :class:`miners.result.MineResult`, shared by the tasks mined from it.
    ``candidates``: False when only the statistics are wanted.
    """

    task: str
    source: str
    scan: Any
    rows: Any
    params: Any
    control: bool
    config: MineSettings
    seed: int
    result: MineResult
    candidates: bool = True


@dataclass(frozen=True)
class TaskMiner:
    """One requested task's miner for one source, resolved by the task room and handed down.

    ``mine``: the task's ``TaskSpec.miners[<source>]``, loaded and checked (``miner(job)``).
    ``reads``: the source's optional files the task needs (Visual Genome: its ``vg_reads`` hook).
    """

    task: str
    mine: Callable[[MineJob], None]
    reads: tuple[str, ...] = ()


def miner_specs(source: str, tasks: tuple[str, ...] | list[str]) -> list[TaskMiner]:
    """The requested tasks' miners for ``source`` from the installed task registry, in benchmark
    order: for a source whose ``mine`` is handed no miners (four parameters, plugin API 2.1)."""
    wanted = set(tasks)
    return [
        TaskMiner(tid, spec.miner(source), tuple(spec.hook("vg_reads")) if spec.has("vg_reads") else ())
        for tid, spec in all_tasks().items()
        if tid in wanted and spec.miners.get(source)
    ]


def requested_miners(source: str, config: MineSettings, miners: Sequence[TaskMiner] | None) -> Sequence[TaskMiner]:
    """The miners a source's ``mine`` was handed, or, for a caller that passed none (a script, a
    test, a 2.1 source), the requested tasks' miners from the installed registry."""
    return miner_specs(source, config.tasks) if miners is None else miners


def run_miners(
    source: str,
    miners: Sequence[TaskMiner],
    scan: Any,
    rows: Any,
    config: MineSettings,
    seed: int,
    result: MineResult,
    candidates: bool = True,
) -> None:
    """Call each task's miner for ``source`` on the one scan (see the module docstring); with
    ``mine.extend_from`` set, each miner's seeded orders put the previous selection first."""
    previous = previous_selection(config.extend_from) if config.extend_from else {}
    for miner in miners:
        with keeping_first(previous.get((miner.task, source), frozenset())):
            miner.mine(
                MineJob(
                    task=miner.task,
                    source=source,
                    scan=scan,
                    rows=rows,
                    params=config.params_for(miner.task),
                    control=config.control_for(miner.task),
                    config=config,
                    seed=seed,
                    result=result,
                    candidates=candidates,
                )
            )
