"""Fixtures shared by every test package: the generated sample data (built once per session)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

# The composition root: installs the task registry (tasks/engine/registry.py) that storage.task_spec's
# lookups answer from, for the tests that drive a lower room (prompts, miners) without a stage.
import tasks  # noqa: F401

if TYPE_CHECKING:  # moto is imported only by the tests that start the server
    from guarded_cli import GuardedRun
    from s3_server import S3Server

# No test may reach a model hub or write under the home folder.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")

ROOT = Path(__file__).resolve().parents[1]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("reactbench order")
    group.addoption(
        "--reverse", action="store_true", help="run the collected tests in reverse order (order-independence check)"
    )
    group.addoption(
        "--shuffle",
        type=int,
        default=None,
        metavar="SEED",
        help="run the test modules in a seeded random order, tests inside a module shuffled too",
    )


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """``--reverse`` / ``--shuffle SEED``: the suite must pass in any order (no test may rely on
    what an earlier one left behind). Modules stay contiguous so module fixtures are built once."""
    seed = config.getoption("--shuffle")
    if seed is not None:
        import random

        rng = random.Random(seed)
        modules: dict[str, list[pytest.Item]] = {}
        for item in items:
            modules.setdefault(item.nodeid.split("::")[0], []).append(item)
        order = list(modules)
        rng.shuffle(order)
        for group in modules.values():
            rng.shuffle(group)
        items[:] = [item for mod in order for item in modules[mod]]
    if config.getoption("--reverse"):
        items.reverse()


ARTIFACTS = ROOT / "test-artifacts"


@dataclass(frozen=True)
class DemoBuild:
    """The session's one build of ``configs/demo.yaml`` on the sample (tests/guarded_cli.py)."""

    config: Path
    run: Path  # never modified: tests that change a run copy it first
    build: GuardedRun  # `reactbench build` under the layer guard


@pytest.fixture(scope="session")
def demo_build(sample_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> DemoBuild:
    """``reactbench build`` of the demo config on the sample (local threads, a real subprocess under
    the run-time layer guard), once per session: the layer and CPU-only tests check the command
    itself, the tests that only need a finished demo build read (or copy) its run directory."""
    import yaml
    from guarded_cli import guarded

    data = yaml.safe_load((ROOT / "configs" / "demo.yaml").read_text())
    data["sources"] = {"visual_genome": str(sample_dir / "visual_genome"), "fsc147": str(sample_dir / "fsc147")}
    folder = tmp_path_factory.mktemp("demo-build")
    config = folder / "demo.yaml"
    config.write_text(yaml.safe_dump(data))
    run = folder / "run"
    return DemoBuild(config, run, guarded("build", "--config", str(config), "--run-dir", str(run)))


@pytest.fixture(scope="session")
def demo_run(demo_build: DemoBuild) -> Path:
    """The finished demo build's run directory (read-only: copy it before changing it)."""
    assert demo_build.build.proc.returncode == 0, demo_build.build.output()[-3000:]
    return demo_build.run


@pytest.fixture(scope="session")
def demo_eval(demo_run: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, GuardedRun]:
    """``reactbench eval --model rules:rules-v1 --unverified`` under the layer guard, once per session,
    on a copy of the demo build (the build itself stays as the build left it)."""
    from guarded_cli import guarded

    run = tmp_path_factory.mktemp("demo-eval") / "run"
    shutil.copytree(demo_run, run)
    return run, guarded("eval", "--run-dir", str(run), "--model", "rules:rules-v1", "--unverified")


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


CHROMIUM = os.environ.get("REACTBENCH_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]


@pytest.fixture(scope="module")
def chromium() -> Iterator[object]:
    """Headless Debian Chromium driven by Playwright (never a Playwright-downloaded browser).

    One per test module, closed when the module ends: Playwright's sync API runs an event loop in
    the main thread while it is open, so a second ``sync_playwright()`` fails ("Sync API inside
    the asyncio loop") and every later ``asyncio.run()`` (Prefect client calls in the
    orchestration tests) fails too; kept open for the session, the suite would pass or fail
    with the order of its modules.
    """
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} not found: run `sh scripts/system-deps.sh` (Debian package chromium)")
    from playwright.sync_api import sync_playwright
    from short_paths import socket_safe_tmpdir

    sockets = socket_safe_tmpdir("rb-chromium-")  # Chromium's singleton socket lives in its TMPDIR
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS, env={**os.environ, "TMPDIR": str(sockets)}
        )
        try:
            yield browser
        finally:
            browser.close()
            shutil.rmtree(sockets, ignore_errors=True)


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """One local S3 API server (moto, tests/s3_server.py) for the session. Its endpoint and dummy
    credentials are exported (``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ...), so s3fs here and
    in every child process (a ``reactbench`` command) reaches it with no option passed."""
    from s3_server import S3Server

    with S3Server() as server, pytest.MonkeyPatch.context() as env:
        for key, value in server.env().items():
            env.setenv(key, value)
        yield server


@pytest.fixture
def s3_run_url(s3_server: S3Server) -> str:
    """``s3://<a new bucket>/run`` on the session's S3 server (a bucket per test)."""
    return f"s3://{s3_server.bucket()}/run"


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A throwaway PostgreSQL server on 127.0.0.1 (initdb + pg_ctl from the Debian package), shared
    by the review tests and the Prefect server of tests/orchestration."""
    from pg_cluster import throwaway_postgres

    with throwaway_postgres(max_connections=200) as url:  # fails naming the Debian package when missing
        yield url
