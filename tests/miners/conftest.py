"""Fixtures of the miner tests: the sample's two roots and the mined sample (built once)."""

from __future__ import annotations

from pathlib import Path

import pytest
from mining_helpers import mine_config


@pytest.fixture(scope="session")
def vg_root(sample_dir: Path) -> str:
    return str(sample_dir / "visual_genome")


@pytest.fixture(scope="session")
def fsc_root(sample_dir: Path) -> str:
    return str(sample_dir / "fsc147")


@pytest.fixture(scope="session")
def mined_vg(vg_root: str):
    """RE (with controls), CA and AT mined from the sample with the demo thresholds."""
    from miners.mine import mine_visual_genome

    return mine_visual_genome(vg_root, mine_config(control=True), seed=0)
