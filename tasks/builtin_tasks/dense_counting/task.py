"""Dense counting (DC): unedited dense scenes with exact point counts; the questions probe fine-grained perception."""

from tasks.plugin_api import TaskHooks, TaskSpec

PKG = "tasks.builtin_tasks.dense_counting"

TASK = TaskSpec(
    id="dense_counting",
    short="DC",
    label="Dense counting",
    weight=0.3,
    order=40,
    probes_prior=False,
    reference_counts={"images": 1_531, "questions": 12_248},  # ReactBench paper, Table 2
    edits_image=False,
    card_text="DC: unedited dense scenes with exact point counts; questions probe fine-grained perception.",
    eval_text={
        "label": "dense counting",
        "cause": "fine-grained perception: many similar objects must be counted exactly",
        "note": "the picture holds many similar objects whose exact number is known.",
    },
    subcauses=(
        ("SC-1", "anchor-free scan miss", "the model skips scattered or weakly anchored instances while scanning"),
        (
            "SC-2",
            "regular shortcut error",
            "the model assumes a regular layout (rows x columns, a pattern) and misses irregular instances",
        ),
        (
            "SC-3",
            "sequential enumeration deficiency",
            "the model enumerates one by one but loses track of the running count",
        ),
    ),
    params=f"{PKG}.params:DenseCountingParams",
    miners={"fsc147": f"{PKG}.miner:mine", "coco": f"{PKG}.miner:mine_coco"},
    modules=(PKG,),
    hooks=TaskHooks(
        # -- mining (miners/, tasks/stages/mine.py) --
        # -- build stages (instruct, edit, qa) --
        instruct_prompt=f"{PKG}.prompts:DC_AMBIGUITY",
        instruct_rules=f"{PKG}.prompts:dc_ambiguity",
        instruct_rows=f"{PKG}.instruct:instruct_rows",
        analysis_fields=f"{PKG}.qa:analysis_fields",
        qa_slots=f"{PKG}.qa:qa_slots",
        qa_templates=f"{PKG}:templates/dense_counting.yaml",
        # -- release side (audit, review, evaluation, export) --
        eval_rules=f"{PKG}.evaluation:RULES",
        sa_judge="prompts.offline_judge:COUNT",
        audit_item=f"{PKG}.audit:audit_item",
    ),
)
