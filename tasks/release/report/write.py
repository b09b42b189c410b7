"""Render a report kind and write it into the run (``<run>/reports/<kind>.html``) or a given path."""

from __future__ import annotations

import posixpath

from storage import addresses
from storage.fs import RunFS
from storage.run_dirs import refuse_report_target
from tasks.engine.build_config import BuildConfig
from tasks.engine.intact import BUILD_STAGES, require_intact

KINDS = ("eval", "ablation", "build", "health")


# The finished stages whose part files a report reads (checked first: sizes and sha256). The eval
# report reads each evaluation's metrics.json only.
READS = {"eval": (), "ablation": ("instruct", "edit", "qa"), "build": BUILD_STAGES, "health": ("mine", "qa")}


def render(kind: str, run: RunFS, models: list[str] | None = None, config: BuildConfig | None = None) -> str:
    """The page of one report kind; ``config`` (the resolved run config) is read by ``health`` only."""
    return _render(kind, run, models, config)[0]


def _render(kind: str, run: RunFS, models: list[str] | None, config: BuildConfig | None) -> tuple[str, str | None]:
    """The page and, for ``health``, its figures as JSON text (kept beside the page)."""
    if kind == "health":
        from tasks.release.report.health_report import health_page

        require_intact(run, READS[kind])
        return health_page(run, config)
    return _page(kind, run, models), None


def _page(kind: str, run: RunFS, models: list[str] | None) -> str:
    require_intact(run, READS.get(kind, ()))  # a damaged stage is refused in one line, never drawn
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


def write_report(
    kind: str, run: RunFS, out: str | None = None, models: list[str] | None = None, config: BuildConfig | None = None
) -> str:
    """Write the HTML; returns where it went (a path or URL).

    ``out`` is resolved first and refused (``storage.run_dirs.InsideRunDir``, before anything is
    rendered) when it is a folder or lies inside a run directory, except below this run's own
    ``reports/``: a report never lands on or among another run's files."""
    if out:
        target = refuse_report_target(RunFS.open(out), run, addresses.REPORTS_DIR)
        html, figures = _render(kind, run, models, config)
        folder, name = posixpath.split(target.root)
        _write_page(RunFS(target.fs, folder or "/"), name, html, figures)
        return target.url
    html, figures = _render(kind, run, models, config)
    _write_page(run, addresses.report_file(kind), html, figures)
    return run.sub(addresses.report_file(kind)).url  # a URL where the run is one (s3://...), else the path


def _write_page(folder: RunFS, name: str, html: str, figures: str | None) -> None:
    """The page, and its figures (JSON) beside it where the kind keeps them."""
    if figures is not None:
        from tasks.release.report.health_report import figures_beside

        folder.write_text_atomic(figures_beside(name), figures)
    folder.write_text_atomic(name, html)
