"""``reactbench preflight``: will the config's build fit the GPUs, and is everything it names here?

Also the gate ``build`` runs before its first stage when ``edit`` is among its stages, so a
config that cannot run stops in seconds instead of after hours of mining and MLLM calls.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.table import Table


def render(report: Any, console: Console) -> None:
    from tasks.preflight import table_rows

    where = f"{report.gpus} GPU(s) x {report.gpu_memory_gb:g} GB ({report.gpu_source})" if report.gpus else report.gpu_source
    table = Table(title=f"reactbench preflight: {where}")
    for col in ("component", "params", "bytes", "placement"):
        table.add_column(col)
    for row in table_rows(report):
        table.add_row(*row)
    console.print(table)
    for f in report.fits_list:
        tried = ", ".join(f"{t.name} {t.peak_gb} GB{' (fits)' if t.fits else ''}" for t in f.tried)
        chosen = f.plan.name + (f", {f.plan.replicas} replica(s)" if f.plan and f.plan.replicas > 1 else "") if f.plan else "NOTHING FITS"
        console.print(f"{f.key}: {chosen}   [{f.profile.source}; peak per GPU by plan: {tried}]", markup=False, soft_wrap=True)
    for p in report.problems:
        console.print(f"{p.severity}: {p.where}: {p.detail}", style="red" if p.severity == "error" else "yellow", markup=False, soft_wrap=True)


def check_before_build(cfg: Any, stages: list[str] | None, console: Console | None = None) -> None:
    """``tasks.preflight.require_preflight``, printing the table on ``console`` when it fails."""
    from tasks.preflight import PreflightFailed, require_preflight

    try:
        require_preflight(cfg, stages)
    except PreflightFailed as exc:
        if console is not None:
            render(exc.report, console)
        raise


def register(app: typer.Typer) -> None:
    @app.command()
    def preflight(
        config: Optional[Path] = typer.Option(None, "--config", "-c", help="YAML run config (default: the embedded demo config)."),
        gpus: Optional[int] = typer.Option(None, "--gpus", min=0, help="GPUs per node to plan for (default: what torch.cuda sees)."),
        gpu_memory_gb: Optional[float] = typer.Option(None, "--gpu-memory-gb", min=1, help="memory per GPU in GB (default: torch.cuda)."),
    ) -> None:
        """Size every model the config names on the meta device, pick a memory plan, check names and files."""
        import sys

        from flows.config import ConfigError, load_config
        from tasks.preflight import json_line, run_preflight

        console = Console(stderr=True, width=None if Console(stderr=True).is_terminal else 160)
        try:
            cfg = load_config(config)
            report = run_preflight(cfg, gpus, gpu_memory_gb)
        except (ConfigError, ValueError) as exc:
            console.print(str(exc), style="red", markup=False, soft_wrap=True)
            raise typer.Exit(2)
        render(report, console)
        if not report.ok:
            console.print(report.fix(), style="red", markup=False, soft_wrap=True)
        sys.stdout.write(json_line(report) + "\n")
        raise typer.Exit(0 if report.ok else 1)
