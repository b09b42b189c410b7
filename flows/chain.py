"""The build chain, defined once for local and Prefect runs (``flows/runtime.py``, ``flows/prefect_flows.py``).

A build is, in this order:

1. the preflight (``tasks.tools.preflight.require_preflight``), once, when ``edit`` is among the
   stages: a config that cannot run stops here, before anything is written; then the model
   servers of the selected stages that will run (:func:`check_chain_endpoints`): a server that
   is down stops the build here too, before mine runs;
2. the run context (``flows.context.make_context``: the run directory and its ``config.yaml``);
3. the selected stages in pipeline order (``flows.stages.select_stages``), stopping at the first
   that fails, since later stages read its output;
4. the build report (``reports/build.html``, at ``storage.addresses.report_file("build")``) when
   every stage finished; a report that cannot be drawn is a warning, never a failed build;
5. the end hook (Prefect: the build summary artifact), after a failed stage too; then the
   failed stage's own exception is raised again.

What differs between the modes is passed in: how one stage runs (threads, or a Prefect subflow
with its task runner), what surrounds the stages (Prefect: the Ray session), where messages go.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from flows.config import BuildConfig
from flows.context import make_context
from flows.stages import get_stage, select_stages
from storage import addresses
from storage.fs import RunFS
from tasks.engine.base import RunContext
from tasks.engine.runner import StageSummary

if TYPE_CHECKING:
    from tasks.tools.preflight import PreflightReport

BUILD_REPORT = "build"

StageRun = Callable[[str, RunContext], StageSummary]


class BuildLog(Protocol):
    """Where the chain writes its messages: a ``logging.Logger``, or the Prefect flow run's logger."""

    def info(self, msg: str, *args: object) -> None: ...

    def warning(self, msg: str, *args: object) -> None: ...


@dataclass
class ChainResult:
    """What a build did: the summaries of the stages that finished, the stage that failed (name ->
    ``Class: message``), and the reports written (run-relative addresses)."""

    summaries: list[StageSummary] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    reports: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ChainMode:
    """What differs between a local and a Prefect build: how one stage runs (``run_one``), where
    messages go (``log``: ``info`` / ``warning``, default ``logging.getLogger("reactbench.build")``),
    what sees the passing preflight report (default: its build-time estimate logged at info),
    what surrounds the stages (Prefect: the Ray session) and what sees the result at the end."""

    run_one: StageRun
    log: BuildLog | None = None
    on_preflight: Callable[[PreflightReport], None] | None = None
    around_stages: Callable[[], AbstractContextManager[object]] = nullcontext
    on_end: Callable[[ChainResult], None] | None = None


def run_build_chain(
    config: BuildConfig, run_dir: str, stages: list[str] | None, mode: ChainMode, *, options: dict | None = None
) -> ChainResult:
    """Run the build chain (see the module docstring) the way ``mode`` says."""
    from tasks.tools.preflight import require_preflight

    log = mode.log if mode.log is not None else logging.getLogger("reactbench.build")
    names = select_stages(stages)
    report = require_preflight(config, names, run_dir)  # edit will run: stop before mine when it cannot
    if report is not None:
        (mode.on_preflight or (lambda r: _log_estimate(r, log)))(report)
    check_chain_endpoints(config, run_dir, names, options)
    ctx = make_context(config, run_dir, options)
    result = ChainResult()
    error: BaseException | None = None
    with mode.around_stages():
        for name in names:
            try:
                result.summaries.append(mode.run_one(name, ctx))
            except Exception as exc:
                result.failed[name] = f"{exc.__class__.__name__}: {exc}"
                error = exc
                break  # later stages read this one's output
    if error is None:
        result.reports = write_build_report(ctx.run, log)
    if mode.on_end is not None:
        mode.on_end(result)
    if error is not None:
        raise error
    return result


def check_chain_endpoints(config: BuildConfig, run_dir: str, names: list[str], options: dict | None) -> None:
    """The model servers of the stages this build will run, checked before it writes anything:
    a stage runs when it is not up to date, and so does every selected stage after it (it will
    read what that one writes)."""
    from tasks.engine.mllm import require_endpoints, server_configs
    from tasks.engine.runner import up_to_date

    stages = [get_stage(name) for name in names]
    servers = [server_configs(stage.model_endpoints(config)) for stage in stages]
    looking = RunContext(run=RunFS.open(run_dir), config=config, options=dict(options or {}))  # reads only
    runs = False
    for i, stage in enumerate(stages):
        if not any(servers[i:]):
            return
        runs = runs or not up_to_date(stage, looking)
        if servers[i] and runs:
            require_endpoints(servers[i])


def _log_estimate(report: PreflightReport, log: BuildLog) -> None:
    """The pending edits' GPU time (tasks/tools/estimate.py), when the edit stage has model editors."""
    if report.estimate is not None and report.estimate.models:
        log.info("\n".join(report.estimate.lines()))


def write_build_report(run: RunFS, log: BuildLog) -> list[str]:
    """The HTML build report, linked from the Prefect summary; returns ``[its address]``, or ``[]``
    (with a warning) when it cannot be drawn: the report is a convenience on top of the artifacts."""
    from tasks.release.report.write import write_report

    try:
        write_report(BUILD_REPORT, run)
    except Exception as exc:  # noqa: BLE001
        log.warning("build report not written: %s: %s", exc.__class__.__name__, exc)
        return []
    return [addresses.report_file(BUILD_REPORT)]
