"""The ``reactbench`` command line: one command per stage, ``build`` for all, and the tools around them."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from flows.cli_help import finish_help, version_option
from flows.cli_lock import guard_writers
from flows.cli_options import run_dir_option
from flows.config import ConfigError, config_source, resolve_run_config

app = typer.Typer(
    name="reactbench",
    help="Build cause-driven multimodal-hallucination benchmarks (ReactBench-style) and evaluate MLLMs on them.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
# Logs and CI capture output without a terminal; rich would then squeeze tables into 80 columns.
# Messages are soft-wrapped (never broken inside a suggested command; flows/cli_output.py).
console = Console(stderr=True, width=None if Console(stderr=True).is_terminal else 140, soft_wrap=True, emoji=False)

ConfigOpt = typer.Option(
    None, "--config", "-c", help="YAML run config (default: the run's saved config.yaml, else configs/demo.yaml)."
)
RunDirOpt = run_dir_option()
ForceOpt = typer.Option(False, "--force", help="Recompute every shard even if it is complete.")
OrchOpt = typer.Option(
    "auto",
    "--orchestrator",
    help="auto: Prefect when a Prefect API is configured, else local threads; local; prefect.",
)
MllmOpt = typer.Option(
    None, "--mllm", help="MLLM backend override: rules | openai | transformers (config key mllm.backend)."
)
BaseUrlOpt = typer.Option(None, "--base-url", help="OpenAI-compatible endpoint (mllm.base_url).")
MllmModelOpt = typer.Option(None, "--mllm-model", help="MLLM model id or local path (mllm.model).")
# `--model` means BACKEND:MODEL of the model under test (`reactbench eval`); here it was mllm.model.
OldModelOpt = typer.Option(None, "--model", hidden=True, help="Deprecated: --mllm-model.")
NoCacheOpt = typer.Option(False, "--no-cache", help="Bypass the MLLM response cache for this run.")
ForceItemsOpt = typer.Option(
    None,
    "--force-items",
    metavar="<editor=KEY|stage=NAME>",
    help="Recompute one component's items instead of reusing them: editor=KEY or stage=instruct|edit|qa (repeatable).",
)


def _progress_factory(progress: Progress):
    def make(stage: str):
        task_id = progress.add_task(stage, total=None)

        def update(done: int, total: int) -> None:
            progress.update(task_id, completed=done, total=max(total, 1) if total else 1)

        return update

    return make


def _summary_table(summaries) -> Table:
    table = Table(title="reactbench: rows per stage")
    for col in (
        "stage",
        "shards run",
        "skipped",
        "rows in",
        "rows out",
        "rejected",
        "top reject reasons",
        "items reused",
        "computed",
        "seconds",
    ):
        table.add_column(col, justify="right" if col not in ("stage", "rows out", "top reject reasons") else "left")
    for s in summaries:
        out = ", ".join(f"{k} {v}" for k, v in s.rows_out.items()) or "-"
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(s.reject_reasons.items(), key=lambda kv: -kv[1])[:3]) or "-"
        table.add_row(
            s.stage,
            str(s.shards_run),
            str(s.shards_skipped),
            str(s.rows_in),
            out,
            str(s.rejected),
            reasons,
            str(s.items_reused),
            str(s.items_computed),
            f"{s.seconds:.1f}",
        )
    return table


def run_stages_cli(
    stages: list[str] | None,
    config: Path | None,
    run_dir: str,
    force: bool,
    orchestrator: str,
    overrides: dict[str, Any] | None = None,
    no_cache: bool = False,
    force_items: list[str] | None = None,
) -> None:
    from flows.cli_preflight import render, render_estimate
    from flows.config_checks import check_runnable
    from flows.runtime import run_pipeline
    from tasks.engine.base import StageInputError
    from tasks.engine.reuse import check_force_items
    from tasks.engine.runner import ShardFailed
    from tasks.tools.preflight import PreflightFailed

    try:
        cfg = resolve_run_config(config, overrides, run_dir=run_dir)
        check_force_items(force_items or [], [e.key for e in cfg.editors])
        check_runnable(cfg, stages, config_source(config, run_dir))  # before the run directory is touched
    except (ConfigError, ValueError) as exc:
        console.print(str(exc), style="red", markup=False)
        raise typer.Exit(2) from None
    started = time.perf_counter()
    try:
        with Progress(
            TextColumn("[bold]{task.description:>9}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("shards"),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        ) as progress:
            result = run_pipeline(
                cfg,
                str(run_dir),
                stages,
                force=force,
                orchestrator=orchestrator,  # type: ignore[arg-type]
                options={"no_cache": no_cache, "force_items": list(force_items or [])},
                progress=_progress_factory(progress),
                on_preflight=lambda report: render_estimate(
                    report, console
                ),  # the chain's preflight (flows/chain.py) passed
            )
    except PreflightFailed as exc:  # edit would run and cannot: stopped in seconds, before mine
        if getattr(exc, "report", None) is not None:
            render(exc.report, console)
        console.print(str(exc), style="red", markup=False)
        raise typer.Exit(1) from None
    except (StageInputError, ShardFailed, ConfigError, KeyError) as exc:
        console.print(str(exc), style="red", markup=False)
        raise typer.Exit(1) from None
    console.print(_summary_table(result.summaries))
    for s in result.summaries:  # what a stage wants the user to know (e.g. the review queue was reconciled)
        if s.extra.get("note"):
            console.print(f"{s.stage}: {s.extra['note']}", markup=False)
    total = sum(s.shards_total for s in result.summaries)
    skipped = sum(s.shards_skipped for s in result.summaries)
    if result.summaries and all(s.all_skipped for s in result.summaries):
        console.print(
            f"Nothing to do: all {total} shard(s) were skipped (already complete). Use --force to recompute."
        )
    else:
        console.print(
            f"{total - skipped} shard(s) run, {skipped} skipped, in {time.perf_counter() - started:.1f} s ({result.orchestrator} orchestration)."
        )
    console.print(f"Run directory: {run_dir}", markup=False)


def _stage_names(stages: str | None) -> list[str] | None:
    """``--stages mine,instruct`` as names, checked before anything runs (exit 2 naming the stages that exist)."""
    from flows.cli_output import print_error
    from flows.stages import STAGE_ORDER, UnknownStage, select_stages

    if stages is None:
        return None
    names = [s.strip() for s in stages.split(",") if s.strip()]
    try:
        if not names:
            raise UnknownStage(f"name at least one stage; the stages are {', '.join(STAGE_ORDER)}")
        select_stages(names)
    except UnknownStage as exc:
        print_error(f"--stages {stages}: {exc}")
        raise typer.Exit(2) from None
    return names


def _mllm_overrides(
    mllm: str | None, base_url: str | None, model: str | None, old_model: str | None = None
) -> dict[str, Any]:
    from flows.cli_output import deprecated_option

    model = deprecated_option(
        "--model",
        "--mllm-model",
        old_model,
        model,
        "--model is BACKEND:MODEL on `reactbench eval`; here it set mllm.model",
    )
    return {"mllm.backend": mllm, "mllm.base_url": base_url, "mllm.model": model}


@app.command()
def build(
    config: Path | None = ConfigOpt,
    run_dir: str = RunDirOpt,
    force: bool = ForceOpt,
    stages: str | None = typer.Option(None, "--stages", help="Comma-separated subset, e.g. mine,instruct."),
    orchestrator: str = OrchOpt,
    mllm: str | None = MllmOpt,
    base_url: str | None = BaseUrlOpt,
    mllm_model: str | None = MllmModelOpt,
    no_cache: bool = NoCacheOpt,
    force_items: list[str] | None = ForceItemsOpt,
    model: str | None = OldModelOpt,
) -> None:
    """Run every stage in order: mine, instruct, edit, qa, review (finished shards are skipped)."""
    names = _stage_names(stages)
    run_stages_cli(
        names,
        config,
        run_dir,
        force,
        orchestrator,
        _mllm_overrides(mllm, base_url, mllm_model, model),
        no_cache,
        force_items,
    )


def _stage_command(stage: str, help_text: str, *, mllm_flags: bool = False) -> None:
    """Register `reactbench <stage>`: the shared options, plus the MLLM overrides where the stage calls a model."""
    if mllm_flags:

        def command(
            config: Path | None = ConfigOpt,
            run_dir: str = RunDirOpt,
            force: bool = ForceOpt,
            orchestrator: str = OrchOpt,
            mllm: str | None = MllmOpt,
            base_url: str | None = BaseUrlOpt,
            mllm_model: str | None = MllmModelOpt,
            no_cache: bool = NoCacheOpt,
            force_items: list[str] | None = ForceItemsOpt,
            model: str | None = OldModelOpt,
        ) -> None:
            run_stages_cli(
                [stage],
                config,
                run_dir,
                force,
                orchestrator,
                _mllm_overrides(mllm, base_url, mllm_model, model),
                no_cache,
                force_items,
            )

    else:

        def command(
            config: Path | None = ConfigOpt,
            run_dir: str = RunDirOpt,
            force: bool = ForceOpt,
            orchestrator: str = OrchOpt,
            force_items: list[str] | None = ForceItemsOpt,
        ) -> None:
            run_stages_cli([stage], config, run_dir, force, orchestrator, force_items=force_items)

    command.__doc__ = help_text
    app.command(stage)(command)


_stage_command(
    "mine",
    "Mine the configured sources (Visual Genome, FSC147, COCO format, plugins) into candidates and statistics tables.",
)
_stage_command(
    "instruct", 'Write editing instructions (or "not applicable") with the configured MLLM.', mllm_flags=True
)
_stage_command("edit", "Apply the configured editors to every applicable instruction, with auto-QC.")
_stage_command("qa", "Analyse each edit and render its exam-style questions.", mllm_flags=True)


# `reactbench status` exits with these when a stage needs a build (damaged wins over interrupted).
STATUS_DAMAGED_EXIT = 5
STATUS_INTERRUPTED_EXIT = 6


@app.command()
def status(run_dir: str = RunDirOpt) -> None:
    """Show what each stage of a run directory holds (from its manifests); a stage left `running` by a writer that is gone shows `interrupted`, a finished one whose files no longer match its manifest (size or sha256) `damaged`. Exit status: 0 when no stage is either, 5 when one is damaged, 6 when one is interrupted (and none damaged)."""
    from flows.stages import STAGE_ORDER
    from storage.fs import RunFS
    from storage.run_lock import writer_alive
    from storage.stage_store import StageStore
    from tasks.engine.suggest import suggest

    run = RunFS.open(str(run_dir))
    if not run.exists():
        console.print(f"{run_dir}: no such run directory", style="red", markup=False)
        raise typer.Exit(1)
    table = Table(title=Text(f"reactbench: {run_dir}"))  # Text: `runs/star*[ab]` is a name, not markup
    for col in ("stage", "status", "shards", "rows in", "rows out", "rejected", "finished"):
        table.add_column(col)
    reuse: list[str] = []
    writing = writer_alive(run)  # "running" with no live writer: the writer was stopped or killed
    damaged: list[str] = []
    interrupted: list[str] = []
    for name in STAGE_ORDER:
        store = StageStore(run, name, {})
        m = store.read_manifest()
        if m is None:
            table.add_row(name, "not run", "-", "-", "-", "-", "-")
            continue
        markers = store.markers()
        marks = store.summarize(m["key"], markers)
        problems = store.finished_damage(m, markers)  # a finished stage's files against its manifest: sizes, sha256
        if problems:
            damaged.append(
                f"{name}: {problems[0]}" + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else "")
            )
        if marks["items_by_shard"]:
            reuse.append(f"{name} {marks['items_reused']} reused / {marks['items_computed']} computed")
        counts = dict(m.get("counts", {}))
        rows_in, rejected = counts.pop("rows_in", "-"), counts.pop("rejected", "-")
        done = len(m["completed_shards"]) if "completed_shards" in m else len(marks["completed_shards"])
        out = ", ".join(f"{k} {v}" for k, v in counts.items()) or "-"
        state = "damaged" if problems else m.get("status", "?")
        if state == "running" and not writing:
            state = "interrupted"
            interrupted.append(name)
        table.add_row(
            name,
            state,
            f"{done}/{m.get('shards_total', '?')}",
            str(rows_in),
            out,
            str(rejected),
            m.get("finished_at", "-"),
        )
    console.print(table)
    for line in damaged:
        console.print(
            f"damaged: {line}; `{suggest('build', '--run-dir', run_dir)}` recomputes its shards",
            style="red",
            markup=False,
        )
    if interrupted:
        console.print(
            f"interrupted: {', '.join(interrupted)} (its writer stopped); `{suggest('build', '--run-dir', run_dir)}` resumes it",
            style="yellow",
            markup=False,
        )
    if reuse:
        console.print("Items (from the reuse store / computed): " + ", ".join(reuse), markup=False)
    if damaged or interrupted:
        raise typer.Exit(STATUS_DAMAGED_EXIT if damaged else STATUS_INTERRUPTED_EXIT)


@app.command("sample-data")
def sample_data(
    out_dir: Path = typer.Argument(
        Path("data/sample"), help="Folder to write visual_genome/, fsc147/ and coco/ into."
    ),
    seed: int = typer.Option(0, help="Seed of the generator (same seed, same files)."),
    vg_images: int = typer.Option(
        180,
        "--vg-images",
        min=1,
        help="Visual Genome images; more than 180 extends the default sample (its images unchanged).",
    ),
    fsc_images: int = typer.Option(
        30,
        "--fsc-images",
        min=1,
        help="FSC147 images; more than 30 extends the default sample (its images unchanged), the added counts spread over the demo's count bins.",
    ),
    coco_images: int = typer.Option(
        62,
        "--coco-images",
        min=1,
        help="COCO-format images; more than 62 extends the default sample (its images unchanged).",
    ),
) -> None:
    """Generate the bundled sample data: a small Visual Genome-, FSC147- and COCO-format set."""
    from miners.sample_data import generate_sample

    started = time.perf_counter()
    summary = generate_sample(out_dir, seed=seed, vg_images=vg_images, fsc_images=fsc_images, coco_images=coco_images)
    console.print(f"Sample data written to {out_dir} in {time.perf_counter() - started:.1f} s: {summary}")


def _mount_subcommands() -> None:
    """Attach the review and evaluation command groups (kept in their own modules)."""
    from flows.cli_eval import register
    from flows.cli_reuse import reuse_app
    from flows.cli_review import review_app

    @review_app.callback(invoke_without_command=True)
    def review(
        ctx: typer.Context,
        config: Path | None = ConfigOpt,
        run_dir: str = RunDirOpt,
        force: bool = ForceOpt,
        orchestrator: str = OrchOpt,
    ) -> None:
        """Fill the review queue (no subcommand), or serve / export / manage it (subcommands)."""
        if ctx.invoked_subcommand is None:
            run_stages_cli(["review"], config, run_dir, force, orchestrator)

    app.add_typer(review_app, name="review")
    app.add_typer(reuse_app, name="reuse")
    register(app)
    __import__("flows.cli_audit", fromlist=["register"]).register(app)
    __import__("flows.cli_plugins", fromlist=["register"]).register(app)
    __import__("flows.cli_release", fromlist=["register"]).register(app)
    from flows.cli_preflight import register as register_preflight

    register_preflight(app)


@app.callback()
def _root(version: bool = version_option()) -> None:
    """The root's own options (``--version``); the help text is the app's."""


_mount_subcommands()
finish_help(app)  # an example per command, flags shown as flags (flows/cli_help.py)
guard_writers(app)  # writing commands hold the run directory's lock (flows/cli_lock.py)


def main() -> None:  # pragma: no cover
    app(sys.argv[1:])


if __name__ == "__main__":  # pragma: no cover
    main()
