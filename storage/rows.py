"""The rows that cross from one stage to the next, as typed dicts of their artifact's columns.

Each mirrors a pyarrow schema of ``storage/schemas.py`` column for column (a nullable column is
``X | None``; the item columns shared by later rows are ``ItemColumns``; ``tests/storage/test_rows.py`` checks the two agree). ``total=False``: a reader may
select some columns only (the edit stage reads ``INSTRUCTION_COLUMNS``).
"""

from __future__ import annotations

from typing import TypedDict

__all__ = ["CandidateRow", "EditRow", "InstructionRow", "ItemColumns", "QuestionRow", "SourceColumns"]


class SourceColumns(TypedDict, total=False):
    """The columns that say where an item comes from, from the candidates on."""

    task: str
    variant: str
    source: str
    image_id: str
    image_path: str
    width: int
    height: int


class ItemColumns(SourceColumns, total=False):
    """The item columns every row from the instructions on carries forward (``storage.schemas.ITEM_FIELDS``)."""

    candidate_id: str
    candidate_json: str


class CandidateRow(SourceColumns, total=False):
    """A row of ``mine/candidates`` (``storage.schemas.CANDIDATES``): what the instruct stage reads."""

    id: str
    target_object_id: int | None
    target_name: str | None
    target_box: list[float] | None
    partner_object_id: int | None
    partner_name: str | None
    partner_box: list[float] | None
    predicate: str | None
    direction: str | None
    attribute: str | None
    attribute_rank: int | None
    same_instance_count: int | None
    edit_type: str | None
    fallback_chain: list[str] | None
    count: int | None
    points: list[list[float]] | None
    class_name: str | None
    context_json: str | None
    extra_json: str | None
    target_synset: str | None


class InstructionRow(ItemColumns, total=False):
    """A row of ``instruct/instructions`` (``storage.schemas.INSTRUCTIONS``): what the edit stage reads."""

    id: str
    status: str
    instruction: str | None
    edit_type: str | None
    target_box: list[float] | None
    target_name: str | None
    fields_json: str | None
    prompt_name: str | None
    prompt_version: str | None
    backend: str | None
    model_id: str | None
    raw_response: str | None


class EditRow(ItemColumns, total=False):
    """A row of ``edit/edits`` (``storage.schemas.EDITS``): what the QA and review stages read."""

    id: str
    instruction_id: str
    instruction: str | None
    edit_type: str | None
    target_name: str | None
    target_box: list[float] | None
    instruction_fields_json: str | None
    editor: str
    editor_params_json: str
    seed: int
    status: str
    original_image: str
    edited_image: str
    mask_image: str | None
    qc_json: str | None
    edit_seconds: float | None


class QuestionRow(TypedDict, total=False):
    """A row of ``qa/questions`` (``storage.schemas.QUESTIONS``)."""

    id: str
    edit_id: str
    editor: str
    task: str
    variant: str
    question_set: str
    qid: str
    qtype: str
    dimension: str | None
    text: str
    options: list[str] | None
    gold: str
    rotation: int | None
    rubric_json: str | None
    images: list[str]
    image_role: str | None
    prior_options: list[str] | None
