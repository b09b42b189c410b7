"""``reactbench preflight``: will the config's build fit the GPUs, and is everything it names here?

Also the gate ``build`` runs before its first stage when ``edit`` is among its stages (the first
step of the build chain, ``flows/chain.py``), so a config that cannot run stops in seconds instead
of after hours of mining and MLLM calls; ``render`` and ``render_estimate`` are how the CLI shows it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from flows.cli_options import finite


def render(report: Any, console: Console) -> None:
    from tasks.tools.preflight import table_rows

    where = (
        f"{report.gpus} GPU(s) x {report.gpu_memory_gb:g} GB ({report.gpu_source})"
        if report.gpus
        else report.gpu_source
    )
    table = Table(title=f"reactbench preflight: {where}")
    for col in ("component", "params", "bytes", "placement"):
        table.add_column(col)
    for row in table_rows(report):
        table.add_row(*row)
    console.print(table)
    for f in report.fits_list:
        tried = ", ".join(f"{t.name} {t.peak_gb} GB{' (fits)' if t.fits else ''}" for t in f.tried)
        chosen = (
            f.plan.name + (f", {f.plan.replicas} replica(s)" if f.plan and f.plan.replicas > 1 else "")
            if f.plan
            else "NOTHING FITS"
        )
        console.print(
            f"{f.key}: {chosen}   [{f.profile.source}; peak per GPU by plan: {tried}]", markup=False, soft_wrap=True
        )
    for p in report.problems:
        console.print(
            f"{p.severity}: {p.where}: {p.detail}",
            style="red" if p.severity == "error" else "yellow",
            markup=False,
            soft_wrap=True,
        )
    render_estimate(report, console)


def render_estimate(report: Any, console: Console) -> None:
    """The build-time estimate's lines (tasks/tools/estimate.py), when the edit stage has model editors."""
    est = getattr(report, "estimate", None)
    if est is not None and est.models:
        for line in est.lines():
            console.print(line, markup=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    @app.command()
    def preflight(
        config: Path | None = typer.Option(
            None,
            "--config",
            "-c",
            help="YAML run config (default: the --run-dir's saved config.yaml, else the embedded demo config).",
        ),
        gpus: int | None = typer.Option(
            None, "--gpus", min=0, help="GPUs per node to plan for (default: what torch.cuda sees)."
        ),
        gpu_memory_gb: float | None = typer.Option(
            None, "--gpu-memory-gb", min=1, callback=finite, help="memory per GPU in GB (default: torch.cuda)."
        ),
        gpu_name: str | None = typer.Option(
            None,
            "--gpu-name",
            help="GPU kind for the time estimate, e.g. 'RTX A6000' (default: torch.cuda, else the slowest card of that memory).",
        ),
        run_dir: str | None = typer.Option(
            None, "--run-dir", help="run whose instructions and reuse store give the pending edits."
        ),
        items: int | None = typer.Option(
            None, "--items", min=0, help="instructions expected, for a run that has none yet."
        ),
        window_h: float | None = typer.Option(
            None,
            "--window-h",
            min=0.01,
            callback=finite,
            help="say whether the pending edits fit this many hours, and what would.",
        ),
    ) -> None:
        """Size every model the config names on the meta device, pick a memory plan, check names and files, estimate the GPU time.

        Exit status: 0 fits; 3 does not fit (no memory plan, or the pending edits need more than
        --window-h); 4 could not be sized (a model's extra or files missing, or --window-h without
        the pending edits); 1 the config names something missing; 2 a bad config. The JSON line
        on stdout carries the same verdict and exit_code."""
        import sys

        from flows.config import ConfigError, resolve_run_config
        from tasks.tools.preflight import json_line, run_preflight

        console = Console(stderr=True, width=None if Console(stderr=True).is_terminal else 160, emoji=False)
        try:
            cfg = resolve_run_config(config, run_dir=run_dir)  # explicit > the run's saved config.yaml > demo
            report = run_preflight(
                cfg, gpus, gpu_memory_gb, run_dir=run_dir, items=items, gpu_name=gpu_name, window_h=window_h
            )
        except (ConfigError, ValueError) as exc:
            console.print(str(exc), style="red", markup=False, soft_wrap=True)
            raise typer.Exit(2) from None
        render(report, console)
        if not report.ok:
            console.print(report.fix(), style="red", markup=False, soft_wrap=True)
        console.print(
            report.verdict_line(), style="green" if report.exit_code == 0 else "red", markup=False, soft_wrap=True
        )
        sys.stdout.write(json_line(report) + "\n")
        raise typer.Exit(report.exit_code)
