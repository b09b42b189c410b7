"""Options that several ``reactbench`` commands share, declared once.

Kept free of heavy imports: the executable's early lock check (``flows.entry``) reads the
default run directory from here before Typer or the config schema are loaded.
"""

from __future__ import annotations

from typing import Any

DEFAULT_RUN_DIR = "runs/demo"


def no_run_dir(run_dir: str) -> str:
    """The one line for a ``--run-dir`` that does not exist: say so before any stage or file hint."""
    from tasks.engine.suggest import suggest

    return f"{run_dir}: no such run directory; check --run-dir (a run is started with `{suggest('build', '--run-dir', run_dir)}`)"


def finite(value: float | None) -> float | None:
    """An option callback: a number option takes a finite number (``inf`` passes any lower bound
    and then fails deep inside the command, or is printed as invalid JSON)."""
    import math

    if value is not None and not math.isfinite(value):
        import typer

        raise typer.BadParameter(f"{value} is not a finite number")
    return value


def run_dir_option(help: str = "Run directory (local path or fsspec URL such as s3://bucket/run).") -> Any:
    """``--run-dir / -r`` as a plain string: a ``Path`` would fold ``s3://bucket/run`` into ``s3:/bucket/run``."""
    import typer

    return typer.Option(DEFAULT_RUN_DIR, "--run-dir", "-r", help=help)
