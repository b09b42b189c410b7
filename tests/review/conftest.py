"""Fixtures of the review tests: run directories with a filled queue and a settable clock."""

from __future__ import annotations

from pathlib import Path

import pytest
from review_helpers import fill_queue, make_run

# The session-wide `chromium` and `postgres_url` fixtures are in tests/conftest.py (one of each
# per process: the Prefect server of tests/orchestration runs on that PostgreSQL server too).


class Clock:
    """A settable clock so lease expiry is tested without sleeping."""

    def __init__(self, t: float = 1_800_000_000.0):
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def filled_run(tmp_path: Path):
    """A run with 6 queued edits (2 tasks x 2 editors) and their questions."""
    run, edits, questions = make_run(tmp_path / "run", 6)
    summary = fill_queue(run)
    return run, summary.extra["queue_db"], edits, questions


@pytest.fixture(scope="session")
def shots_dir(artifacts_dir: Path) -> Path:
    out = artifacts_dir / "review"
    out.mkdir(parents=True, exist_ok=True)
    return out
