"""The ``datasheet:`` config section: what a release's metadata says that the run cannot know.

Everything else in ``croissant.json`` and the card comes from the run's own records
(``tasks.release.export.croissant``). These values are the author's: intended use, social impact,
what a reader should not do with the benchmark. An empty one is named in a warning at export
(:func:`empty_fields`) and written as such, never silently dropped.
"""

from __future__ import annotations

from tasks.engine.config import DatasheetConfig

__all__ = ["DEFAULT_NAME", "REQUIRED", "DatasheetConfig", "empty_fields"]

DEFAULT_NAME = "ReactBench-style hallucination benchmark"  # the export's default name


# the author's fields that a venue reads; an empty one is warned about at export
REQUIRED = (
    "url",
    "intended_use",
    "social_impact",
    "personal_sensitive_information",
    "maintenance_plan",
)


def empty_fields(sheet: DatasheetConfig) -> list[str]:
    """The ``datasheet.<key>`` names of the author's fields left empty (for the export's warning)."""
    return [f"datasheet.{k}" for k in REQUIRED if not (getattr(sheet, k) or "").strip()]
