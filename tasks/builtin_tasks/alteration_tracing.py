"""Alteration tracing (AT): one micro-edit separates a before and an after image; the questions probe cross-image comparison."""

from storage.task_spec import TaskSpec

TASK = TaskSpec(
    id="alteration_tracing",
    short="AT",
    label="Alteration tracing",
    weight=0.2,
    order=30,
    probes_prior=False,
    edits_image=True,
    card_text='AT: one micro-edit (delete/add/replace/move) separates a before/after pair; questions probe cross-image comparison.',
    eval_text={
        "label": 'alteration tracing',
        "cause": 'cross-image comparison: one small edit separates a before and an after picture',
        "note": 'the second picture differs from the first by one small edit.',
    },
    subcauses=(
        ('SC-1', 'cross-image state assimilation', 'the model describes both pictures yet treats them as the same, missing the edit'),
        ('SC-2', 'fine-grained blindness', 'the model compares only coarsely and overlooks a small local change'),
        ('SC-3', 'change misbinding', 'the model sees that something changed but attaches it to the wrong object, place or operation'),
    ),
    params="miners.config:AlterationTracingParams",
    miners={"visual_genome": "miners.alteration:mine", "coco": "miners.coco:mine_alteration"},
    modules=("tasks.builtin_tasks.alteration_tracing",),
    extra={
        # -- mining (miners/, tasks/stages/mine.py) --

        # -- build stages (instruct, edit, qa) --
        "instruct_prompt": "prompts.instruct_prompts:AT_EDIT_PLAN",
        "instruct_rules": "prompts.instruct_rules:at_edit_plan",
        "instruct_rows": "tasks.stages.instruct:instruct_rows_edit_plan",
        "untouched_objects": "prompts.instruct_prompts:at_untouched_objects",
        "analysis_fields": "tasks.stages.qa.analyse:analysis_fields_alteration_tracing",
        "qa_slots": "tasks.stages.qa.synthesis:qa_slots_alteration_tracing",
        "qa_beaf": "tasks.stages.qa.synthesis:qa_beaf_alteration_tracing",
        "qa_templates": "tasks.stages.qa:templates/alteration_tracing.yaml",

        # -- release side (audit, review, evaluation, export) --
        "eval_rules": "prompts.eval_rules:CHANGE_RULES",
        "sa_judge": "prompts.offline_judge:CHANGE",
        "audit_checks": "tasks.tools.audit:check_change",

    },
)
