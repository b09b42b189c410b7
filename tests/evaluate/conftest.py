"""Shared fixtures of the evaluation tests (builders live in ``eval_helpers``)."""

from __future__ import annotations

import pytest
from eval_helpers import write_run


@pytest.fixture(scope="session")
def eval_config():
    from flows.config import BuildConfig

    return BuildConfig.model_validate({"run": {"shard_size": 8, "workers": 1}})


@pytest.fixture(scope="session")
def rules_run(tmp_path_factory: pytest.TempPathFactory, eval_config):
    """A run evaluated once with the rules baseline (verified inputs), shared by read-only tests."""
    from tasks.release.evaluate.run import EvalRequest, run_eval

    run = write_run(tmp_path_factory.mktemp("eval-run"))
    outcome = run_eval(run, eval_config, EvalRequest("rules:rules-v1"))
    return run, outcome
