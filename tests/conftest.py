"""Fixtures shared by every test package: the generated sample data (built once per session)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# No test may reach a model hub or write under the home folder.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts"


@pytest.fixture(scope="session")
def sample_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled sample data (Visual Genome + FSC147 formats), generated once per session."""
    from miners.sample_data import generate_sample

    out = tmp_path_factory.mktemp("sample")
    generate_sample(out, seed=0)
    return out


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    """Where tests leave screenshots and reports for people to look at (git-ignored)."""
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS
