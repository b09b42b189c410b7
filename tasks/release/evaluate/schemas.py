"""Artifacts of an evaluation run (``<run>/eval/<model-slug>/...``), registered with storage."""

from __future__ import annotations

import pyarrow as pa

from storage.schemas import ArtifactSchema, register

ANSWERS = register(
    ArtifactSchema(
        "eval_answers",
        2,
        pa.schema(
            [
                pa.field("id", pa.string(), nullable=False),  # stable_id(question_id, mode, backend, model)
                pa.field("question_id", pa.string(), nullable=False),
                pa.field("edit_id", pa.string(), nullable=False),
                pa.field("editor", pa.string(), nullable=False),
                pa.field("task", pa.string(), nullable=False),
                pa.field("variant", pa.string(), nullable=False),
                pa.field("question_set", pa.string(), nullable=False),
                pa.field("qid", pa.string(), nullable=False),
                pa.field("qtype", pa.string(), nullable=False),
                pa.field("dimension", pa.string()),
                pa.field("rotation", pa.int32()),
                pa.field("image_role", pa.string()),
                pa.field("text", pa.string(), nullable=False),
                pa.field("options", pa.list_(pa.string())),
                pa.field("gold", pa.string(), nullable=False),
                pa.field("mode", pa.string(), nullable=False),  # standard | cot
                pa.field("prompt_name", pa.string(), nullable=False),
                pa.field("prompt_version", pa.string(), nullable=False),
                pa.field("backend", pa.string(), nullable=False),
                pa.field("model_id", pa.string(), nullable=False),
                pa.field("raw_response", pa.string()),
                pa.field("parsed", pa.string()),  # Yes/No, a letter, or the SA answer text
                pa.field("status", pa.string(), nullable=False),  # ok | unparseable | error
                pa.field("error", pa.string()),
                pa.field("correct", pa.bool_(), nullable=False),
                pa.field("prior_options", pa.list_(pa.string())),  # MC: letters of the commonsense (prior) options
                pa.field("prior_fallback", pa.bool_()),  # null where no prior answer exists
                pa.field("beaf_related", pa.bool_()),  # BEAF only: asks about the removed object
                pa.field("judge", pa.string()),  # extract | llm | rules | rules_fallback
                pa.field("judge_model", pa.string()),
                pa.field("judge_reason", pa.string()),
                pa.field("judge_raw", pa.string()),
                pa.field("unverified", pa.bool_(), nullable=False),
                pa.field(
                    "parsed_by", pa.string()
                ),  # rules | judge (eval.extract_with_judge); null when nothing was read
            ]
        ),
    )
)

SUBCAUSES = register(
    ArtifactSchema(
        "eval_subcauses",
        2,
        pa.schema(
            [
                pa.field("id", pa.string(), nullable=False),
                pa.field("answer_id", pa.string(), nullable=False),
                pa.field("task", pa.string(), nullable=False),
                pa.field("qid", pa.string(), nullable=False),
                pa.field("qtype", pa.string(), nullable=False),
                pa.field("editor", pa.string(), nullable=False),
                pa.field("variant", pa.string()),  # targeted | control
                pa.field("mode", pa.string()),
                pa.field("status", pa.string(), nullable=False),  # ok | unparseable | error
                pa.field("label", pa.string()),  # SC-1 | SC-2 | SC-3 | other
                pa.field("rationale", pa.string()),
                pa.field("prompt_name", pa.string()),
                pa.field("prompt_version", pa.string()),
                pa.field("backend", pa.string()),
                pa.field("model_id", pa.string()),
                pa.field("raw_response", pa.string()),
            ]
        ),
    )
)

SPANS = register(
    ArtifactSchema(
        "eval_spans",
        1,
        pa.schema(
            [
                pa.field("id", pa.string(), nullable=False),
                pa.field("answer_id", pa.string(), nullable=False),
                pa.field("task", pa.string(), nullable=False),
                pa.field("qid", pa.string(), nullable=False),
                pa.field("status", pa.string(), nullable=False),  # ok | not_followed | error
                pa.field("spans_json", pa.string()),  # [[start, end, type], ...] token intervals of the response
                pa.field("response", pa.string()),
                pa.field("prompt_name", pa.string()),
                pa.field("prompt_version", pa.string()),
                pa.field("backend", pa.string()),
                pa.field("model_id", pa.string()),
                pa.field("raw_response", pa.string()),
            ]
        ),
    )
)
