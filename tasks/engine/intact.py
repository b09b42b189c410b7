"""A command refuses to read a finished stage whose files are not the ones its markers recorded.

``status``, ``export``, ``eval``, ``audit`` and ``report`` read finished stages on their own,
outside a build. Before reading, each checks the stages it reads (:meth:`StageStore.finished_damage`:
one listing, then every part file's sha256, streamed and once per file per process) and stops
with one line naming the first file that differs and the command that recomputes it: a file
deleted, cut short or changed by a single byte is never read as another output.
"""

from __future__ import annotations

from collections.abc import Iterable

from storage.fs import RunFS
from storage.stage_store import StageStore
from tasks.engine.suggest import suggest

BUILD_STAGES: tuple[str, ...] = ("mine", "instruct", "edit", "qa", "review")


class DamagedInput(RuntimeError):
    """A finished stage a command reads has a missing, cut or changed file (one line naming it)."""


def require_intact(run: RunFS, stages: Iterable[str]) -> None:
    """Raise :class:`DamagedInput` for the first of ``stages`` (run-relative stage folders, e.g.
    ``qa`` or ``eval/rules-rules-v1``) whose finished files differ from their record; a stage not
    finished (or never run) is left to the reader, which says what is missing."""
    for stage in dict.fromkeys(stages):
        problems = StageStore(run, stage, {}).finished_damage()
        if problems:
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            again = (
                f"run `{suggest('build', '--run-dir', run.url)}` to recompute it"
                if stage in BUILD_STAGES
                else "run the command that wrote it again to recompute it"
            )
            raise DamagedInput(f"the {stage} stage's output is damaged in {run.url}: {problems[0]}{more}; {again}")
