"""Counterfactual attribute (CA): an object's dominant attribute becomes a counter-commonsense one; the questions probe language priors."""

from tasks.plugin_api import TaskHooks, TaskSpec

PKG = "tasks.builtin_tasks.counterfactual_attribute"

TASK = TaskSpec(
    id="counterfactual_attribute",
    short="CA",
    label="Counterfactual attribute",
    weight=0.2,
    order=20,
    probes_prior=True,
    reference_counts={"images": 639, "questions": 7_668},  # ReactBench paper, Table 2
    edits_image=True,
    card_text="CA: a dominant attribute is changed into a counter-commonsense one; questions probe language priors.",
    eval_text={
        "label": "counterfactual attribute",
        "cause": "language priors: an object's typical attribute was changed into an unusual one",
        "note": "an object's typical attribute (colour, material, ...) was changed into an unusual one.",
    },
    subcauses=(
        (
            "SC-1",
            "blind prior assertion",
            "the model states the usual attribute from world knowledge without really looking",
        ),
        (
            "SC-2",
            "common attribute projection",
            "the model finds the right object but describes it with its usual attribute instead of the edited one",
        ),
        (
            "SC-3",
            "correct perception overridden",
            "the model first notices the unusual attribute, then argues itself back to the usual one",
        ),
    ),
    params=f"{PKG}.params:CounterfactualAttributeParams",
    miners={"visual_genome": f"{PKG}.miner:mine"},
    modules=(PKG,),
    hooks=TaskHooks(
        # -- mining (miners/, tasks/stages/mine.py) --
        vg_reads=f"{PKG}.miner:VG_READS",  # the Visual Genome files its miner reads beyond objects
        # -- build stages (instruct, edit, qa) --
        instruct_prompt=f"{PKG}.prompts:CA_INSTRUCTIONS",
        instruct_rules=f"{PKG}.prompts:ca_instructions",
        instruct_rows=f"{PKG}.instruct:instruct_rows",
        instruct_dedup=f"{PKG}.instruct:instruct_dedup",
        analysis_prompt=f"{PKG}.prompts:CA_ANALYSIS",
        analysis_rules=f"{PKG}.prompts:ca_analysis",
        qa_slots=f"{PKG}.qa:qa_slots",
        qa_templates=f"{PKG}:templates/counterfactual_attribute.yaml",
        # -- release side (audit, review, evaluation, export) --
        prior_terms=f"{PKG}.evaluation:prior_terms",
        eval_rules=f"{PKG}.evaluation:RULES",
        sa_judge="prompts.offline_judge:OVERLAP",
        audit_checks=f"{PKG}.audit:audit_checks",
    ),
)
