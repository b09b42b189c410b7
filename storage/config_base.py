"""The base class of every config section: strict (unknown keys fail), frozen, YAML-friendly."""

from __future__ import annotations

from itertools import pairwise
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict

# ``Field(..., json_schema_extra=NOT_IN_STAGE_KEY)``: a setting that changes how a stage runs
# (concurrency, timeouts, caches, devices) but not what it writes, so it stays out of stage keys.
NOT_IN_STAGE_KEY: dict[str, Any] = {"stage_key": False}


class Section(BaseModel):
    """Config sections live beside the code they configure and are composed in ``flows/config.py``."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)

    def stage_key(self) -> dict[str, Any]:
        """The section as a stage key sees it: every field (JSON values, nested sections alike)
        except those marked ``NOT_IN_STAGE_KEY``. Stages hash the sections they read through
        this, so a new setting joins the key unless its declaration says it cannot change output."""
        out: dict[str, Any] = {}
        dumped = self.model_dump(mode="json")
        for name, info in type(self).model_fields.items():
            extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
            if extra.get("stage_key") is False:
                continue
            value = getattr(self, name)
            out[name] = value.stage_key() if isinstance(value, Section) else dumped[name]
        return out


def _ordered(pair: tuple[Any, Any]) -> tuple[Any, Any]:
    lo, hi = pair
    if lo > hi:
        raise ValueError(f"[{lo}, {hi}] is inverted: write the range as [low, high], e.g. [{hi}, {lo}]")
    return pair


def _increasing(edges: tuple[Any, ...]) -> tuple[Any, ...]:
    if len(edges) < 2:
        raise ValueError(f"{list(edges)}: give at least two bin edges")
    for a, b in pairwise(edges):
        if a >= b:
            raise ValueError(f"{list(edges)}: bin edges must increase ({a} is followed by {b})")
    return edges


# An inclusive [low, high] setting: an inverted pair would silently select nothing.
FloatRange = Annotated[tuple[float, float], AfterValidator(_ordered)]
IntRange = Annotated[tuple[int, int], AfterValidator(_ordered)]
# Bin edges: at least two, strictly increasing.
IntEdges = Annotated[tuple[int, ...], AfterValidator(_increasing)]
