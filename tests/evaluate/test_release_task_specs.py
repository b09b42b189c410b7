"""The release side reads each task from its TaskSpec: a registered fifth task is weighed,
judged, answered by the rules backend and exported with no change to the core."""

import json

import pytest

import tasks.engine.registry as task_registry
from prompts.eval_rules import PRIOR_RULES
from prompts.offline_judge import COUNT, OVERLAP, offline_judge
from storage.task_spec import TaskSpec, all_tasks, register_task
from tasks.engine.prompt_hooks import eval_answers, judge_rule
from tasks.release.evaluate.summary import benchmark_weights, summarize
from tasks.release.export.card import task_text
from tasks.release.export.lmms_eval import all_tasks_yaml, support_files, task_table
from tasks.release.items import prior_terms, probes_prior

FIFTH = TaskSpec(
    id="spatial_relation",
    short="SR",
    label="Spatial relation",
    weight=0.2,
    order=50,
    probes_prior=True,
    card_text="SR: one object is moved so a spatial relation no longer holds.",
    eval_text={"label": "spatial relation", "cause": "relation priors", "note": "an object was moved."},
    subcauses=(("SC-1", "relation prior", "states the usual relation"),),
)


@pytest.fixture
def fifth(monkeypatch):
    monkeypatch.setattr(task_registry.REGISTRY, "registered", {})
    task_registry._all.cache_clear()
    register_task(FIFTH)
    yield FIFTH
    monkeypatch.undo()
    task_registry._all.cache_clear()


def _rows(task, n=2):
    return [
        {
            "task": task,
            "mode": m,
            "qtype": q,
            "qid": f"{q}{i}",
            "edit_id": f"{task}-e",
            "question_set": "main",
            "correct": i == 0,
            "status": "ok",
            "editor": "ed",
            "variant": "targeted",
        }
        for m in ("standard", "cot")
        for q in ("YN", "MC", "SA")
        for i in range(n)
    ]


def test_builtin_weights_sum_to_one():
    builtin = [
        s for s in all_tasks().values() if s.modules[0].startswith("tasks.builtin_tasks.")
    ]  # not installed plugins
    assert len(builtin) == 4 and sum(s.weight for s in builtin) == pytest.approx(1.0)


def test_fifth_task_is_weighed_and_renormalised(fifth):
    builtins = [t for t in all_tasks() if t != fifth.id]
    rows = [r for t in builtins for r in _rows(t)] + _rows(fifth.id)
    weights = benchmark_weights(rows)
    assert list(weights) == [*builtins, fifth.id] and weights[fifth.id] == 0.2
    m = summarize(rows)
    assert m["react"]["per_task"][fifth.id] == 50.0 and m["react"]["complete"]
    assert m["react"]["react_score"] == 50.0  # every S_t is 50, whatever the shares
    # a run without the fifth task is not marked incomplete by the plugin being installed
    assert fifth.id not in summarize([r for t in builtins for r in _rows(t)])["react"]["missing"]


def test_fifth_task_defaults_on_the_rules_side(fifth):
    answers = eval_answers()
    assert answers.rules_for(fifth.id) is PRIOR_RULES and answers.judge_rule(fifth.id) == OVERLAP
    assert judge_rule(fifth.id) == OVERLAP
    assert answers.classify_subcause(fifth.id, "left of the table, as usual") == "other"
    ann = {"task": fifth.id, "prior_terms": ["left"], "objects": ["cup"]}
    assert (
        answers.baseline_answer(
            {"task": fifth.id, "qtype": "YN", "question": "Is the cup left of the plate?", "annotations": ann}
        )
        == "Yes"
    )
    assert probes_prior(fifth.id) and prior_terms({"task": fifth.id}) == []


def test_builtin_hooks():
    by_short = {s.short: t for t, s in all_tasks().items()}
    assert judge_rule(by_short["DC"]) == COUNT and eval_answers().judge_rule(by_short["DC"]) == COUNT
    assert prior_terms({"task": by_short["RE"], "target_name": "saddle"}) == ["saddle"]
    assert prior_terms({"task": by_short["CA"], "original_attribute": "red"}) == ["red"]
    assert prior_terms({"task": by_short["AT"], "target_name": "cup"}) == []


def test_unknown_judge_rule_is_named():
    with pytest.raises(ValueError, match="unknown judging rule"):
        offline_judge("a cup", "a cup", rule="nope")


def test_fifth_task_in_the_lmms_eval_table_and_card(fifth):
    tasks = list(all_tasks())
    table = task_table(sorted(tasks))
    assert [e["id"] for e in table] == tasks and table[-1] == {
        "id": fifth.id,
        "short": "SR",
        "weight": 0.2,
        "judge": OVERLAP,
        "note": "an object was moved.",
    }
    assert json.loads(support_files(tasks)["reactbench_tasks.json"]) == table
    assert "utils.aggregate_s_sr" in all_tasks_yaml(tasks)
    assert task_text(fifth.id).startswith("SR: ")


def test_shipped_utils_aggregate_every_task_of_the_table(fifth, tmp_path, monkeypatch):
    import importlib.util
    import sys

    from tasks.release.export.lmms_eval import UTILS_PY

    tasks = list(all_tasks())
    for name, text in {**support_files(tasks), "utils.py": UTILS_PY}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    for mod in ("reactbench_parsing", "reactbench_judge", "reactbench_metrics"):
        monkeypatch.delitem(sys.modules, mod, raising=False)
    spec = importlib.util.spec_from_file_location("rb_utils_test", tmp_path / "utils.py")
    utils = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(utils)
    rows = [dict(r, rotation=None, image_role="single") for t in tasks for r in _rows(t)]
    assert utils.aggregate_s_sr(rows) == 50.0 and utils.aggregate_react_score(rows) == 50.0
    assert utils.WEIGHTS[fifth.id] == 0.2
    assert utils.verdict(
        {
            "qtype": "SA",
            "answer": "the cup",
            "rubric": "{}",
            "prior_terms": [],
            "question_set": "main",
            "task": fifth.id,
        },
        "the cup",
    )
