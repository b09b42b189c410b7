"""Static HTML reports: chart builders, and the three reports opened in headless Chromium."""

from __future__ import annotations

from pathlib import Path

import pytest
from eval_helpers import write_run

from storage.parquet_io import table_from_rows, write_table
from storage.rejects import reject
from storage.schemas import REJECTS
from storage.stage_store import StageStore
from tasks.release.evaluate.run import EvalRequest, run_eval
from tasks.release.report.svg import hbars, radar, stacked
from tasks.release.report.write import write_report

CHROMIUM = "/usr/bin/chromium"


def test_svg_builders_escape_and_validate():
    svg = radar(["RE", "CA", "<AT>"], [("m&1", [50.0, None, 100.0])], "t<1>")
    assert "&lt;AT&gt;" in svg and "m&amp;1" in svg and "<AT>" not in svg
    assert svg.count('class="series"') == 1
    with pytest.raises(ValueError, match="at least 3 axes"):
        radar(["a", "b"], [], "x")
    bars = hbars([("a", 10.0), ("b", None)], "bars")
    assert bars.count('class="bar"') == 2 and "n/a" in bars
    st = stacked([("RE", [("SC-1", 50.0), ("SC-2", 50.0)])], "s")
    assert st.count('class="bar"') == 2


@pytest.fixture(scope="module")
def reports(tmp_path_factory, eval_config):
    """Eval, ablation and build reports of one small two-editor run."""
    root = tmp_path_factory.mktemp("reports")
    run = write_run(root / "run", verified=False, editors=("classical", "sam-lama"))
    run_eval(run, eval_config, EvalRequest("rules:rules-v1", unverified=True))
    # a finished qa stage with rejects, as the build report reads them
    write_table(
        run,
        "qa/rejects/part-00000.parquet",
        table_from_rows(
            REJECTS,
            [
                reject("x1", "qa", "mc_duplicate_option"),
                reject("x2", "qa", "llm_unparseable"),
                reject("x3", "qa", "llm_unparseable"),
            ],
        ),
    )
    StageStore(run, "qa", {}).write_manifest(
        {"stage": "qa", "status": "complete", "counts": {"rows_in": 8, "questions": 60, "analysis": 8, "rejected": 3}}
    )
    paths = {kind: write_report(kind, run) for kind in ("eval", "ablation", "build")}
    return run, paths


def test_reports_written_into_the_run(reports):
    run, paths = reports
    for kind, p in paths.items():
        assert p == run.path("reports", f"{kind}.html")
        html = Path(p).read_text()
        assert "<script" not in html and "http://" not in html.replace("http://www.w3.org/2000/svg", "")
    ev = Path(paths["eval"]).read_text()
    assert "UNVERIFIED" in ev and "React-Score" in ev and "BEAF" in ev
    ab = Path(paths["ablation"]).read_text()
    assert "sam-lama" in ab and "data:image/jpeg;base64," in ab and "not reviewed" in ab
    assert "llm_unparseable" in Path(paths["build"]).read_text()


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian chromium not installed (apt-get install -y chromium)")
def test_reports_render_in_headless_chromium(reports, artifacts_dir, chromium):
    _, paths = reports
    context = chromium.new_context(
        viewport={"width": 1200, "height": 900}
    )  # the session's browser (tests/conftest.py)
    try:
        page = context.new_page()
        remote: list[str] = []
        page.on("request", lambda r: remote.append(r.url) if not r.url.startswith(("file:", "data:")) else None)
        for kind, path in paths.items():
            page.goto(Path(path).as_uri())
            charts = page.eval_on_selector_all(
                "svg.chart",
                "els => els.map(e => { const b = e.getBoundingClientRect(); return [e.dataset.kind, b.width, b.height, e.querySelectorAll('rect.bar, polygon.series').length]; })",
            )
            assert charts, f"{kind}: no chart rendered"
            assert all(w > 100 and h > 20 and marks > 0 for _, w, h, marks in charts), (kind, charts)
            if kind == "eval":
                kinds = {c[0] for c in charts}
                assert {"radar", "bars", "stacked"} <= kinds, kinds
                poly = page.eval_on_selector(
                    "svg[data-kind=radar] polygon.series", "e => { const b = e.getBBox(); return b.width * b.height; }"
                )
                assert poly > 100  # the model's polygon has area
            if kind == "ablation":
                loaded = page.eval_on_selector_all(
                    ".thumbs img", "imgs => imgs.map(i => i.complete && i.naturalWidth)"
                )
                assert loaded and all(w == 160 for w in loaded)
            page.screenshot(path=str(artifacts_dir / f"report-{kind}.png"), full_page=True)
        assert remote == []
    finally:
        context.close()
    assert (artifacts_dir / "report-eval.png").stat().st_size > 10_000
