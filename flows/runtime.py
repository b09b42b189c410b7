"""How stages run: recorded in Prefect when a Prefect API is configured, directly otherwise.

Prefect 3 has no in-process mode: without ``PREFECT_API_URL`` every flow run starts a temporary
server (11-30 s measured here). A user trying an idea on a laptop should not pay that for a
stage run, so ``orchestrator="auto"`` runs the same stage logic (``tasks.engine.runner``) on a thread
pool when no API is configured, and through the Prefect flows in ``flows/prefect_flows.py``
(recorded runs, task retries, artifacts, Ray) when one is. Both run one build chain
(``flows/chain.py``: preflight, stages in order, build report) and go through
``tasks.engine.runner.run_stage``: retries, GPU placement and ``_errors/`` tracebacks behave the same either way. ``--orchestrator prefect`` forces
Prefect (it then starts the temporary server if needed).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from flows.chain import ChainMode, run_build_chain
from flows.config import BuildConfig
from flows.context import ProgressFactory, watch_progress
from flows.stages import get_stage, select_stages
from tasks.engine.base import RunContext
from tasks.engine.runner import StageSummary, run_stage

if TYPE_CHECKING:
    from tasks.tools.preflight import PreflightReport

Orchestrator = Literal["auto", "local", "prefect"]


def prefect_api_configured() -> bool:
    """True when a Prefect API URL is set (environment, profile, .env or prefect.toml).

    Importing Prefect's settings costs about a second, so it is done only when one of the files
    it reads mentions an API URL; a plain laptop run decides from the environment alone.
    """
    if os.environ.get("PREFECT_API_URL"):
        return True
    home = Path(os.environ.get("PREFECT_HOME", Path.home() / ".prefect")).expanduser()
    sources = [
        Path(os.environ.get("PREFECT_PROFILES_PATH", home / "profiles.toml")),
        Path(".env"),
        Path("prefect.toml"),
    ]
    if not any(_mentions_api_url(p) for p in sources):
        return False
    # Settings() reads the sources now; get_current_settings() would answer from the settings
    # context Prefect built when it was first imported in this process, blind to a profile or
    # PREFECT_PROFILES_PATH set since (a long-lived process, a test session).
    from prefect.settings import Settings

    return bool(Settings().api.url)


def _mentions_api_url(path: Path) -> bool:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return "PREFECT_API_URL" in text or ("[api]" in text and "url" in text)


def resolve_orchestrator(choice: Orchestrator) -> Literal["local", "prefect"]:
    if choice == "auto":
        return "prefect" if prefect_api_configured() else "local"
    return choice


@dataclass
class BuildResult:
    orchestrator: str
    summaries: list[StageSummary] = field(default_factory=list)


def run_pipeline(
    config: BuildConfig,
    run_dir: str,
    stages: list[str] | None = None,
    *,
    force: bool = False,
    orchestrator: Orchestrator = "auto",
    options: dict | None = None,
    progress: ProgressFactory | None = None,
    on_preflight: Callable[[PreflightReport], None] | None = None,
) -> BuildResult:
    """Run the build chain (``flows/chain.py``: preflight, the selected stages in order, the build
    report) locally or through ``build_flow``; each stage skips its finished shards.

    ``on_preflight`` shows a passing preflight's report (the CLI prints the estimate); a Prefect
    build, whose parameters must be serialisable, logs it through its run logger instead.
    """
    mode = resolve_orchestrator(orchestrator)
    if mode == "prefect":
        from flows.prefect_flows import build_flow

        with watch_progress(run_dir, progress):
            summaries = build_flow(
                config=config,  # the validated model: Prefect passes it through in process
                run_dir=run_dir,
                stages=select_stages(stages),
                force=force,
                options=options or {},
            )
        return BuildResult("prefect", list(summaries))

    def run_one(name: str, ctx: RunContext) -> StageSummary:
        return run_stage(
            get_stage(name),
            ctx,
            force=force,
            progress=progress(name) if progress else None,
            requeue_reasons=config.orchestration.rerun_reject_reasons,
        )

    done = run_build_chain(config, run_dir, stages, ChainMode(run_one, on_preflight=on_preflight), options=options)
    return BuildResult("local", done.summaries)
