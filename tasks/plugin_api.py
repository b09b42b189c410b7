"""The public plugin API: every type and helper a task plugin (or a source plugin) needs, in one
module. Plugins import from here only, never from the core's rooms, so the core can move its
modules without breaking them; ``lint-imports`` checks that for the built-in tasks
(``tasks/builtin_tasks/<id>/``) and for ``examples/spatial_relation``.

Why names are resolved lazily: a task's ``task.py`` imports :class:`TaskSpec` from here, and the
entry points of every task load whenever the registry is read (``reactbench tasks``, config
validation). Importing the whole core there would cost seconds and pull in models; so each name
imports its defining module on first access (PEP 562 ``__getattr__``) and nothing else.

Each name is declared once, as an import in the ``if TYPE_CHECKING:`` block at the end: type
checkers and editors read the block as it is, and at run time :func:`_declared` reads it from this
file's source to know where each name lives (the block itself never runs). Adding a name is adding
an import there (and a line below, which ``tests/flows/test_plugin_api.py`` checks).

Versioning: :data:`API_VERSION` is ``major.minor``. A minor bump adds names; a major bump removes
or changes one (a plugin may check ``API_VERSION.split(".")[0]``). The names and what they are:

Spec and registry
  ``TaskSpec``, ``TaskHooks`` (1.1: the typed hooks), ``TaskError``, ``HOOKS`` (the hook names a spec may set, with their documented
  signatures), ``register_task``.
Config
  ``Section`` (base of a task's ``params``), ``FloatRange``, ``FractionRange`` (1.2: an ordered range
  within [0, 1], e.g. an area fraction), ``IntRange``, ``IntEdges``.
Mining (the ``miners={source: ...}`` hooks; contract in ``docs/mining.md``)
  ``MineJob``, ``Scan``, ``Selection``, ``VGRows``, ``ObjectRef`` (2.0: a row's target or
  partner), ``rng_for``, ``seeded_order``, ``seeded_names``, ``area_fraction``, ``image_sizes``,
  ``npx`` (numpy grouping helpers),
  ``bin_of``, ``FSCData``, ``split_counts``, ``fsc147_select``, ``coco_select_counting`` (the
  count-stratified selections of the FSC147 and COCO sources), ``CocoRows``, ``drop_unsure``,
  ``image_notes``, ``class_notes``,
  ``source names`` ``VG``, ``FSC``, ``COCO``, and ``SourceSpec`` for a source plugin (2.2: its
  ``mine`` may take a fifth parameter, the requested tasks' miners the stage resolved, each a
  ``TaskMiner``; one with four still works).
Rows, ids, rejects
  ``reject``, ``stable_id``, ``canonical_json``, ``candidate_of``, ``context_objects``,
  ``cut_objects_of``, ``instruction_fields``, ``load_json_column``; 2.1: the rows hooks receive, as
  typed dicts of their artifact's columns: ``CandidateRow``, ``InstructionRow``, ``EditRow``, ``RejectRow``.
Shared vocabulary
  ``intersection``, ``intersects`` (boxes), ``colour_of``, ``colours_apart``, ``basic_name``,
  ``same_class``, ``cut_names``, ``names_mentioned``, ``region_words``, ``location_phrase``.
Prompts (``instruct_prompt`` / ``analysis_prompt`` and their rules answers)
  ``PromptSpec``, ``rules_answer``, ``find_duplicates`` and ``transformers_embedder``
  (near-duplicate instructions; 2.0: ``Embedder``, the type of an embedding function),
  ``PromptOutput`` and ``AnalysisOutput`` (answer schema bases), field types ``EnglishStr``,
  ``ObjectName``, ``LocationPhrase``, ``PastPredicate``, ``ThreeDistinct``, ``distinct``,
  ``same_name``, ``mentions_preservation``, ``ARTICLE_RE``; the rules answers' seeded draws and
  word forms ``pick``, ``pick_options``, ``norm_text``, ``a_or_an``, ``same_word``,
  ``attribute_slot``, ``box_center``, ``sha256_hex``; the word lists ``COLOURS`` and
  ``MATERIALS`` (2.0: the lists only one built-in task used, ``CA_VALUES`` and the like, moved
  into that task's package) and ``COUNTER_COLOURS``, ``colour_word``, ``overlap``, ``grown``,
  ``class_members``.
Questions (``qa_slots``, ``qa_beaf``, ``analysis_fields``)
  ``Problem``, ``RenderSettings``, ``question_seed``, ``clean``, ``canonical``,
  ``with_article``, ``plural``.
Evaluation and audit
  ``EvalRules`` (with ``annotations_of``, ``prior_hit``, ``option_letter``, ``mentions``: what
  the rules backend's answers read), ``ItemAudit``, ``EditScene``, ``World``.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from typing import TYPE_CHECKING

API_VERSION = "2.2"


def _declared() -> dict[str, tuple[str, str]]:
    """name -> (module, attribute) of every name of the API: the ``from module import attribute``
    statements of this module's ``if TYPE_CHECKING:`` block, read from its source."""
    tree = ast.parse(Path(__file__).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            return {
                alias.asname or alias.name: (imp.module or "", alias.name)
                for imp in node.body
                if isinstance(imp, ast.ImportFrom)
                for alias in imp.names
            }
    raise RuntimeError(f"{__file__}: no `if TYPE_CHECKING:` block declaring the plugin API")


_EXPORTS = _declared()
__all__ = ["API_VERSION", *sorted(_EXPORTS)]


def __getattr__(name: str) -> object:
    ref = _EXPORTS.get(name)
    if ref is None:
        raise AttributeError(
            f"tasks.plugin_api has no {name!r} (API {API_VERSION}; names: {', '.join(sorted(_EXPORTS))})"
        )
    module, attr = ref
    owner = importlib.import_module(module)
    # as ``from module import attr`` does: an attribute of the module, else its submodule (``npx``)
    value = getattr(owner, attr) if hasattr(owner, attr) else importlib.import_module(f"{module}.{attr}")
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
        ObjectRef,
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
    from miners.dispatch import MineJob, TaskMiner
    from miners.fsc147 import FSCData, bin_of, split_counts
    from miners.fsc147 import select as fsc147_select
    from miners.sources import SourceSpec
    from miners.vg_scan import Scan
    from prompts.analysis_prompts import ARTICLE_RE, AnalysisOutput
    from prompts.analysis_rules import a_or_an, attribute_slot, norm_text, pick_options, same_word
    from prompts.dedup import Embedder, find_duplicates, transformers_embedder
    from prompts.eval_parsing import mentions
    from prompts.eval_rules import EvalRules, annotations_of, option_letter, prior_hit
    from prompts.fields import EnglishStr, LocationPhrase, ObjectName, PastPredicate, ThreeDistinct, distinct
    from prompts.instruct_prompts import PromptOutput, mentions_preservation, same_name
    from prompts.instruct_rules import pick
    from prompts.locations import box_center, location_phrase, region_words
    from prompts.rules_api import rules_answer
    from prompts.spec import PromptSpec
    from prompts.vocabulary import (
        COLOURS,
        MATERIALS,
    )
    from storage.annotation.boxes import grown, intersection, intersects, overlap
    from storage.annotation.colours import COUNTER_COLOURS, colour_of, colour_word, colours_apart
    from storage.annotation.coverage import cut_names, names_mentioned
    from storage.annotation.names import basic_name, class_members, same_class
    from storage.config_base import FloatRange, FractionRange, IntEdges, IntRange, Section
    from storage.hashing import canonical_json, sha256_hex, stable_id
    from storage.json_columns import (
        candidate_of,
        context_objects,
        cut_objects_of,
        instruction_fields,
        load_json_column,
    )
    from storage.rejects import RejectRow, reject
    from storage.rows import CandidateRow, EditRow, InstructionRow
    from storage.task_spec import HOOKS, TaskError, TaskHooks, TaskSpec, register_task
    from tasks.stages.qa.mc import question_seed
    from tasks.stages.qa.render import Problem, RenderSettings
    from tasks.stages.qa.text import canonical, clean, plural, with_article
    from tasks.tools.audit import EditScene, ItemAudit, World
