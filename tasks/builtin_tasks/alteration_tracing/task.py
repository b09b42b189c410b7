"""Alteration tracing (AT): one micro-edit separates a before and an after image; the questions probe cross-image comparison."""

from tasks.plugin_api import TaskHooks, TaskSpec

PKG = "tasks.builtin_tasks.alteration_tracing"

TASK = TaskSpec(
    id="alteration_tracing",
    short="AT",
    label="Alteration tracing",
    weight=0.2,
    order=30,
    probes_prior=False,
    reference_counts={"images": 913, "questions": 10_956},  # ReactBench paper, Table 2
    edits_image=True,
    card_text="AT: one micro-edit (delete/add/replace/move) separates a before/after pair; questions probe cross-image comparison.",
    eval_text={
        "label": "alteration tracing",
        "cause": "cross-image comparison: one small edit separates a before and an after picture",
        "note": "the second picture differs from the first by one small edit.",
    },
    subcauses=(
        (
            "SC-1",
            "cross-image state assimilation",
            "the model describes both pictures yet treats them as the same, missing the edit",
        ),
        ("SC-2", "fine-grained blindness", "the model compares only coarsely and overlooks a small local change"),
        (
            "SC-3",
            "change misbinding",
            "the model sees that something changed but attaches it to the wrong object, place or operation",
        ),
    ),
    params=f"{PKG}.params:AlterationTracingParams",
    miners={"visual_genome": f"{PKG}.miner:mine", "coco": f"{PKG}.miner:mine_coco"},
    modules=(PKG,),
    hooks=TaskHooks(
        # -- mining (miners/, tasks/stages/mine.py) --
        # -- build stages (instruct, edit, qa) --
        instruct_prompt=f"{PKG}.prompts:AT_EDIT_PLAN",
        instruct_rules=f"{PKG}.prompts:at_edit_plan",
        untouched_objects=f"{PKG}.instruct:untouched_objects",
        analysis_fields=f"{PKG}.qa:analysis_fields",
        qa_slots=f"{PKG}.qa:qa_slots",
        qa_beaf=f"{PKG}.qa:qa_beaf",
        qa_templates=f"{PKG}:templates/alteration_tracing.yaml",
        # -- release side (audit, review, evaluation, export) --
        eval_rules=f"{PKG}.evaluation:RULES",
        sa_judge="prompts.offline_judge:CHANGE",
        audit_checks=f"{PKG}.audit:audit_checks",
    ),
)
