"""The base class of every config section: strict (unknown keys fail), frozen, YAML-friendly."""

from __future__ import annotations

import math
import types
from itertools import pairwise
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    ValidationError,
    ValidationInfo,
    field_validator,
)

# Bounds on every config value (any section): a longer text is no path (PATH_MAX is 4096) or
# name, and an integer past 64 bits cannot reach numpy or Parquet.
MAX_TEXT = 4096
MAX_INT = 2**63 - 1

# ``Field(..., json_schema_extra=NOT_IN_STAGE_KEY)``: a setting that changes how a stage runs
# (concurrency, timeouts, caches, devices) but not what it writes, so it stays out of stage keys.
NOT_IN_STAGE_KEY: dict[str, Any] = {"stage_key": False}


class Section(BaseModel):
    """Config sections live beside the code they configure and are composed in ``tasks/engine/build_config.py``."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)

    @field_validator("*", mode="before")
    @classmethod
    def _finite_and_of_its_type(cls, value: object, info: ValidationInfo) -> object:
        """Every field of every section, before pydantic's lax coercion: a NaN or an infinity
        (``.nan`` in YAML compares false with every bound, so a range check lets it through), a
        boolean where a number is expected (pydantic reads ``seed: true`` as 1) and a NUL byte in
        any text (a path with one fails only when a stage opens it) are refused, naming the field."""
        field = cls.model_fields.get(info.field_name or "")
        problem = value_problem(value, field.annotation if field is not None else Any)
        if problem is not None:
            raise ValueError(problem)
        return value

    def stage_key(self) -> dict[str, object]:
        """The section as a stage key sees it: every field (JSON values, nested sections alike)
        except those marked ``NOT_IN_STAGE_KEY``. Stages hash the sections they read through
        this, so a new setting joins the key unless its declaration says it cannot change output."""
        out: dict[str, object] = {}
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


def _fraction(pair: tuple[float, float]) -> tuple[float, float]:
    if not all(0.0 <= v <= 1.0 for v in pair):
        raise ValueError(f"{list(pair)} is outside [0, 1]: an area is a fraction of the image, e.g. [0.005, 0.5]")
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
# An ordered range of fractions (an area over the image's): a bound outside [0, 1] selects what cannot exist.
FractionRange = Annotated[tuple[float, float], AfterValidator(_ordered), AfterValidator(_fraction)]
# Bin edges: at least two, strictly increasing.
IntEdges = Annotated[tuple[int, ...], AfterValidator(_increasing)]


def describe_errors(exc: ValidationError, prefix: str = "") -> str:
    """A validation error on one line: each bad key path (after ``prefix``) with what is wrong,
    ``; `` between several; the value given where it is a scalar."""
    parts = []
    for err in exc.errors():
        path = ".".join(str(p) for p in err["loc"])
        path = prefix + path if path else (prefix.rstrip(".") or "<root>")
        msg = err["msg"].removeprefix("Value error, ")
        got = err.get("input")
        hint = ""
        if err["type"] == "extra_forbidden":
            hint = " (unknown key: check the spelling against the README's config reference)"
        elif not isinstance(got, (dict, list, tuple)) and err["type"] != "value_error":
            hint = f" (got {got!r})"
        parts.append(f"{path}: {msg}{hint}")
    return "; ".join(parts)


def value_problem(value: object, annotation: object, at: str = "") -> str | None:
    """Why ``value`` cannot be a config value of type ``annotation`` (None when it can): a
    non-finite float, a boolean for a number, a NUL byte in a string, here or in any item of a
    list or mapping. Nested sections are left to their own fields' check."""
    if isinstance(value, bool):
        if _wants_number(annotation) and not _admits_bool(annotation):
            return f"{at}{str(value).lower()} is a boolean, not a number; write the number itself"
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return f"{at}{value} is not a finite number (NaN and infinity are refused)"
    if isinstance(value, int) and not -MAX_INT <= value <= MAX_INT:
        return f"{at}{value} is too large: a config number must fit in 64 bits (within +-{MAX_INT})"
    if isinstance(value, str):
        if "\x00" in value:
            shown = value if len(value) <= 60 else value[:57] + "..."
            return f"{at}{shown!r} contains a NUL byte, which no path or name can hold"
        if len(value) > MAX_TEXT:
            return f"{at}{len(value):,} characters ({value[:20]!r}...): over the {MAX_TEXT:,}-character limit of a config value; shorten it"
        return None
    base = _unwrap(annotation)
    if isinstance(base, type) and issubclass(base, BaseModel):
        return None  # a nested section checks its own fields
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            problem = value_problem(item, _item_type(base, i), f"{at}item {i}: ")
            if problem is not None:
                return problem
    elif isinstance(value, dict):
        value_type = _mapping_value_type(base)
        for key, item in value.items():
            problem = value_problem(key, str, f"{at}key: ") or value_problem(item, value_type, f"{at}{key}: ")
            if problem is not None:
                return problem
    return None


def _unwrap(annotation: object) -> object:
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    return annotation


def _members(annotation: object) -> tuple[object, ...]:
    """The types a (possibly optional or union) annotation admits, unwrapped."""
    annotation = _unwrap(annotation)
    if get_origin(annotation) in (Union, types.UnionType):
        return tuple(m for a in get_args(annotation) for m in _members(a))
    return (annotation,)


def _wants_number(annotation: object) -> bool:
    for m in _members(annotation):
        if m in (int, float):
            return True
        if get_origin(m) is Literal and any(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in get_args(m)
        ):
            return True
    return False


def _admits_bool(annotation: object) -> bool:
    for m in _members(annotation):
        if m is bool or m is Any:
            return True
        if get_origin(m) is Literal and any(isinstance(v, bool) for v in get_args(m)):
            return True
    return False


def _item_type(annotation: object, index: int) -> object:
    """The type of item ``index`` of a tuple / list annotation (Any when unknown)."""
    for m in _members(annotation):
        args = get_args(m)
        if get_origin(m) is tuple and args:
            if len(args) == 2 and args[1] is Ellipsis:
                return args[0]
            return args[index] if index < len(args) else Any
        if get_origin(m) in (list, set, frozenset) and args:
            return args[0]
    return Any


def _mapping_value_type(annotation: object) -> object:
    for m in _members(annotation):
        if get_origin(m) is dict and len(get_args(m)) == 2:
            return get_args(m)[1]
    return Any
