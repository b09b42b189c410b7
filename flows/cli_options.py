"""Options that several ``reactbench`` commands share, declared once.

Kept free of heavy imports: the executable's early lock check (``flows.entry``) reads the
default run directory from here before Typer or the config schema are loaded.
"""

from __future__ import annotations

from typing import Any

DEFAULT_RUN_DIR = "runs/demo"


def run_dir_option(help: str = "Run directory (local path or fsspec URL such as s3://bucket/run).") -> Any:
    """``--run-dir / -r`` as a plain string: a ``Path`` would fold ``s3://bucket/run`` into ``s3:/bucket/run``."""
    import typer

    return typer.Option(DEFAULT_RUN_DIR, "--run-dir", "-r", help=help)
