"""``reactbench export | eval | report``: release a build, evaluate a model on it, draw the reports.

Thin wrappers over ``tasks.release.export``, ``tasks.release.evaluate`` and ``tasks.release.report``; the lead's
``flows/cli.py`` calls :func:`register`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.table import Table

from flows.cli_options import run_dir_option

if TYPE_CHECKING:
    from storage.fs import RunFS
    from tasks.release.evaluate.run import EvalOutcome
    from tasks.release.evaluate.summary import Metrics

console = Console(stderr=True, soft_wrap=True, emoji=False)  # messages never hard-wrapped; tables still fit the width

RunDir = run_dir_option()
CfgOpt = typer.Option(
    None, "--config", "-c", help="Run config (default: the run's saved config.yaml, else configs/demo.yaml)."
)
UnverifiedOpt = typer.Option(
    False, "--unverified", help="Use qa/questions + edit/edits (no human review yet); outputs are labelled unverified."
)


def _config(config: Path | None, run_dir: str, overrides: dict[str, Any] | None = None) -> Any:
    from flows.config import resolve_run_config

    return resolve_run_config(config, overrides, run_dir=run_dir)


def _fail(exc: Exception) -> None:
    from flows.cli_output import print_error

    print_error(f"error: {exc}")  # as written: a path or model name is never read as markup or an emoji code
    raise typer.Exit(2)


def export_cmd(
    run_dir: str = RunDir,
    out: str = typer.Option(
        ..., "--out", "-o", help="Folder for the Hugging Face datasets release (local path or fsspec URL)."
    ),
    unverified: bool = UnverifiedOpt,
    vlmevalkit: bool | None = typer.Option(
        None, "--vlmevalkit/--no-vlmevalkit", help="Also write a VLMEvalKit TSV (default: export.vlmevalkit_tsv)."
    ),
    lmms_eval: bool | None = typer.Option(
        None, "--lmms-eval/--no-lmms-eval", help="Also write lmms-eval task YAMLs (default: export.lmms_eval_yaml)."
    ),
    config: Path | None = CfgOpt,
    replace: bool = typer.Option(
        False,
        "--replace",
        help="Replace whatever --out holds, even a release with other tasks or files not sealed by this tool.",
    ),
    strict: bool = typer.Option(
        False,
        "--strict",
        help="Refuse a build over a health: threshold (trivial or blind-prior accuracy, duplicate share), naming each figure; without it they are warnings.",
    ),
    version: str | None = typer.Option(
        None,
        "--release-version",
        help="The release's version, e.g. 1.1.0 (default: export.version; none = unversioned).",
    ),
    previous: str | None = typer.Option(
        None, "--previous", help="The previous release (folder or URL): its diff to this one becomes CHANGELOG.md."
    ),
    hub_repo: str | None = typer.Option(
        None, "--hub-repo", help="Hub dataset repo the release is pushed to, owner/name (default: export.hub_repo)."
    ),
    revision: str | None = typer.Option(
        None,
        "--revision",
        help="Hub revision (commit or tag) the lmms-eval tasks pin; needs --hub-repo (default: export.revision).",
    ),
) -> None:
    """Write the benchmark as a `datasets` folder with a dataset card (plus optional TSV / lmms-eval).

    The release is written aside and swapped in whole with a manifest of every file's sha256, so
    --out holds the old release or the new one, never a mix."""
    from flows.cli_output import StepBars, require_extra
    from storage.fs import RunFS
    from tasks.engine.intact import DamagedInput
    from tasks.release.export.export import ExportOptions, export_benchmark
    from tasks.release.items import InputsMissing

    require_extra("datasets", "export", "reactbench export")  # before --out or the run is touched
    try:
        pins = {"export.version": version, "export.hub_repo": hub_repo, "export.revision": revision}
        cfg = _config(config, run_dir, pins)
        with StepBars("export", console) as steps:
            summary = export_benchmark(
                RunFS.open(str(run_dir)),
                RunFS.open(str(out)),
                cfg,
                ExportOptions(
                    unverified=unverified,
                    vlmevalkit=cfg.export.vlmevalkit_tsv if vlmevalkit is None else vlmevalkit,
                    lmms_eval=cfg.export.lmms_eval_yaml if lmms_eval is None else lmms_eval,
                    replace=replace,
                    strict=strict,
                ),
                progress=steps,
                previous=previous,
            )
    except (InputsMissing, DamagedInput, ValueError) as exc:
        _fail(exc)
        return
    for warning in summary.health_warnings:
        console.print(f"warning: health: {warning}", markup=False, highlight=False)
    label = "UNVERIFIED " if unverified else ""
    console.print(
        f"{label}export -> {summary.out}: {summary.counts} ({summary.rejected} rejected); files: {', '.join(summary.files)}",
        markup=False,
    )
    for warning in summary.warnings:  # the datasheet fields a venue reads and the run cannot know
        console.print(f"warning: {warning}", markup=False)


def eval_cmd(
    run_dir: str = RunDir,
    model: str = typer.Option(
        ...,
        "--model",
        "-m",
        help="BACKEND:MODEL, e.g. openai:Qwen/Qwen2.5-VL-7B-Instruct. rules:rules-v1 is an ORACLE: it reads the answers from the annotations, so its scores are no baseline.",
    ),
    unverified: bool = UnverifiedOpt,
    base_url: str | None = typer.Option(
        None, "--base-url", help="OpenAI-compatible endpoint of the model under test (default: mllm.base_url)."
    ),
    judge: str | None = typer.Option(
        None,
        "--judge",
        help="BACKEND:MODEL of the SA / sub-cause / span judge (default: eval.judge, else the offline rules judge).",
    ),
    judge_base_url: str | None = typer.Option(
        None, "--judge-base-url", help="Endpoint of the judge (eval.judge_base_url)."
    ),
    modes: str | None = typer.Option(
        None, "--modes", help="Comma-separated prompting modes: standard,cot (eval.modes)."
    ),
    no_cache: bool = typer.Option(False, "--no-cache", help="Bypass the response cache."),
    force: bool = typer.Option(False, "--force", help="Re-answer every shard."),
    blind: bool = typer.Option(
        False,
        "--blind",
        help="Language-only run: the same questions with the images (and annotations) withheld, into eval/<backend>-<model>-blind; the eval report shows it beside the run with images.",
    ),
    out: str | None = typer.Option(
        None,
        "--out",
        "-o",
        help="Folder that receives eval/<backend>-<model>/ and the response cache instead of the run: evaluate a read-only (published) run; `reactbench report eval --run-dir <out>` draws it.",
    ),
    config: Path | None = CfgOpt,
) -> None:
    """Answer every question with a model (standard and CoT), judge, score, and write metrics.json.

    The offline `rules` backend is an ORACLE (it reads answers from the annotations), not a baseline.
    With --out the run is only read: answers, cache and metrics go to the other folder."""
    from flows.cli_output import StepBars
    from storage.fs import RunFS
    from tasks.engine.base import StageInputError
    from tasks.engine.intact import DamagedInput
    from tasks.engine.runner import ShardFailed
    from tasks.release.evaluate.run import EvalRequest, answer_questions
    from tasks.release.items import InputsMissing

    overrides = {
        "eval.judge": judge,
        "eval.judge_base_url": judge_base_url,
        "eval.modes": [m.strip() for m in modes.split(",")] if modes else None,
    }
    try:
        cfg = _config(config, run_dir, overrides)
        source = RunFS.open(str(run_dir))
        run = RunFS.open(str(out)) if out else source  # its lease, as the run's, held by flows/cli_lock.py
        request = EvalRequest(
            model, unverified=unverified, blind=blind, base_url=base_url, no_cache=no_cache, force=force
        )
        with StepBars(f"eval {model}", console) as steps:
            answered = answer_questions(
                run, cfg, request, progress=steps.step("answer"), source=source if out else None
            )
            s = answered.stage
            steps(
                "answer",
                s.shards_total,
                s.shards_total,
                summary=f"{s.rows_out.get('answers', 0):,} answers",
                details=f"{s.shards_run} of {s.shards_total} shards run; {s.items_computed:,} asked, {s.items_reused:,} reused",
            )
        outcome = _metrics_step(run, answered)
    except (InputsMissing, DamagedInput, ValueError, StageInputError, ShardFailed) as exc:
        _fail(exc)
        return
    _print_scores(model, outcome.metrics)
    console.print(f"answers and metrics in {run.sub(outcome.folder).url}", markup=False)


def _metrics_step(run: RunFS, answered: EvalOutcome) -> EvalOutcome:
    """Score the answers into ``metrics.json`` under a progress bar of its own."""
    from flows.cli_output import StepBars
    from tasks.release.evaluate.run import write_metrics

    with StepBars("metrics", console) as steps:
        outcome = write_metrics(run, answered, steps.step("metrics"))
        steps(
            "metrics",
            1,
            1,
            summary=f"{outcome.metrics['n_answers']:,} answers",
            details=f"{outcome.folder}/metrics.json",
        )
    return outcome


def _print_scores(model: str, m: Metrics) -> None:
    """The task scores per mode and the React-Score as a table on stdout."""
    from flows.cli_output import table_console

    label = f" [{m['label']}]" if m.get("label") else ""
    table = Table(title=f"{model} ({m['questions_source']}){label}")
    for col in ("task", "standard", "CoT", "S_t"):
        table.add_column(col, justify="left" if col == "task" else "right")
    for task, per_mode in m["react"]["per_mode"].items():
        table.add_row(task, *[_num(per_mode.get(k)) for k in ("standard", "cot")], _num(m["react"]["per_task"][task]))
    table.add_row("React-Score", "", "", _num(m["react"]["react_score"]))
    table_console().print(table)


def _num(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.1f}"


def report_cmd(
    kind: str = typer.Argument(..., help="eval | ablation | build | health"),
    run_dir: str = RunDir,
    out: str | None = typer.Option(
        None, "--out", "-o", help="HTML file to write (default: <run>/reports/<kind>.html)."
    ),
    evals: list[str] | None = typer.Option(
        None,
        "--eval",
        "-e",
        metavar="<folder>",
        help="eval: only these evaluation folders under <run>/eval/ (e.g. rules-rules-v1); repeatable.",
    ),
    model: list[str] | None = typer.Option(None, "--model", "-m", hidden=True, help="Deprecated: --eval."),
) -> None:
    """Write a static HTML report with plots: eval (radar, bars, sub-causes), ablation (editors), build (stages, rejects),
    health (trivial and blind prior baselines, balance, duplicates, Table 2; also prints one JSON line)."""
    from flows.cli_output import deprecated_option
    from storage.fs import RunFS
    from tasks.release.report.write import KINDS, write_report

    model = deprecated_option(
        "--model",
        "--eval",
        model or None,
        evals or None,
        "--model is BACKEND:MODEL on `reactbench eval`; here it named evaluation folders",
    )

    if kind not in KINDS:
        _fail(ValueError(f"unknown report {kind!r}; choose one of {', '.join(KINDS)}"))
    try:
        cfg = _config(None, str(run_dir)) if kind == "health" else None  # its health: thresholds
        where = write_report(kind, RunFS.open(str(run_dir)), out, model or None, cfg)
    except (RuntimeError, FileNotFoundError, ValueError) as exc:
        _fail(exc)
        return
    console.print(f"{kind} report -> {where}", markup=False)
    if kind == "health":  # its headline figures, one JSON line on stdout
        from tasks.release.health.figures import headline
        from tasks.release.report.health_report import read_health_figures

        print(json.dumps(headline(read_health_figures(where)), sort_keys=True))


def register(app: typer.Typer) -> None:
    """Add ``export``, ``eval`` and ``report`` to the main CLI."""
    app.command("export")(export_cmd)
    app.command("eval")(eval_cmd)
    app.command("report")(report_cmd)
