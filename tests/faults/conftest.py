"""Fixtures of the fault tests: one finished demo build, shared (tests copy it before changing it)."""

from __future__ import annotations

from pathlib import Path

import pytest
from rebuild_helpers import build, demo_config


@pytest.fixture(scope="session")
def demo_run(sample_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished build of ``configs/demo.yaml`` (shard size 16) on the sample; never modified."""
    run = tmp_path_factory.mktemp("demo-run") / "run"
    build(demo_config(sample_dir), run)
    return run
