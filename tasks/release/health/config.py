"""``health:``: the figures over which ``reactbench export --strict`` refuses a release.

Without ``--strict`` an export over them only warns (the paper's own design has all-"No" yes/no
types, so the defaults flag it rather than forbid it)."""

from __future__ import annotations

from pydantic import Field

from storage.config_base import Section


class HealthConfig(Section):
    max_trivial_accuracy: float = Field(
        0.9,
        ge=0.0,
        le=1.0,
        description="most a trivial model (always Yes / No, one fixed letter, the most frequent short answer) may score on any task and question type of the main set",
    )
    max_trivial_accuracy_by: dict[str, float] = Field(
        default_factory=dict,
        description='per "<task>/<qtype>" (e.g. counterfactual_attribute/YN: 0.6): overrides max_trivial_accuracy',
    )
    max_blind_prior_targeted: float = Field(
        0.5,
        ge=0.0,
        le=1.0,
        description="most the blind prior model (question text + mined statistics, no image) may score on any task's targeted items",
    )
    max_duplicate_share: float = Field(
        0.05,
        ge=0.0,
        le=1.0,
        description="most share of items that repeat another item's question with the same gold, or of source images near-identical to another",
    )
    image_hash_distance: int = Field(
        4,
        ge=0,
        le=64,
        description="perceptual-hash (pHash, 64 bits) Hamming distance at or under which two images are near-duplicates",
    )
