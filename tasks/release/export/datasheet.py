"""The ``datasheet:`` config section: what a release's metadata says that the run cannot know.

Everything else in ``croissant.json`` and the card comes from the run's own records
(``tasks.release.export.croissant``). These values are the author's: intended use, social impact,
what a reader should not do with the benchmark. An empty one is named in a warning at export
(:func:`empty_fields`) and written as such, never silently dropped.
"""

from __future__ import annotations

import re

from pydantic import Field, field_validator

from storage.config_base import Section

DEFAULT_NAME = "ReactBench-style hallucination benchmark"  # the export's default name
GUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


class DatasheetConfig(Section):
    name: str | None = Field(
        None,
        description="the benchmark's name (card title, Croissant name; seeds the default canary); default: ReactBench-style hallucination benchmark",
    )
    canary_guid: str | None = Field(
        None,
        description="the benchmark's contamination canary (a lowercase GUID), kept across its versions; default: derived from the release name",
    )
    url: str | None = Field(None, description="the release's home page or hub URL (Croissant url)")
    creators: tuple[str, ...] = Field((), description="authors of the benchmark (Croissant creator)")
    citation: str | None = Field(
        None, description="BibTeX to cite the benchmark (Croissant citeAs); default: a @misc entry from the name"
    )
    intended_use: str | None = Field(
        None, description="what the benchmark is for and what it is not for (rai:dataUseCases)"
    )
    social_impact: str | None = Field(None, description="expected social impact of the release (rai:dataSocialImpact)")
    limitations: str | None = Field(
        None, description="limitations beyond those the run records (rai:dataLimitations, added to the recorded ones)"
    )
    biases: str | None = Field(
        None, description="known biases beyond those the run measures (rai:dataBiases, added to the measured ones)"
    )
    personal_sensitive_information: str | None = Field(
        None,
        description="people, faces, text or other personal data the images may show and how that was handled (rai:personalSensitiveInformation)",
    )
    maintenance_plan: str | None = Field(
        None,
        description="who maintains the release, how errors are reported and fixed (rai:dataReleaseMaintenancePlan)",
    )
    annotator_demographics: str | None = Field(
        None, description="who the human reviewers were, as far as disclosed (rai:annotatorDemographics)"
    )

    @field_validator("canary_guid")
    @classmethod
    def _guid(cls, value: str | None) -> str | None:
        if value is not None and not GUID.match(value):
            raise ValueError(f"{value!r} is not a lowercase GUID like 1f0c6a52-7d1e-4f6b-9a43-2b8e5c1d9f70")
        return value


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
