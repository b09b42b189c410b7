"""When qa output changes under an existing queue (e.g. ``qa.beaf: false``), the review stage
reconciles: items whose questions are gone are retired (an event; their decisions stay in the
log), new ones are added, the summary says so, and putting the questions back restores them."""

from __future__ import annotations

import pytest
from review_helpers import fill_queue, make_run, write_stage

from storage.hashing import stable_id
from storage.schemas import QUESTIONS
from tasks.review.accounts import add_user, get_user
from tasks.review.export import export_review
from tasks.review.queue import ReviewQueue
from tasks.review.rules import NotAllowed


def _with_beaf(questions, edits, n):
    """BEAF questions for the first ``n`` edits (as qa.beaf: true adds them)."""
    extra = []
    for e in edits[:n]:
        base = next(q for q in questions if q["edit_id"] == e["id"])
        extra.append(
            {
                **base,
                "id": stable_id(e["id"], "beaf", "B1"),
                "question_set": "beaf",
                "qid": "B1",
                "text": "Is the cup gone?",
                "qtype": "YN",
                "options": None,
                "gold": "Yes",
            }
        )
    return questions + extra


def test_changed_qa_output_retires_and_adds_items(tmp_path):
    run, edits, questions = make_run(tmp_path / "run", 6)
    write_stage(run, "qa", "questions", QUESTIONS, _with_beaf(questions, edits, 3))
    first = fill_queue(run)
    url = first.extra["queue_db"]
    assert first.extra["queue_items_added"] == 12 and "note" not in first.extra
    q = ReviewQueue.open(url)
    add_user(q.engine, "ann", "annotator")
    ann = get_user(q.engine, "ann")
    while ids := q.next_items(ann, "edit", want=1):
        q.decide(ann, ids[0], "accept")
    qa_ids = q.next_items(ann, "qa", want=6)
    for i in qa_ids[:4]:
        q.decide(ann, i, "accept")
    held = qa_ids[4:]  # leased, not decided
    old_qa = {r.edit_id: r.id for r in q.items() if r.stage == "qa"}
    decisions_before = [e.id for e in q.events(kinds=("decision",))]

    # qa rebuilt with qa.beaf: false -> the three edits with BEAF questions have other questions now
    write_stage(run, "qa", "questions", QUESTIONS, questions)
    second = fill_queue(run)
    assert second.extra["queue_items_retired"] == 3 and second.extra["queue_items_added"] == 3
    assert "3 items retired" in second.extra["note"] and "3 added" in second.extra["note"]
    items = q.items()
    live = {r.id for r in q.items(live_only=True)}
    assert len(items) == 15 and len(live) == 12  # nothing deleted
    retired = {old_qa[e["id"]] for e in edits[:3]}
    assert retired.isdisjoint(live) and all(old_qa[e["id"]] in live for e in edits[3:])
    assert [e.id for e in q.events(kinds=("decision",))] == decisions_before  # decisions kept in the log
    assert {e.item_id for e in q.events(kinds=("retire",))} == retired
    for i in retired & set(held):
        with pytest.raises(NotAllowed, match="retired"):
            q.decide(ann, i, "accept")
    # the replacements are open for review (their edits were accepted) and export sees only live items
    fresh = q.next_items(ann, "qa", want=6)
    assert set(fresh).isdisjoint(retired) and len(set(fresh) - set(held)) == 3
    for i in q.next_items(ann, "qa", want=6):
        q.decide(ann, i, "accept")
    summary = export_review(run, q)
    assert summary.verified_edits == 6 and summary.verified_questions == 18  # no BEAF question exported
    assert q.progress(ann, "qa")["total"] == 6

    # a rerun with the same qa output changes nothing; the old questions back restore the old items
    assert fill_queue(run).extra["queue_items_added"] == 0
    write_stage(run, "qa", "questions", QUESTIONS, _with_beaf(questions, edits, 3))
    third = fill_queue(run)
    assert (
        third.extra["queue_items_restored"] == 3
        and third.extra["queue_items_retired"] == 3
        and third.extra["queue_items_added"] == 0
    )
    assert {r.id for r in q.items(live_only=True)} >= retired


def test_rebuilding_qa_with_beaf_off_reconciles_the_queue_end_to_end(sample_dir, tmp_path):
    """A real ``reactbench build`` (subprocess) with ``qa.beaf: true``, some decisions, then the
    same build with ``qa.beaf: false``: the build says what it retired and added, no live item
    holds a BEAF question, and the decisions made before are still in the log."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    import yaml

    from storage.fs import RunFS

    root = Path(__file__).resolve().parents[2]
    cli = str(Path(sys.executable).with_name("reactbench"))
    data = yaml.safe_load((root / "configs" / "demo.yaml").read_text())
    data["sources"] = {"visual_genome": str(sample_dir / "visual_genome"), "fsc147": str(sample_dir / "fsc147")}
    data["mine"]["tasks"] = ["relational_erasure"]  # the task with BEAF questions; small and quick
    data["mine"]["relational_erasure"]["images_per_pair"] = 2
    run_dir = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}

    def build(beaf: bool) -> str:
        cfg = tmp_path / f"beaf-{beaf}.yaml"
        cfg.write_text(yaml.safe_dump({**data, "qa": {**data["qa"], "beaf": beaf}}))
        proc = subprocess.run(
            [cli, "build", "--config", str(cfg), "--run-dir", str(run_dir)],
            capture_output=True,
            text=True,
            env={**env, "COLUMNS": "200"},
            timeout=600,
            cwd=root,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc.stdout + proc.stderr

    build(True)
    q = ReviewQueue.open(f"sqlite:///{run_dir / 'review' / 'queue.sqlite'}")

    def beaf_items() -> set[str]:
        return {
            r.id
            for r in q.items(with_payload=True, live_only=True)
            if any(x["question_set"] == "beaf" for x in json.loads(r.payload_json).get("questions", []))
        }

    with_beaf = beaf_items()
    assert with_beaf, "the sample build should have BEAF questions"
    add_user(q.engine, "ann", "annotator")
    ann = get_user(q.engine, "ann")
    while ids := q.next_items(ann, "edit", want=1):
        q.decide(ann, ids[0], "accept")
    decided_qa = q.next_items(ann, "qa", want=1)[0]
    q.decide(ann, decided_qa, "accept")
    decisions = [e.id for e in q.events(kinds=("decision",))]

    out = build(False)
    assert f"{len(with_beaf)} items retired (kept in the event log), {len(with_beaf)} added" in out
    assert beaf_items() == set()
    assert {e.item_id for e in q.events(kinds=("retire",))} == with_beaf
    assert [e.id for e in q.events(kinds=("decision",))] == decisions  # nothing deleted
    assert decided_qa in with_beaf and decided_qa not in {r.id for r in q.items(live_only=True)}
    manifest = json.loads((run_dir / "review" / "_manifest.json").read_text())
    assert manifest["extra"]["queue_items_retired"] == len(with_beaf)
    assert RunFS.open(str(run_dir)).exists("review", "queue.sqlite")
