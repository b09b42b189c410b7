"""Relational erasure (RE): one member of a frequently co-occurring pair is erased; the questions probe co-occurrence bias."""

from tasks.plugin_api import TaskHooks, TaskSpec

PKG = "tasks.builtin_tasks.relational_erasure"

TASK = TaskSpec(
    id="relational_erasure",
    short="RE",
    label="Relational erasure",
    weight=0.3,
    order=10,
    probes_prior=True,
    reference_counts={"images": 1_595, "questions": 19_140},  # ReactBench paper, Table 2
    edits_image=True,
    card_text="RE: one object of a frequently co-occurring pair is erased; questions probe co-occurrence bias.",
    eval_text={
        "label": "relational erasure",
        "cause": "co-occurrence bias: one member of a pair of objects that usually appear together was erased",
        "note": "one object that usually appears together with another was erased from the picture.",
    },
    subcauses=(
        (
            "SC-1",
            "part-whole completion",
            "a visible object makes the model fill in a part or partner that belongs to it but was erased",
        ),
        (
            "SC-2",
            "activity-entity completion",
            "an action or activity in the scene makes the model supply the participant that such an activity normally involves",
        ),
        (
            "SC-3",
            "scene-object association",
            "the kind of place or scene makes the model list objects typical of it that are not there",
        ),
    ),
    params=f"{PKG}.params:RelationalErasureParams",
    miners={"visual_genome": f"{PKG}.miner:mine", "coco": f"{PKG}.miner:mine_coco"},
    modules=(PKG,),
    hooks=TaskHooks(
        # -- mining (miners/, tasks/stages/mine.py) --
        vg_reads=f"{PKG}.miner:VG_READS",  # the Visual Genome files its miner reads beyond objects
        # -- build stages (instruct, edit, qa) --
        instruct_prompt=f"{PKG}.prompts:RE_INSTRUCTION",
        instruct_rules=f"{PKG}.prompts:re_instruction",
        instruct_rows=f"{PKG}.instruct:instruct_rows",
        analysis_prompt=f"{PKG}.prompts:RE_ANALYSIS",
        analysis_rules=f"{PKG}.prompts:re_analysis",
        qa_slots=f"{PKG}.qa:qa_slots",
        qa_beaf=f"{PKG}.qa:qa_beaf",
        qa_templates=f"{PKG}:templates/relational_erasure.yaml",
        # -- release side (audit, review, evaluation, export) --
        prior_terms=f"{PKG}.evaluation:prior_terms",
        subcause_facts=f"{PKG}.evaluation:subcause_facts",
        eval_rules=f"{PKG}.evaluation:RULES",
        sa_judge="prompts.offline_judge:DENIAL",
        audit_checks=f"{PKG}.audit:audit_checks",
    ),
)
