"""The base class of every config section: strict (unknown keys fail), frozen, YAML-friendly."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Section(BaseModel):
    """Config sections live beside the code they configure and are composed in ``flows/config.py``."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)
