"""The public plugin API: every type and helper a task plugin (or a source plugin) needs, in one
module. Plugins import from here only, never from the core's rooms, so the core can move its
modules without breaking them; ``lint-imports`` checks that for the built-in tasks
(``tasks/builtin_tasks/<id>/``) and for ``examples/spatial_relation``.

Why names are resolved lazily: a task's ``task.py`` imports :class:`TaskSpec` from here, and the
entry points of every task load whenever the registry is read (``reactbench tasks``, config
validation). Importing the whole core there would cost seconds and pull in models; so each name
below imports its defining module on first access (PEP 562 ``__getattr__``) and nothing else.

Versioning: :data:`API_VERSION` is ``major.minor``. A minor bump adds names; a major bump removes
or changes one (a plugin may check ``API_VERSION.split(".")[0]``). The names and what they are:

Spec and registry
  ``TaskSpec``, ``TaskHooks`` (1.1: the typed hooks), ``TaskError``, ``HOOKS`` (the hook names a spec may set, with their documented
  signatures), ``register_task``.
Config
  ``Section`` (base of a task's ``params``), ``FloatRange``, ``FractionRange`` (1.2: an ordered range
  within [0, 1], e.g. an area fraction), ``IntRange``, ``IntEdges``.
Mining (the ``miners={source: ...}`` hooks; contract in ``docs/mining.md``)
  ``MineJob``, ``Scan``, ``Selection``, ``VGRows``, ``rng_for``, ``seeded_order``,
  ``seeded_names``, ``area_fraction``, ``image_sizes``, ``npx`` (numpy grouping helpers),
  ``bin_of``, ``FSCData``, ``split_counts``, ``fsc147_select``, ``coco_select_counting`` (the
  count-stratified selections of the FSC147 and COCO sources), ``CocoRows``, ``drop_unsure``,
  ``image_notes``, ``class_notes``,
  ``source names`` ``VG``, ``FSC``, ``COCO``, and ``SourceSpec`` for a source plugin.
Rows, ids, rejects
  ``reject``, ``stable_id``, ``canonical_json``, ``candidate_of``, ``context_objects``,
  ``cut_objects_of``, ``instruction_fields``, ``load_json_column``.
Shared vocabulary
  ``intersection``, ``intersects`` (boxes), ``colour_of``, ``colours_apart``, ``basic_name``,
  ``same_class``, ``cut_names``, ``names_mentioned``, ``region_words``, ``location_phrase``.
Prompts (``instruct_prompt`` / ``analysis_prompt`` and their rules answers)
  ``PromptSpec``, ``rules_answer``, ``PromptOutput`` and ``AnalysisOutput`` (answer schema
  bases), field types ``EnglishStr``, ``ObjectName``, ``LocationPhrase``, ``PastPredicate``,
  ``ThreeDistinct``, ``distinct``, ``same_name``, ``mentions_preservation``, ``ARTICLE_RE``; the
  rules answers' seeded draws and word forms ``pick``, ``pick_options``, ``norm_text``,
  ``a_or_an``, ``same_word``, ``attribute_slot``, ``box_center``, ``sha256_hex``; the word lists
  of ``prompts/vocabulary.py`` (``COLOURS``, ``MATERIALS``, ``CA_VALUES``, ...) and
  ``COUNTER_COLOURS``, ``colour_word``, ``overlap``, ``grown``, ``class_members``.
Questions (``qa_slots``, ``qa_beaf``, ``analysis_fields``)
  ``Problem``, ``RenderSettings``, ``question_seed``, ``clean``, ``canonical``,
  ``with_article``, ``plural``.
Evaluation and audit
  ``EvalRules`` (with ``annotations_of``, ``prior_hit``, ``option_letter``, ``mentions``: what
  the rules backend's answers read), ``ItemAudit``, ``EditScene``, ``World``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

API_VERSION = "1.2"

# name -> "module:attribute" (or "module" for a module); resolved on first access.
_EXPORTS: dict[str, str] = {
    # spec and registry
    "TaskSpec": "storage.task_spec:TaskSpec",
    "TaskHooks": "storage.task_spec:TaskHooks",
    "TaskError": "storage.task_spec:TaskError",
    "HOOKS": "storage.task_spec:HOOKS",
    "register_task": "storage.task_spec:register_task",
    # config
    "Section": "storage.config_base:Section",
    "FloatRange": "storage.config_base:FloatRange",
    "FractionRange": "storage.config_base:FractionRange",
    "IntRange": "storage.config_base:IntRange",
    "IntEdges": "storage.config_base:IntEdges",
    # mining
    "MineJob": "miners.dispatch:MineJob",
    "Scan": "miners.vg_scan:Scan",
    "Selection": "miners.candidates:Selection",
    "VGRows": "miners.candidates:VGRows",
    "rng_for": "miners.candidates:rng_for",
    "seeded_order": "miners.candidates:seeded_order",
    "seeded_names": "miners.candidates:seeded_names",
    "area_fraction": "miners.candidates:area_fraction",
    "image_sizes": "miners.candidates:image_sizes",
    "VG": "miners.candidates:VG",
    "FSC": "miners.candidates:FSC",
    "COCO": "miners.candidates:COCO",
    "npx": "miners.npx",
    "bin_of": "miners.fsc147:bin_of",
    "FSCData": "miners.fsc147:FSCData",
    "split_counts": "miners.fsc147:split_counts",
    "fsc147_select": "miners.fsc147:select",
    "coco_select_counting": "miners.coco:select_counting",
    "CocoRows": "miners.coco:CocoRows",
    "drop_unsure": "miners.coco:drop_unsure",
    "image_notes": "miners.coco:image_notes",
    "class_notes": "miners.coco:class_notes",
    "SourceSpec": "miners.sources:SourceSpec",
    # rows, ids, rejects
    "reject": "storage.rejects:reject",
    "stable_id": "storage.hashing:stable_id",
    "canonical_json": "storage.hashing:canonical_json",
    "load_json_column": "storage.json_columns:load_json_column",
    "candidate_of": "storage.json_columns:candidate_of",
    "context_objects": "storage.json_columns:context_objects",
    "cut_objects_of": "storage.json_columns:cut_objects_of",
    "instruction_fields": "storage.json_columns:instruction_fields",
    # shared vocabulary
    "intersection": "storage.boxes:intersection",
    "intersects": "storage.boxes:intersects",
    "colour_of": "storage.colours:colour_of",
    "colours_apart": "storage.colours:colours_apart",
    "basic_name": "storage.names:basic_name",
    "same_class": "storage.names:same_class",
    "cut_names": "storage.coverage:cut_names",
    "names_mentioned": "storage.coverage:names_mentioned",
    "region_words": "prompts.locations:region_words",
    "location_phrase": "prompts.locations:location_phrase",
    # prompts
    "PromptSpec": "prompts.spec:PromptSpec",
    "rules_answer": "prompts.rules_api:rules_answer",
    "EnglishStr": "prompts.fields:EnglishStr",
    "ObjectName": "prompts.fields:ObjectName",
    "same_name": "prompts.instruct_prompts:same_name",
    "find_duplicates": "prompts.dedup:find_duplicates",
    "transformers_embedder": "prompts.dedup:transformers_embedder",
    # prompt building blocks and the rules answers' helpers (the built-ins' prompts use them)
    "PromptOutput": "prompts.instruct_prompts:PromptOutput",
    "mentions_preservation": "prompts.instruct_prompts:mentions_preservation",
    "AnalysisOutput": "prompts.analysis_prompts:AnalysisOutput",
    "ARTICLE_RE": "prompts.analysis_prompts:ARTICLE_RE",
    "distinct": "prompts.fields:distinct",
    "LocationPhrase": "prompts.fields:LocationPhrase",
    "PastPredicate": "prompts.fields:PastPredicate",
    "ThreeDistinct": "prompts.fields:ThreeDistinct",
    "pick": "prompts.instruct_rules:pick",
    "pick_options": "prompts.analysis_rules:pick_options",
    "norm_text": "prompts.analysis_rules:norm_text",
    "a_or_an": "prompts.analysis_rules:a_or_an",
    "same_word": "prompts.analysis_rules:same_word",
    "attribute_slot": "prompts.analysis_rules:attribute_slot",
    "box_center": "prompts.locations:box_center",
    "ABSURD_OBJECTS": "prompts.vocabulary:ABSURD_OBJECTS",
    "ABSURD_ATTRIBUTES": "prompts.vocabulary:ABSURD_ATTRIBUTES",
    "ATTRIBUTE_TYPE_BY_DIRECTION": "prompts.vocabulary:ATTRIBUTE_TYPE_BY_DIRECTION",
    "CA_VALUES": "prompts.vocabulary:CA_VALUES",
    "COLOURS": "prompts.vocabulary:COLOURS",
    "MATERIALS": "prompts.vocabulary:MATERIALS",
    "SPATIAL_PREDICATES": "prompts.vocabulary:SPATIAL_PREDICATES",
    "MADE_DIRECTIONS": "prompts.vocabulary:MADE_DIRECTIONS",
    "NATURAL_DIRECTIONS": "prompts.vocabulary:NATURAL_DIRECTIONS",
    "NATURAL_HINTS": "prompts.vocabulary:NATURAL_HINTS",
    "SUBSTITUTES": "prompts.vocabulary:SUBSTITUTES",
    "COUNTER_COLOURS": "storage.colours:COUNTER_COLOURS",
    "colour_word": "storage.colours:colour_word",
    "overlap": "storage.boxes:overlap",
    "grown": "storage.boxes:grown",
    "class_members": "storage.names:class_members",
    "sha256_hex": "storage.hashing:sha256_hex",
    # questions
    "Problem": "tasks.stages.qa.render:Problem",
    "RenderSettings": "tasks.stages.qa.render:RenderSettings",
    "question_seed": "tasks.stages.qa.mc:question_seed",
    "clean": "tasks.stages.qa.text:clean",
    "canonical": "tasks.stages.qa.text:canonical",
    "with_article": "tasks.stages.qa.text:with_article",
    "plural": "tasks.stages.qa.text:plural",
    # evaluation and audit
    "EvalRules": "prompts.eval_rules:EvalRules",
    "annotations_of": "prompts.eval_rules:annotations_of",
    "prior_hit": "prompts.eval_rules:prior_hit",
    "option_letter": "prompts.eval_rules:option_letter",
    "mentions": "prompts.eval_parsing:mentions",
    "ItemAudit": "tasks.tools.audit:ItemAudit",
    "EditScene": "tasks.tools.audit:EditScene",
    "World": "tasks.tools.audit:World",
}

__all__ = ["API_VERSION", *sorted(_EXPORTS)]


def __getattr__(name: str) -> Any:
    ref = _EXPORTS.get(name)
    if ref is None:
        raise AttributeError(
            f"tasks.plugin_api has no {name!r} (API {API_VERSION}; names: {', '.join(sorted(_EXPORTS))})"
        )
    module, _, attr = ref.partition(":")
    value = importlib.import_module(module)
    if attr:
        value = getattr(value, attr)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return list(__all__)


if TYPE_CHECKING:  # what the names are, for type checkers and editors (never imported at run time)
    from miners import npx
    from miners.candidates import (
        COCO,
        FSC,
        VG,
        Selection,
        VGRows,
        area_fraction,
        image_sizes,
        rng_for,
        seeded_names,
        seeded_order,
    )
    from miners.coco import CocoRows, class_notes, drop_unsure, image_notes
    from miners.coco import select_counting as coco_select_counting
    from miners.dispatch import MineJob
    from miners.fsc147 import FSCData, bin_of, split_counts
    from miners.fsc147 import select as fsc147_select
    from miners.sources import SourceSpec
    from miners.vg_scan import Scan
    from prompts.analysis_prompts import ARTICLE_RE, AnalysisOutput
    from prompts.analysis_rules import a_or_an, attribute_slot, norm_text, pick_options, same_word
    from prompts.dedup import find_duplicates, transformers_embedder
    from prompts.eval_parsing import mentions
    from prompts.eval_rules import EvalRules, annotations_of, option_letter, prior_hit
    from prompts.fields import EnglishStr, LocationPhrase, ObjectName, PastPredicate, ThreeDistinct, distinct
    from prompts.instruct_prompts import PromptOutput, mentions_preservation, same_name
    from prompts.instruct_rules import pick
    from prompts.locations import box_center, location_phrase, region_words
    from prompts.rules_api import rules_answer
    from prompts.spec import PromptSpec
    from prompts.vocabulary import (
        ABSURD_ATTRIBUTES,
        ABSURD_OBJECTS,
        ATTRIBUTE_TYPE_BY_DIRECTION,
        CA_VALUES,
        COLOURS,
        MADE_DIRECTIONS,
        MATERIALS,
        NATURAL_DIRECTIONS,
        NATURAL_HINTS,
        SPATIAL_PREDICATES,
        SUBSTITUTES,
    )
    from storage.boxes import grown, intersection, intersects, overlap
    from storage.colours import COUNTER_COLOURS, colour_of, colour_word, colours_apart
    from storage.config_base import FloatRange, FractionRange, IntEdges, IntRange, Section
    from storage.coverage import cut_names, names_mentioned
    from storage.hashing import canonical_json, sha256_hex, stable_id
    from storage.json_columns import (
        candidate_of,
        context_objects,
        cut_objects_of,
        instruction_fields,
        load_json_column,
    )
    from storage.names import basic_name, class_members, same_class
    from storage.rejects import reject
    from storage.task_spec import HOOKS, TaskError, TaskSpec, register_task
    from tasks.stages.qa.mc import question_seed
    from tasks.stages.qa.render import Problem, RenderSettings
    from tasks.stages.qa.text import canonical, clean, plural, with_article
    from tasks.tools.audit import EditScene, ItemAudit, World
