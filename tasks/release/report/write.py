"""Render a report kind and write it into the run (``<run>/reports/<kind>.html``) or a given path."""

from __future__ import annotations

from pathlib import Path

from storage import addresses
from storage.fs import RunFS

KINDS = ("eval", "ablation", "build")


def render(kind: str, run: RunFS, models: list[str] | None = None) -> str:
    if kind == "eval":
        from tasks.release.report.eval_report import render_eval_report

        return render_eval_report(run, models)
    if kind == "ablation":
        from tasks.release.report.ablation import render_ablation_report

        return render_ablation_report(run)
    if kind == "build":
        from tasks.release.report.build_report import render_build_report

        return render_build_report(run)
    raise ValueError(f"unknown report {kind!r}; choose one of {KINDS}")


def write_report(kind: str, run: RunFS, out: str | None = None, models: list[str] | None = None) -> str:
    """Write the HTML; returns where it went (a path or URL)."""
    html = render(kind, run, models)
    if out:
        target = RunFS.open(str(Path(out).parent) if "://" not in out else out.rsplit("/", 1)[0])
        name = out.replace("\\", "/").rsplit("/", 1)[-1]
        target.write_text_atomic(name, html)
        return target.sub(name).url
    run.write_text_atomic(addresses.report_file(kind), html)
    return run.sub(addresses.report_file(kind)).url  # a URL where the run is one (s3://...), else the path
