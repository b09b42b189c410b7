"""Versioned pyarrow schemas of every artifact: the contract between stages.

Each artifact has a name and an integer version stored in the Parquet metadata. Readers
check the version and the fields they need and fail naming the file and the field. Bump the
version when a field changes meaning or type; adding a nullable field at the end is allowed
without a bump (old files read with the field as null).

Task-specific structured payloads travel as canonical JSON strings (``*_json`` columns) so
the four tasks share one schema per stage.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

BOX = pa.list_(pa.float64())  # [x, y, w, h] in source pixels, as Visual Genome stores boxes


@dataclass(frozen=True)
class ArtifactSchema:
    name: str
    version: int
    schema: pa.Schema

    def with_metadata(self) -> pa.Schema:
        return self.schema.with_metadata(
            {b"reactbench.artifact": self.name.encode(), b"reactbench.version": str(self.version).encode()}
        )


# Columns every per-item artifact carries forward, so a stage reads only its upstream.
ITEM_FIELDS: list[pa.Field] = [
    pa.field(
        "task", pa.string(), nullable=False
    ),  # relational_erasure | counterfactual_attribute | alteration_tracing | dense_counting
    pa.field("variant", pa.string(), nullable=False),  # targeted | control
    pa.field("source", pa.string(), nullable=False),  # visual_genome | fsc147
    pa.field("image_id", pa.string(), nullable=False),
    pa.field("image_path", pa.string(), nullable=False),  # path of the source image (fsspec URL or local)
    pa.field("width", pa.int32(), nullable=False),
    pa.field("height", pa.int32(), nullable=False),
    pa.field("candidate_id", pa.string(), nullable=False),
    pa.field("candidate_json", pa.string(), nullable=False),  # the whole candidate row, canonical JSON
]
ITEM_COLUMNS: tuple[str, ...] = tuple(f.name for f in ITEM_FIELDS)  # their names, for copying a row forward

CANDIDATES = ArtifactSchema(
    "candidates",
    1,
    pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("task", pa.string(), nullable=False),
            pa.field("variant", pa.string(), nullable=False),
            pa.field("source", pa.string(), nullable=False),
            pa.field("image_id", pa.string(), nullable=False),
            pa.field("image_path", pa.string(), nullable=False),
            pa.field("width", pa.int32(), nullable=False),
            pa.field("height", pa.int32(), nullable=False),
            pa.field("target_object_id", pa.int64()),
            pa.field("target_name", pa.string()),  # canonical name
            pa.field("target_box", BOX),
            pa.field("partner_object_id", pa.int64()),
            pa.field("partner_name", pa.string()),
            pa.field("partner_box", BOX),
            pa.field("predicate", pa.string()),
            pa.field("direction", pa.string()),  # target_is_subject | target_is_object
            pa.field("attribute", pa.string()),  # CA: the dominant attribute
            pa.field("attribute_rank", pa.int32()),
            pa.field("same_instance_count", pa.int32()),
            pa.field("edit_type", pa.string()),  # AT: delete | add | replace | move ; RE: remove ; CA: attribute
            pa.field("fallback_chain", pa.list_(pa.string())),
            pa.field("count", pa.int32()),  # DC
            pa.field("points", pa.list_(pa.list_(pa.float64()))),  # DC: [[x, y], ...]
            pa.field("class_name", pa.string()),  # DC class
            pa.field("context_json", pa.string()),  # other annotated objects: [{id, name, box, attributes}]
            pa.field("extra_json", pa.string()),
            pa.field(
                "target_synset", pa.string()
            ),  # first WordNet synset when the source gives one (storage.annotation.names.same_class)
        ]
    ),
)

PAIR_STATS = ArtifactSchema(
    "pair_stats",
    2,
    pa.schema(
        [
            pa.field(
                "source", pa.string()
            ),  # the source counted (visual_genome, coco, ...); v2 (absent from v1 files)
            pa.field("a", pa.string(), nullable=False),
            pa.field("b", pa.string(), nullable=False),
            pa.field("c_a", pa.int64(), nullable=False),
            pa.field("c_b", pa.int64(), nullable=False),
            pa.field("c_ab", pa.int64(), nullable=False),
            pa.field("p_b_given_a", pa.float64(), nullable=False),
            pa.field("p_a_given_b", pa.float64(), nullable=False),
            pa.field("predicate", pa.string()),
            pa.field("direction", pa.string()),  # a_subject | b_subject
            pa.field("kept", pa.bool_(), nullable=False),
        ]
    ),
)

ATTRIBUTE_STATS = ArtifactSchema(
    "attribute_stats",
    1,
    pa.schema(
        [
            pa.field("object", pa.string(), nullable=False),
            pa.field("attribute", pa.string(), nullable=False),
            pa.field("c_o", pa.int64(), nullable=False),
            pa.field("c_oa", pa.int64(), nullable=False),
            pa.field("p_a_given_o", pa.float64(), nullable=False),
            pa.field("rank", pa.int32(), nullable=False),
            pa.field("kept", pa.bool_(), nullable=False),
        ]
    ),
)

PROVENANCE_FIELDS: list[pa.Field] = [
    pa.field("prompt_name", pa.string()),
    pa.field("prompt_version", pa.string()),
    pa.field("backend", pa.string()),
    pa.field("model_id", pa.string()),
    pa.field("raw_response", pa.string()),
]

INSTRUCTIONS = ArtifactSchema(
    "instructions",
    1,
    pa.schema(
        [pa.field("id", pa.string(), nullable=False)]
        + ITEM_FIELDS
        + [
            pa.field("status", pa.string(), nullable=False),  # applicable | not_applicable | failed
            pa.field("instruction", pa.string()),  # natural-language edit instruction
            pa.field("edit_type", pa.string()),
            pa.field("target_box", BOX),  # region the editor should touch (source pixels)
            pa.field("target_name", pa.string()),
            pa.field("fields_json", pa.string()),  # the prompt's structured output
        ]
        + PROVENANCE_FIELDS
    ),
)

EDITS = ArtifactSchema(
    "edits",
    1,
    pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),  # stable_id(instruction_id, editor, params, seed)
            pa.field("instruction_id", pa.string(), nullable=False),
        ]
        + ITEM_FIELDS
        + [
            pa.field("instruction", pa.string()),
            pa.field("edit_type", pa.string()),
            pa.field("target_name", pa.string()),
            pa.field("target_box", BOX),
            pa.field("instruction_fields_json", pa.string()),
            pa.field("editor", pa.string(), nullable=False),
            pa.field("editor_params_json", pa.string(), nullable=False),
            pa.field("seed", pa.int64(), nullable=False),
            pa.field("status", pa.string(), nullable=False),  # ok | auto_rejected
            pa.field("original_image", pa.string(), nullable=False),  # image-store relative path
            pa.field("edited_image", pa.string(), nullable=False),
            pa.field("mask_image", pa.string()),
            pa.field("qc_json", pa.string()),  # auto-QC metrics and verdicts
            pa.field("edit_seconds", pa.float64()),
        ]
    ),
)

ANALYSIS = ArtifactSchema(
    "analysis",
    1,
    pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("edit_id", pa.string(), nullable=False),
            pa.field("editor", pa.string(), nullable=False),
        ]
        + ITEM_FIELDS
        + [
            pa.field("status", pa.string(), nullable=False),  # ok | discarded | failed
            pa.field("verdict", pa.string()),
            pa.field("fields_json", pa.string()),
            pa.field("original_image", pa.string()),
            pa.field("edited_image", pa.string()),
        ]
        + PROVENANCE_FIELDS
    ),
)

QUESTIONS = ArtifactSchema(
    "questions",
    1,
    pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("edit_id", pa.string(), nullable=False),
            pa.field("editor", pa.string(), nullable=False),
            pa.field("task", pa.string(), nullable=False),
            pa.field("variant", pa.string(), nullable=False),
            pa.field("question_set", pa.string(), nullable=False),  # main | control | beaf
            pa.field("qid", pa.string(), nullable=False),  # Q1..Q12 (task numbering), C1.., B1..
            pa.field("qtype", pa.string(), nullable=False),  # YN | MC | SA
            pa.field("dimension", pa.string()),  # RE/CA dimension or AT hint or DC facet
            pa.field("text", pa.string(), nullable=False),
            pa.field("options", pa.list_(pa.string())),  # MC only, in presented order
            pa.field("gold", pa.string(), nullable=False),  # letter for MC, Yes/No, text for SA
            pa.field("rotation", pa.int32()),  # cyclic MC presentation index (0 when not cyclic)
            pa.field("rubric_json", pa.string()),
            pa.field("images", pa.list_(pa.string()), nullable=False),  # image-store paths asked about
            pa.field("image_role", pa.string()),  # edited | original | pair
            pa.field(
                "prior_options", pa.list_(pa.string())
            ),  # MC: letters of the commonsense distractors ([] = none; null = not recorded)
        ]
    ),
)

REJECTS = ArtifactSchema(
    "rejects",
    1,
    pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),  # id of the rejected item (or source ref)
            pa.field("stage", pa.string(), nullable=False),
            pa.field("reason", pa.string(), nullable=False),  # reason code, snake_case
            pa.field("detail", pa.string()),
            pa.field("payload_json", pa.string()),  # what was rejected (raw text, metrics, ...)
        ]
    ),
)

VERIFIED_EDITS = ArtifactSchema(
    "verified_edits", 1, pa.schema(list(EDITS.schema) + [pa.field("decisions_json", pa.string())])
)
VERIFIED_QUESTIONS = ArtifactSchema("verified_questions", 1, QUESTIONS.schema)
DECISIONS = ArtifactSchema(
    "decisions",
    1,
    pa.schema(
        [
            pa.field("event_id", pa.int64(), nullable=False),
            pa.field("item_id", pa.string(), nullable=False),
            pa.field("item_kind", pa.string(), nullable=False),  # edit | question
            pa.field("action", pa.string(), nullable=False),
            pa.field("annotator", pa.string(), nullable=False),  # pseudonymised on export
            pa.field("created_at", pa.string(), nullable=False),
            pa.field("before_json", pa.string()),
            pa.field("after_json", pa.string()),
        ]
    ),
)

REGISTRY: dict[str, ArtifactSchema] = {
    s.name: s
    for s in [
        CANDIDATES,
        PAIR_STATS,
        ATTRIBUTE_STATS,
        INSTRUCTIONS,
        EDITS,
        ANALYSIS,
        QUESTIONS,
        REJECTS,
        VERIFIED_EDITS,
        VERIFIED_QUESTIONS,
        DECISIONS,
    ]
}


def register(schema: ArtifactSchema) -> ArtifactSchema:
    """Add an artifact schema defined elsewhere (evaluation results, the review queue) to the
    registry, so that a reader given its name finds it (``get``: tests read eval answers as
    ``"eval_answers"``); the package itself always passes schema objects."""
    REGISTRY[schema.name] = schema
    return schema


def get(name: str) -> ArtifactSchema:
    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown artifact schema {name!r}; known: {sorted(REGISTRY)}") from None
