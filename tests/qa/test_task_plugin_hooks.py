"""A task from outside the package plugs into the build stages through its spec alone: its
instruct prompt (template in its own folder) and rules answer, its rows, its analysis fields,
its slots, its BEAF removal and its question-template file; no core table names it."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from prompts import catalogue, rules
from prompts.clients.rules import RulesClient
from prompts.rules_api import rules_answer
from prompts.spec import PromptSpec
from storage.hashing import stable_id
from storage.schemas import CANDIDATES
from storage.task_spec import TaskSpec, register_task
from tasks.engine import registry as task_registry
from tasks.engine.prompt_hooks import rules_table, task_prompt, task_prompt_table

TASK = "toy_relation"
W, H = 64, 48
SCENE = [
    {"id": 1, "name": "cup", "box": [10, 20, 8, 8], "attributes": []},
    {"id": 2, "name": "table", "box": [0, 28, 64, 20], "attributes": []},
]


class ToyPlan(BaseModel):
    instruction: str
    edit_type: str
    destination_box: list[float]


@rules_answer("toy_relation_plan")
def toy_rules(ctx: dict[str, Any]) -> dict[str, Any] | None:
    x, y, w, h = ctx["target_box"]
    return {
        "instruction": f"Move the {ctx['target_name']} off the {ctx['partner_name']}.",
        "edit_type": "move",
        "destination_box": [x + 30, 2.0, w, h],
    }


def toy_analysis(edit: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    plan = json.loads(edit["instruction_fields_json"])
    return "from_toy_plan", {"obj": edit["target_name"], "ground": "table", "edit_type": plan["edit_type"]}


def toy_slots(edit: dict[str, Any], fields: dict[str, Any], settings: Any) -> dict[str, str]:
    return {"obj": fields["obj"], "ground": fields["ground"]}


QUESTIONS = textwrap.dedent(
    f"""\
    task: {TASK}
    version: 1
    image_role: edited
    slots: [obj, ground]
    questions:
      - qid: Q1
        type: YN
        dimension: direct
        text: Is the {{obj}} on the {{ground}}?
        gold: "No"
      - qid: Q2
        type: MC
        dimension: direct
        text: Where is the {{obj}}?
        correct: "Beside the {{ground}}"
        distractors: ["On top of the {{ground}}", "Under the {{ground}}"]
    """
)


@pytest.fixture()
def toy_task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[TaskSpec]:
    pkg = tmp_path / "toy_task_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "questions.yaml").write_text(QUESTIONS)
    (pkg / "toy_plan.j2").write_text(
        "Move the {{ target_name }} so that it is no longer {{ predicate }} the {{ partner_name }}.\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    prompt = PromptSpec("toy_relation_plan", "1", "toy_plan.j2", ToyPlan, 1, template_dir=str(pkg))
    spec = TaskSpec(
        id=TASK,
        short="TR",
        label="Toy relation",
        weight=0.1,
        order=50,
        extra={
            "instruct_prompt": prompt,  # a hook may be the value itself instead of a "module:attr" string
            "instruct_rules": toy_rules,
            "analysis_fields": toy_analysis,
            "qa_slots": toy_slots,
            "qa_beaf": lambda edit, fields, values: None,
            "qa_templates": "toy_task_pkg:questions.yaml",
        },
    )
    register_task(spec)
    from tasks.stages.qa import templates

    templates.question_set.cache_clear()
    try:
        yield spec
    finally:
        task_registry.REGISTRY.registered.pop(TASK, None)
        task_registry._all.cache_clear()
        templates.question_set.cache_clear()


def _candidate(image_path: str) -> dict[str, Any]:
    row = {name: None for name in CANDIDATES.schema.names}
    row.update(
        task=TASK,
        variant="targeted",
        source="visual_genome",
        image_id="toy",
        image_path=image_path,
        width=W,
        height=H,
        target_object_id=1,
        target_name="cup",
        target_box=[10.0, 20.0, 8.0, 8.0],
        partner_object_id=2,
        partner_name="table",
        partner_box=[0.0, 28.0, 64.0, 20.0],
        predicate="on",
        direction="target_is_subject",
        edit_type="move",
        context_json=json.dumps(SCENE),
    )
    row["id"] = stable_id(TASK, "toy", 1)
    return row


def test_plugin_prompt_and_rules_answer_need_no_register_call(toy_task: TaskSpec) -> None:
    prompt = toy_task.hooks.instruct_prompt
    assert task_prompt(TASK, "instruct_prompt") is prompt
    tasks = task_prompt_table()
    assert catalogue.task_prompt(tasks, TASK, "instruct_prompt") is prompt
    assert catalogue.get_prompt("toy_relation_plan", tasks) is prompt
    assert "toy_relation_plan" in catalogue.all_prompts(tasks)
    assert rules.get_rules_answer("toy_relation_plan", rules_table()) is toy_rules
    assert "toy_relation_plan" in rules.registered_rules(rules_table())


def test_a_task_registered_after_a_rules_client_was_made_gets_a_client_that_knows_it(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The rules client is handed the registered tasks' table when it is made: one made before a
    task's registration (a notebook's earlier build) must not answer for the process after it."""
    from prompts.config import MLLMConfig
    from storage.fs import RunFS
    from tasks.engine.mllm import shared_client

    cfg, run = MLLMConfig(backend="rules", model="rules-v1"), RunFS.open(str(tmp_path / "run"))
    before = shared_client(cfg, run)
    assert "toy_relation_plan" not in rules.registered_rules(before.rules)
    request.getfixturevalue("toy_task")  # registers the toy task now
    after = shared_client(cfg, run)
    assert after is not before and rules.get_rules_answer("toy_relation_plan", after.rules) is toy_rules
    assert shared_client(cfg, run) is after  # still one client per process while nothing changes


def test_plugin_task_goes_through_instruct_edit_and_qa(toy_task: TaskSpec, tmp_path: Path) -> None:
    from prompts.config import MLLMConfig
    from tasks.engine.config import InstructConfig, QAConfig
    from tasks.stages.edit import needs_edit, passes_through
    from tasks.stages.instruct import instruct_candidates
    from tasks.stages.qa.analyse import analyse_edits
    from tasks.stages.qa.synthesis import questions_for_edit, settings_from
    from tasks.stages.qa.templates import question_set, template_tasks, templates_fingerprint

    cand = _candidate(str(tmp_path / "missing.png"))  # the rules backend reads no image
    rows, rejects = instruct_candidates(
        RulesClient(rules=rules_table()), [cand], MLLMConfig(backend="rules"), InstructConfig()
    )
    assert not rejects
    [row] = rows
    assert row["status"] == "applicable" and row["edit_type"] == "move" and row["prompt_name"] == "toy_relation_plan"
    assert json.loads(row["fields_json"])["destination_box"] == [40.0, 2.0, 8.0, 8.0]
    assert needs_edit(row) and not passes_through(row)  # a move goes to the editors like AT's

    edit = {
        **{
            k: row[k]
            for k in (
                "task",
                "variant",
                "source",
                "image_id",
                "image_path",
                "width",
                "height",
                "candidate_id",
                "candidate_json",
            )
        },
        "id": "e1",
        "editor": "classical",
        "edit_type": "move",
        "target_name": "cup",
        "target_box": [10.0, 20.0, 8.0, 8.0],
        "instruction": row["instruction"],
        "instruction_fields_json": row["fields_json"],
        "original_image": "o.png",
        "edited_image": "e.png",
    }
    analysed = analyse_edits(RulesClient(rules=rules_table()), [edit], images=None, mllm=MLLMConfig(backend="rules"))  # type: ignore[arg-type]
    assert [r["verdict"] for r in analysed.rows] == ["from_toy_plan"] and analysed.fields["e1"]["obj"] == "cup"

    assert TASK in template_tasks() and [q.qid for q in question_set(TASK).main] == ["Q1", "Q2"]
    assert templates_fingerprint()  # the plugin's file is hashed into the qa stage key
    rendered = questions_for_edit(edit, analysed.fields["e1"], settings_from(QAConfig(), 0), beaf=True)
    assert not rendered.problems, rendered.problems
    texts = {r["qid"]: r["text"] for r in rendered.rows}
    assert texts["Q1"].startswith("Is the cup on the table?")
