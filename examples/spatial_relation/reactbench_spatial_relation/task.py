"""The ``spatial_relation`` TaskSpec: the data the core reads and the hooks it calls."""

from tasks.plugin_api import TaskHooks, TaskSpec

PKG = "reactbench_spatial_relation"

TASK = TaskSpec(
    id="spatial_relation",
    short="SR",
    label="Spatial relation",
    weight=0.2,
    order=50,
    probes_prior=True,
    edits_image=True,
    card_text="SR: an object is moved out of a spatial relation it usually holds (a cup taken off its table); questions probe whether the usual relation is still reported.",
    eval_text={
        "label": "spatial relation",
        "cause": "spatial priors: an object was moved out of the place where it is usually found relative to another object",
        "note": "one object was moved, so a relation that usually holds between two objects no longer holds.",
    },
    subcauses=(
        (
            "SC-1",
            "habitual placement",
            "the model reports the usual arrangement of the two objects (the cup on the table) instead of where the object now is",
        ),
        (
            "SC-2",
            "anchor capture",
            "the model finds both objects but ties the moved one to the other by proximity, reading 'beside' as 'on' or 'in'",
        ),
        (
            "SC-3",
            "direction confusion",
            "the model sees that the relation changed but names the wrong side or direction (left for right, above for below)",
        ),
    ),
    params="reactbench_spatial_relation.params:SpatialRelationParams",
    miners={"visual_genome": f"{PKG}.miner:mine"},
    modules=(PKG,),
    hooks=TaskHooks(
        # -- mining --
        vg_reads=f"{PKG}.miner:VG_READS",
        # -- build stages: instruct, edit (the core's move), qa --
        instruct_prompt=f"{PKG}.prompts:SR_INSTRUCTION",
        instruct_rules=f"{PKG}.prompts:sr_instruction",
        instruct_context=f"{PKG}.prompts:instruct_context",
        instruct_rows=f"{PKG}.prompts:instruct_rows",
        analysis_fields=f"{PKG}.qa:analysis_fields",
        qa_slots=f"{PKG}.qa:qa_slots",
        qa_templates=f"{PKG}:templates/spatial_relation.yaml",
        # -- release side: audit, evaluation, export --
        prior_terms=f"{PKG}.evaluation:prior_terms",
        eval_rules=f"{PKG}.evaluation:RULES",
        audit_checks=f"{PKG}.audit:audit_checks",
    ),
)
