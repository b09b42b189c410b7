"""The review stage fills the queue idempotently; export writes verified Parquet and the
pseudonymised decision log; Label Studio tasks go out and decisions come back in."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from review_helpers import context, fill_queue, make_run

from storage.parquet_io import ArtifactReader
from tasks.engine.runner import run_stage
from tasks.review import ReviewStage
from tasks.review.accounts import add_user, get_user
from tasks.review.export import export_review
from tasks.review.labelstudio import export_tasks, import_decisions
from tasks.review.queue import ReviewQueue


def test_stage_enqueues_once_and_rejects_with_reasons(tmp_path):
    run, edits, _ = make_run(tmp_path / "run", 5, auto_rejected=2, missing_image=1)
    s1 = fill_queue(run)
    # 5 ok edits, 2 auto-rejected ones, 1 whose edited image is not in the store
    assert s1.reject_reasons == {"not_queued_auto_rejected": 2, "image_missing": 1}
    assert s1.extra["edits_queued"] == 5 and s1.extra["queue_items_added"] == 10
    s2 = fill_queue(run)
    assert s2.all_skipped and s2.extra["queue_items_added"] == 0
    q = ReviewQueue.open(s1.extra["queue_db"])
    assert len(q.items()) == 10
    # a config change resets the stage's shards but keeps the database (with its decisions)
    add_user(q.engine, "ann", "annotator")
    ann = get_user(q.engine, "ann")
    q.decide(ann, q.next_items(ann, "edit", 1)[0], "accept")
    s3 = fill_queue(run, queue_auto_rejected=True)
    assert s3.shards_run > 0 and s3.extra["queue_items_added"] == 4  # the two auto-rejected edits
    assert len(q.events(kinds=("decision",))) == 1


def test_edit_without_questions_is_a_reject(tmp_path):
    run, _, _ = make_run(tmp_path / "run", 4, skip_questions=1)
    s = fill_queue(run)
    assert s.reject_reasons == {"no_questions": 1}
    rejects = ArtifactReader(run, "review/rejects", "rejects").rows()
    assert rejects[0]["stage"] == "review" and "qa/questions" in rejects[0]["detail"]


def test_export_without_decisions_is_empty_with_message(filled_run):
    run, url, _, _ = filled_run
    q = ReviewQueue.open(url)
    summary = export_review(run, q)
    assert "no review decisions yet" in summary.message
    for name in ("verified_edits", "verified_questions", "decisions"):
        assert pq.read_table(summary.paths[name]).num_rows == 0


def test_export_applies_inline_edits_and_pseudonymises(filled_run):
    run, url, edits, questions = filled_run
    q = ReviewQueue.open(url)
    add_user(q.engine, "Alice Realname", "annotator")
    ann = get_user(q.engine, "Alice Realname")
    first = q.next_items(ann, "edit", 1)[0]
    q.decide(ann, first, "accept")
    second = q.next_items(ann, "edit", 1)[0]
    q.decide(ann, second, "reject", ["artifacts"])
    qa = q.get_item(ann, q.next_items(ann, "qa", 1)[0])
    q1, q2, q3 = qa.questions
    q.decide(
        ann,
        qa.id,
        "accept",
        question_updates={
            q2["id"]: {"text": "Which object is on the table?", "gold": "A"},
            q3["id"]: {"invalid": True},
        },
    )

    summary = export_review(run, q)
    assert (summary.verified_edits, summary.verified_questions, summary.dropped_questions) == (1, 2, 1)
    ve = pq.read_table(summary.paths["verified_edits"]).to_pylist()
    assert ve[0]["id"] == qa.edit_id
    trail = json.loads(ve[0]["decisions_json"])
    assert trail["edit"]["outcome"] == "accept" and trail["qa"]["decisions"][0]["annotator"] == "annotator_001"
    vq = {r["qid"]: r for r in pq.read_table(summary.paths["verified_questions"]).to_pylist()}
    assert set(vq) == {"Q1", "Q2"}
    assert vq["Q2"]["text"] == "Which object is on the table?" and vq["Q2"]["gold"] == "A"
    assert vq["Q1"] == {k: v for k, v in next(x for x in questions if x["id"] == q1["id"]).items()}
    log = pq.read_table(summary.paths["decisions"]).to_pylist()
    assert {r["action"] for r in log} >= {"accept", "reject", "question_edit", "question_invalid"}
    assert all(r["annotator"] == "annotator_001" for r in log)
    raw = b"".join(open(p, "rb").read() for p in summary.paths.values())
    assert b"Alice" not in raw
    # same database -> byte-identical files
    before = {k: open(p, "rb").read() for k, p in summary.paths.items()}
    export_review(run, q)
    assert {k: open(p, "rb").read() for k, p in summary.paths.items()} == before


def test_labelstudio_round_trip(filled_run, tmp_path):
    run, url, _, _ = filled_run
    q = ReviewQueue.open(url)
    out = tmp_path / "ls" / "tasks.json"
    exported = export_tasks(q, out)
    assert exported.files["edit"][2] == 6 and exported.files["qa"][2] == 0 and exported.qa_waiting == 6
    tasks = json.loads(out.read_text())
    assert "editor" not in json.dumps(tasks)  # blind: the editor is not exported
    assert (tmp_path / "ls" / "tasks.label_config.xml").read_text().count("<Choice ") == 8
    assert json.loads((tmp_path / "ls" / "tasks.qa.json").read_text()) == []
    ls_export = [
        {
            "id": 1,
            "data": tasks[0]["data"],
            "annotations": [
                {
                    "id": 11,
                    "completed_by": {"email": "x@lab.org"},
                    "result": [
                        {
                            "from_name": "verdict",
                            "to_name": "edited",
                            "type": "choices",
                            "value": {"choices": ["reject"]},
                        },
                        {
                            "from_name": "reasons",
                            "to_name": "edited",
                            "type": "choices",
                            "value": {"choices": ["ghost_remnants"]},
                        },
                    ],
                },
                {"id": 12, "completed_by": 7, "was_cancelled": True, "result": []},
            ],
        },
        {
            "id": 2,
            "data": tasks[1]["data"],
            "annotations": [
                {"id": 21, "completed_by": 7, "result": [{"from_name": "verdict", "value": {"choices": ["reject"]}}]}
            ],
        },  # reject without reason
        {"id": 3, "data": {}, "annotations": []},
        {
            "id": 4,
            "data": tasks[2]["data"],
            "annotations": [{"id": 41, "completed_by": 7, "result": ["accept"]}],
        },  # not a result entry
    ]
    path = tmp_path / "export.json"
    path.write_text(json.dumps(ls_export))
    s1 = import_decisions(q, path)
    assert s1.imported == 1
    assert sorted(r["reason"] for r in s1.rejected) == [
        "cancelled",
        "invalid_annotation",
        "invalid_annotation",
        "missing_item_id",
    ]
    assert q.resolutions()[tasks[0]["data"]["item_id"]] == ("reject", 1)
    assert [r["detail"] for r in s1.rejected if r["reason"] == "invalid_annotation"] == [
        "a rejection needs at least one reason code",
        "a result entry without a 'value' object: \"accept\"",
    ]
    s2 = import_decisions(q, path)
    assert s2.imported == 0 and s2.already_imported == 1
    assert len(q.events(kinds=("decision",))) == 1


def test_labelstudio_qa_tasks_carry_question_edits(filled_run, tmp_path):
    """QA tasks appear once their edit is accepted; a question rewritten, re-keyed or marked
    invalid in Label Studio arrives as question events with the decision, once; a bad edit
    (a gold answer a yes/no question cannot have) is refused whole, naming the question."""
    _run, url, _, _ = filled_run
    q = ReviewQueue.open(url)
    out = tmp_path / "ls" / "tasks.json"
    edit_tasks = json.loads(out.read_text()) if export_tasks(q, out) else []
    accept = [{"from_name": "verdict", "value": {"choices": ["accept"]}}]
    path = tmp_path / "edit_export.json"
    path.write_text(
        json.dumps(
            [
                {
                    "id": i,
                    "data": t["data"],
                    "annotations": [
                        {"id": 100 + i, "completed_by": {"id": 1, "email": "a@lab.org"}, "result": accept}
                    ],
                }
                for i, t in enumerate(edit_tasks[:2])
            ]
        )
    )
    assert import_decisions(q, path).imported == 2
    exported = export_tasks(q, out)
    assert exported.files["qa"][2] == 2 and exported.qa_waiting == 4
    qa = json.loads(exported.files["qa"][0].read_text())
    assert [x["qid"] for x in qa[0]["data"]["questions"]] == ["Q1", "Q2", "Q3"]
    assert "gold: B" in qa[0]["data"]["questions"][1]["shown"]
    result = [
        {"from_name": "verdict", "value": {"choices": ["accept"]}},
        {"from_name": "text_0", "value": {"text": ["Is a cup still on the table?"]}},
        {"from_name": "options_1", "value": {"text": ["a cup\nnothing\na plate"]}},
        {"from_name": "invalid_2", "value": {"choices": ["invalid"]}},
        {"from_name": "gold_0", "value": {"text": [""]}},  # left empty: unchanged
    ]
    bad = [
        {"from_name": "verdict", "value": {"choices": ["accept"]}},
        {"from_name": "gold_0", "value": {"text": ["Maybe"]}},
    ]
    path = tmp_path / "qa_export.json"
    path.write_text(
        json.dumps(
            [
                {"id": 1, "data": qa[0]["data"], "annotations": [{"id": 7, "completed_by": 2, "result": result}]},
                {"id": 2, "data": qa[1]["data"], "annotations": [{"id": 8, "completed_by": 2, "result": bad}]},
            ]
        )
    )
    s1 = import_decisions(q, path)
    assert s1.imported == 1 and [r["detail"] for r in s1.rejected] == [
        f"question {qa[1]['data']['questions'][0]['id']}: gold: a yes/no question's gold answer must be Yes or No, got 'Maybe'"
    ]
    events = q.events(kinds=("question_edit", "question_validity"))
    qids = [x["id"] for x in qa[0]["data"]["questions"]]
    assert {(e.question_id, e.kind): json.loads(e.after_json) for e in events} == {
        (qids[0], "question_edit"): {"text": "Is a cup still on the table?", "gold": "No"},
        (qids[1], "question_edit"): {
            "text": "What is on the table?",
            "gold": "B",
            "options": ["a cup", "nothing", "a plate"],
        },
        (qids[2], "question_validity"): {"valid": False},
    }
    assert {u.name for u in q.users().values()} >= {"labelstudio:a@lab.org", "labelstudio:2"}
    s2 = import_decisions(q, path)
    assert s2.imported == 0 and s2.already_imported == 1
    assert len(q.events(kinds=("question_edit", "question_validity"))) == 3
    again = json.loads(export_tasks(q, out).files["qa"][0].read_text())  # the next export shows the edits
    assert (
        again[0]["data"]["questions"][0]["text"] == "Is a cup still on the table?"
        and "[marked invalid]" in again[0]["data"]["questions"][2]["shown"]
    )


def test_stage_refuses_remote_run_without_db_url():
    from storage.fs import RunFS
    from tasks.review.stage import default_db_url

    with pytest.raises(ValueError, match="review.db_url"):
        default_db_url(RunFS.open("memory://somewhere/run"))


def test_stage_key_ignores_lease_timeout(tmp_path):
    run, _, _ = make_run(tmp_path / "run", 2)
    st = ReviewStage()
    assert st.config_section(context(run, lease_minutes=5)) == st.config_section(context(run, lease_minutes=30))
    assert run_stage(st, context(run)).extra["edits_queued"] == 2


def test_count_queue_items(tmp_path):
    from tasks.review.queue import count_queue_items

    assert count_queue_items(str(tmp_path / "nothing")) == 0
    run, _, _ = make_run(tmp_path / "run", 3)
    fill_queue(run)
    assert count_queue_items(str(tmp_path / "run")) == 6
