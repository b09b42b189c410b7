"""``reactbench report health``: the benchmark's health (trivial and blind prior baselines,
balance, duplicates, Table 2) as one HTML page; the figures are kept beside it as
``reports/health.json`` (what the CLI's JSON line and the benchmarks read)."""

from __future__ import annotations

import json
import posixpath
from html import escape
from typing import Any

from storage.fs import RunFS
from tasks.engine.build_config import BuildConfig
from tasks.release.health.figures import compute_health, health_biases_text
from tasks.release.report.html import page, table


def _pct(x: float | None) -> str | None:
    return None if x is None else f"{100 * x:.1f}%"


def _trivial(f: dict[str, Any]) -> str:
    rows = []
    for g in f["trivial"]["groups"]:
        letters = " ".join(f"{k}:{v}" for k, v in (g.get("letters") or {}).items())
        rows.append(
            [
                g["task"],
                g["question_set"],
                g["qtype"],
                g["dimension"],
                g["n"],
                _pct(g.get("always_yes")),
                _pct(g.get("always_no")),
                letters or None,
                _pct(g.get("uniform")),
                _pct(g.get("most_frequent")),
                f"{g.get('best')} {_pct(g.get('best_accuracy'))}",
            ]
        )
    head = [
        "task",
        "set",
        "type",
        "dimension",
        "n",
        "always Yes",
        "always No",
        "gold letters",
        "uniform",
        "most frequent SA",
        "best",
    ]
    scores = [[k, v] for k, v in sorted(f["trivial"]["react_score"].items())]
    return (
        '<p class="muted">Accuracy of a model that gives one fixed answer (or guesses uniformly); short answers count only '
        "when equal to the gold after normalising. React-Score in percent, on the main set of targeted items.</p>"
        + table(head, rows)
        + "<h3>React-Score of each trivial model</h3>"
        + table(["model", "React-Score"], scores)
    )


def _blind(f: dict[str, Any]) -> str:
    b = f["blind_prior"]
    if "per_task" not in b:
        return f'<p class="muted">{escape(b.get("unavailable", "not computed"))}</p>'
    rows = [
        [
            t,
            _pct(v.get("targeted")),
            v.get("n_targeted"),
            _pct(v.get("control")),
            v.get("n_control"),
            _pct(v.get("beaf")),
            v.get("n_beaf"),
        ]
        for t, v in b["per_task"].items()
    ]
    npq = b["not_probing"]
    listed = table(
        ["id", "task", "qid", "question", "gold"],
        [[q["id"], q["task"], q["qid"], q["text"], q["gold"]] for q in npq["questions"]],
    )
    return (
        '<p class="muted">A model that reads only the question and believes the mined statistics (named objects are there, '
        "objects have their usual attribute, counts are typical, nothing changed). Also an evaluation backend: "
        "<code>reactbench eval --model prior:blind-v1</code>.</p>"
        + table(["task", "targeted", "n", "control", "n", "BEAF", "n"], rows)
        + f"<p>React-Score (exact-match short answers): {b['react_score']}</p>"
        + f"<h3>Does not probe the prior: {npq['count']} targeted questions ({_pct(npq['share_of_targeted'])}) answered right without the image</h3>"
        + listed
        + (
            f'<p class="muted">first {len(npq["questions"])} listed</p>'
            if npq["count"] > len(npq["questions"])
            else ""
        )
    )


def _balance(f: dict[str, Any]) -> str:
    bal = f["balance"]
    yes = table(["task / set", "gold yes-ratio"], [[k, _pct(v)] for k, v in bal["yes_ratio"].items()])
    mc_rows = []
    for k, v in bal["mc"].items():
        mc_rows.append(
            [
                k,
                " ".join(f"{x}:{n}" for x, n in v["letters"].items()),
                v["chi2"],
                v["p"],
                f"{_pct(v['longest_option'].get('accuracy'))}{' *' if v['longest_option'].get('predicts') else ''}",
                f"{_pct(v['shortest_option'].get('accuracy'))}{' *' if v['shortest_option'].get('predicts') else ''}",
                f"{v['position']['letter']} {_pct(v['position'].get('accuracy'))}{' *' if v['position'].get('predicts') else ''}",
                _pct(v["position"].get("chance")),
            ]
        )
    mc = table(
        ["task", "gold letters", "chi-square", "p", "longest option", "shortest option", "commonest letter", "chance"],
        mc_rows,
    )
    ent = table(
        ["task", "SA entropy (bits)", "distinct golds", "n"],
        [[t, v["bits"], v["distinct"], v["n"]] for t, v in bal["sa_entropy"].items()],
    )
    return (
        yes
        + "<h3>Multiple choice (first presentation of each question)</h3>"
        + mc
        + '<p class="muted">* above chance by more than two standard errors: the rule predicts the gold.</p>'
        + ent
    )


def _duplicates(f: dict[str, Any]) -> str:
    d = f["duplicates"]
    rows = [
        ["questions whose exact text + gold recur in another item", d["questions_exact_text"]["questions"]],
        ["... near-identical text + gold", d["questions_near_text"]["questions"]],
        ["duplicate questions (same text + gold, same image(s))", d["questions_near_duplicate"]],
        ["duplicate question share", _pct(d["duplicate_question_share"])],
        ["distinct source images (hashed)", d["images"]],
        ["source images missing or unreadable (not hashed)", d["images_unreadable"]],
        [f"near-duplicate image pairs (pHash distance <= {d['max_distance']})", d["image_pairs"]],
        ["... of which across tasks (release configs)", d["image_pairs_across_tasks"]],
        ["items with a near-duplicate source image", d["items_near_duplicate_image"]],
        ["duplicate image share", _pct(d["duplicate_image_share"])],
        ["items sharing a source image with another item (by design)", d["items_sharing_a_source_image"]],
    ]
    pairs = table(
        ["images", "distance", "items", "across tasks"],
        [[" / ".join(p["images"]), p["distance"], ", ".join(p["items"]), p["across_tasks"]] for p in d["pairs"]],
    )
    return table(["figure", "value"], rows) + (pairs if d["pairs"] else "")


def _table2(f: dict[str, Any]) -> str:
    t2 = f["table2"]
    rows = [
        [
            t,
            v["questions"],
            v["paper_questions"],
            v["questions_ratio"],
            v["images"],
            v["paper_images"],
            v["images_ratio"],
            _pct(t2["task_share"][t]["ours"]),
            _pct(t2["task_share"][t]["paper"]),
        ]
        for t, v in t2["tasks"].items()
    ]
    rows.append(
        [
            "total",
            t2["total"]["questions"],
            t2["total"]["paper_questions"],
            t2["total"]["questions_ratio"],
            None,
            None,
            None,
            None,
            None,
        ]
    )
    types = table(
        ["task", "question types", "dimensions"],
        [
            [
                t,
                " ".join(f"{k}:{n}" for k, n in v.items()),
                " ".join(f"{k}:{n}" for k, n in t2["dimensions"].get(t, {}).items()),
            ]
            for t, v in t2["question_types"].items()
        ],
    )
    return (
        table(
            ["task", "questions", "paper", "ours / paper", "images", "paper", "ours / paper", "share", "paper share"],
            rows,
        )
        + types
    )


def figures_beside(report: str) -> str:
    """Where the figures of the health page at ``report`` (a path or URL ending .html) are kept: the
    same name with .json, beside the page (``reports/health.json`` in the run by default), so a
    report written elsewhere (``--out``, a read-only run) writes nothing into the run."""
    return (report[: -len(".html")] if report.endswith(".html") else report) + ".json"


def health_page(run: RunFS, config: BuildConfig | None) -> tuple[str, str]:
    """Compute the figures (``config``: the resolved run config, for its ``health`` thresholds);
    returns the page and the figures as JSON text (kept beside the page: :func:`figures_beside`)."""
    f = compute_health(run, config)
    return render_health_figures(run, f), json.dumps(f, indent=1, sort_keys=True, default=str)


def render_health_figures(run: RunFS, f: dict[str, Any]) -> str:
    """The HTML page of the figures ``f`` of ``run``."""
    problems = f["problems"]
    verdict = (
        "<ul>" + "".join(f"<li>{escape(p)}</li>" for p in problems) + "</ul>"
        if problems
        else "<p>No figure is over the <code>health:</code> thresholds.</p>"
    )
    sections = [
        (
            "Summary",
            f"<p>{escape(health_biases_text(f))}</p><h3>Over the health: thresholds (export --strict refuses)</h3>"
            + verdict,
        ),
        ("Trivial baselines", _trivial(f)),
        ("Blind prior baseline", _blind(f)),
        ("Balance", _balance(f)),
        ("Duplicates", _duplicates(f)),
        ("Beside the paper's Table 2", _table2(f)),
    ]
    balanced = f["balance_yes_no"]
    sub = f"run {run.url}; {f['source']}; {f['questions']:,} questions; qa.balance_yes_no: {'n/a' if balanced is None else balanced}"
    banner = "UNVERIFIED BUILD: questions straight from qa/questions, no human review" if f["unverified"] else None
    return page("Benchmark health", sections, banner=banner, subtitle=sub)


def read_health_figures(report: str) -> dict[str, Any]:
    """The figures kept beside the health page at ``report`` (what :func:`write_report` returned)."""
    where = RunFS.open(figures_beside(report))
    folder, name = posixpath.split(where.root)
    return json.loads(RunFS(where.fs, folder or "/").read_text(name))
