"""``reactbench audit`` on a demo build of the sample: every gold answer true of its image, and
tampered gold answers caught."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

import pytest
import yaml

from flows.config import CONFIG_DIR, config_from_dict
from flows.runtime import run_pipeline
from storage.fs import RunFS
from storage.image_store import ImageStore
from storage.parquet_io import ArtifactReader
from storage.schemas import ANALYSIS, EDITS, QUESTIONS
from tasks.tools.audit import audit_item, run_audit


@pytest.fixture(scope="module")
def demo_run(demo_run: Path) -> RunFS:
    """The session's demo build (tests/conftest.py), only read here (the audit takes no lease)."""
    return RunFS.open(str(demo_run))


def test_demo_gold_answers_are_all_true(demo_run: RunFS, sample_dir: Path):
    out = run_audit(demo_run, sample_dir / "sample_truth.json")
    assert out["fraction"] == 1.0, json.dumps(out["per_task"], indent=1)[:3000]
    assert set(out["per_task"]) == {
        "relational_erasure",
        "counterfactual_attribute",
        "alteration_tracing",
        "dense_counting",
    }
    assert all(t["items"] >= 20 for t in out["per_task"].values()), {k: v["items"] for k, v in out["per_task"].items()}
    # without truth: the verification verdicts only
    plain = run_audit(demo_run, None)
    assert plain["mode"] == "verification" and plain["items"] == out["items"]


def _item(run: RunFS, task: str) -> tuple[dict, list[dict], dict]:
    edits = [e for e in ArtifactReader(run, "edit/edits", EDITS).rows() if e["task"] == task and e["status"] == "ok"]
    edit = sorted(edits, key=lambda e: e["id"])[0]
    qs = [q for q in ArtifactReader(run, "qa/questions", QUESTIONS).rows() if q["edit_id"] == edit["id"]]
    fields = next(
        json.loads(a["fields_json"])
        for a in ArtifactReader(run, "qa/analysis", ANALYSIS).rows()
        if a["edit_id"] == edit["id"]
    )
    return edit, qs, fields


def test_tampered_gold_answers_are_caught(demo_run: RunFS, sample_dir: Path):
    truth = json.loads((sample_dir / "sample_truth.json").read_text())
    images = ImageStore(demo_run)
    # CA: the gold colour is not the one the object shows
    edit, qs, fields = _item(demo_run, "counterfactual_attribute")
    assert audit_item(edit, qs, fields, truth, images).consistent
    shown = json.loads(edit["qc_json"])["editor_meta"]["value"]
    wrong = "green" if shown != "green" else "purple"
    assert not audit_item(edit, qs, dict(fields, C_new_attribute=wrong), truth, images).consistent
    # DC: a count question whose gold is off by one
    edit, qs, fields = _item(demo_run, "dense_counting")
    q5 = next(q for q in qs if q["qid"] == "Q5")
    bad = [dict(q, gold=str(int(q5["gold"]) + 1)) if q is q5 else q for q in qs]
    assert (
        audit_item(edit, qs, fields, truth, images).consistent
        and not audit_item(edit, bad, fields, truth, images).consistent
    )
    # RE: the edit record says nothing was erased (a removal that left the object)
    edit, qs, fields = _item(demo_run, "relational_erasure")
    assert audit_item(edit, qs, fields, truth, images).consistent
    assert not audit_item(dict(edit, mask_image=None), qs, fields, truth, images).consistent
    # BEAF: "is there X?" with the wrong gold on the edited image
    beaf = [q for q in qs if q["question_set"] == "beaf" and q["image_role"] == "edited"]
    if beaf:
        flipped = [dict(q, gold="No" if q["gold"] == "Yes" else "Yes") if q is beaf[0] else q for q in qs]
        assert not audit_item(edit, flipped, fields, truth, images).consistent


# --------------------------------------------------------------------------- at scale
SCALED_IMAGES = 900  # the demo sample x5: alteration tracing had two wrong gold answers here (a control
# object of the target's class, "rock" beside "stone"; a control of two instances, one cut by the edit)


@pytest.fixture(scope="module")
def scaled_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunFS, Path]:
    from miners.sample_data import generate_sample

    data_dir = tmp_path_factory.mktemp("scaled-sample")
    generate_sample(data_dir, seed=0, vg_images=SCALED_IMAGES)
    data = yaml.safe_load((CONFIG_DIR / "demo.yaml").read_text())
    data["sources"] = {"visual_genome": str(data_dir / "visual_genome")}
    data["mine"]["tasks"] = ["relational_erasure", "alteration_tracing"]
    data["mine"]["relational_erasure"]["images_per_pair"] = 50
    data["mine"]["alteration_tracing"]["max_images"] = 120
    root = tmp_path_factory.mktemp("scaled") / "run"
    run_pipeline(config_from_dict(data), str(root), orchestrator="local")
    return RunFS.open(str(root)), data_dir


def test_a_scaled_build_has_every_gold_answer_true(scaled_run: tuple[RunFS, Path]):
    run, data_dir = scaled_run
    out = run_audit(run, data_dir / "sample_truth.json")
    assert out["fraction"] == 1.0, json.dumps(out["per_task"], indent=1)[:3000]
    assert (
        out["per_task"]["alteration_tracing"]["items"] >= 80 and out["per_task"]["relational_erasure"]["items"] >= 150
    ), out["per_task"]
    # the claims the audit checks were refused before the queue, each with its reason
    reasons = json.dumps(
        [json.loads(e["qc_json"])["verification"]["failures"] for e in ArtifactReader(run, "edit/edits", EDITS).rows()]
    )
    assert "also covers more than" in reasons


def test_the_audit_command_leaves_a_summary_line_then_its_json(demo_run: RunFS, sample_dir: Path):
    """In a log (no terminal): no bar, one line saying what was checked and how long it took, and
    the JSON line last."""
    import re

    from typer.testing import CliRunner

    from flows.cli import app

    res = CliRunner().invoke(
        app, ["audit", "--run-dir", demo_run.url, "--truth", str(sample_dir / "sample_truth.json")]
    )
    assert res.exit_code == 0, res.output
    lines = res.output.strip().splitlines()
    n = json.loads(lines[-1])["items"]
    assert re.fullmatch(
        rf"audit: {n:,} queued items checked against the truth in \d+\.\d s \({n:,} consistent\)", lines[0]
    ), lines[0]
    assert "\x1b" not in res.output


@pytest.fixture(scope="module")
def balanced_run(demo_run: RunFS, tmp_path_factory: pytest.TempPathFactory) -> RunFS:
    """The demo build again with ``qa.balance_yes_no`` on: a copy, so only qa and review rerun."""
    import shutil

    root = tmp_path_factory.mktemp("balance") / "run"
    shutil.copytree(demo_run.path(""), root)
    data = yaml.safe_load((root / "config.yaml").read_text())
    data["qa"]["balance_yes_no"] = True
    run_pipeline(config_from_dict(data), str(root), orchestrator="local")
    return RunFS.open(str(root))


def trivial(rows: list[dict]) -> dict[tuple[str, str], float]:
    """(task, group) -> the best of always-Yes / always-No accuracy over YN rows, grouped by the
    task alone (``YN``) and by each question set."""
    counts: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for r in rows:
        if r["qtype"] == "YN":
            counts[(r["task"], "YN")][r["gold"]] += 1
            counts[(r["task"], r["question_set"])][r["gold"]] += 1
    return {k: max(c["Yes"], c["No"]) / sum(c.values()) for k, c in counts.items()}


def test_balanced_build_passes_audit_and_no_trivial_model_beats_60(
    demo_run: RunFS, balanced_run: RunFS, sample_dir: Path
):
    off = trivial(ArtifactReader(demo_run, "qa/questions", QUESTIONS).rows())
    assert off[("counterfactual_attribute", "YN")] == 1.0  # the paper's design: every CA YN gold is "No"
    rows = ArtifactReader(balanced_run, "qa/questions", QUESTIONS).rows()
    best = trivial(rows)
    assert {t for t, _ in best} == {
        "relational_erasure",
        "counterfactual_attribute",
        "alteration_tracing",
        "dense_counting",
    }
    over = {k: v for k, v in best.items() if v > 0.6}
    assert not over, over
    twins = [r for r in rows if r["question_set"] == "twin"]
    assert {r["task"] for r in twins} == {"relational_erasure", "counterfactual_attribute", "alteration_tracing"}
    ca_yes = [
        r
        for r in rows
        if r["task"] == "counterfactual_attribute" and r["question_set"] == "main" and r["gold"] == "Yes"
    ]
    assert ca_yes and all(r["prior_options"] == ["No"] for r in ca_yes)  # HalluRate: "No" is the prior's answer
    assert len({r["id"] for r in rows}) == len(rows)
    assert json.loads(balanced_run.read_text("qa/_manifest.json"))["extra"]["balance_yes_no"] is True
    out = run_audit(balanced_run, sample_dir / "sample_truth.json")
    assert out["fraction"] == 1.0, json.dumps(out["per_task"], indent=1)[:3000]
    assert all(t["items"] >= 20 for t in out["per_task"].values()), out["per_task"]
