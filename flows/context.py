"""What a run needs before any stage starts: its context (run directory + saved config) and the
terminal's progress callbacks. Shared by the local runtime and the Prefect flows, so neither
imports the other for it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from flows.config import BuildConfig, dump_config
from storage import addresses
from storage.fs import RunFS
from tasks.engine.base import RunContext
from tasks.engine.runner import ProgressFn

ProgressFactory = Callable[[str], ProgressFn | None]  # stage name -> its progress callback


def make_context(config: BuildConfig, run_dir: str, options: dict | None = None) -> RunContext:
    """Open the run directory and save the resolved config into it."""
    run = RunFS.open(run_dir)
    run.makedirs()
    run.write_text_atomic(addresses.CONFIG_FILE, dump_config(config))
    return RunContext(run=run, config=config, options=dict(options or {}))


# Progress callbacks of a CLI that runs the flows in its own process, by run directory URL. Flow
# parameters must be serialisable, so the terminal's progress bars travel beside them; a flow run on
# a worker finds no callback and reports through its progress artifact alone.
_PROGRESS: dict[str, ProgressFactory] = {}


@contextmanager
def watch_progress(run_dir: str, factory: ProgressFactory | None) -> Iterator[None]:
    """Show shard progress of flows run in this process for ``run_dir`` (e.g. rich bars in the CLI)."""
    if factory is None:
        yield
        return
    key = RunFS.open(run_dir).url
    _PROGRESS[key] = factory
    try:
        yield
    finally:
        _PROGRESS.pop(key, None)


def progress_for(run_url: str, stage: str) -> ProgressFn | None:
    """The progress callback registered for ``stage`` of the run at ``run_url``, if any."""
    factory = _PROGRESS.get(run_url)
    return factory(stage) if factory else None
