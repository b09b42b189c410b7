"""Turning a model's free text into validated fields: JSON or ``field: value`` lines.

Real answers arrive wrapped in prose, markdown fences, bold keys, bullets and numbering;
this module digs the fields out and validates them against the prompt's pydantic schema.
It never guesses a missing field: an incomplete answer is an error whose message is sent
back to the model on the re-ask.
"""

from __future__ import annotations

import json
import re
import typing
from dataclasses import dataclass

import pydantic
from pydantic.fields import FieldInfo

NOT_APPLICABLE_RE = re.compile(r"\bnot[\s_-]*applicable\b", re.IGNORECASE)
_FENCE_RE = re.compile(r"```[a-zA-Z0-9_-]*\s*\n?(.*?)```", re.DOTALL)
_KEY_LINE_RE = re.compile(
    r"^\s*(?:[-*•>]+\s*|\d+[.)]\s*)?[*_`#\s]*([A-Za-z][A-Za-z0-9 _'’\-/]{0,60}?)[*_`\s]*[:：]\s*(.*)$"
)


class ParseError(ValueError):
    """The answer holds no usable fields or fails validation; ``str(err)`` is fit to send back to the model."""


@dataclass(frozen=True)
class Parsed:
    status: str  # "ok" | "not_applicable"
    fields: dict[str, object] | None


def norm_key(key: str) -> str:
    """``"**Image editing instruction A**"`` -> ``"image_editing_instruction_a"``."""
    key = key.replace("’", "'").replace("'", "")
    return re.sub(r"[^a-z0-9]+", "_", key.strip().lower()).strip("_")


def strip_fences(text: str) -> str:
    """The content of the first markdown code block, or the text itself."""
    m = _FENCE_RE.search(text)
    return m.group(1) if m else text


def find_json_object(text: str) -> dict[str, object] | None:
    """The first balanced ``{...}`` in the text that parses as a JSON object."""
    start = text.find("{")
    while start != -1:
        depth = 0
        in_str = esc = False
        for i in range(start, len(text)):
            ch = text[i]
            if in_str:
                if esc:
                    esc = False
                elif ch == "\\":
                    esc = True
                elif ch == '"':
                    in_str = False
                continue
            if ch == '"':
                in_str = True
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    try:
                        value = json.loads(text[start : i + 1])
                    except json.JSONDecodeError:
                        break
                    if isinstance(value, dict):
                        return value
                    break
        start = text.find("{", start + 1)
    return None


def _field_lookup(model: type[pydantic.BaseModel]) -> dict[str, str]:
    """Normalised key -> field name, including declared aliases."""
    out: dict[str, str] = {}
    for name, info in model.model_fields.items():
        out[norm_key(name)] = name
        for alias in _aliases(info):
            out[norm_key(alias)] = name
    return out


def _aliases(info: FieldInfo) -> list[str]:
    extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
    names = list(extra.get("aliases", []))
    if isinstance(info.alias, str):
        names.append(info.alias)
    return names


def parse_lines(text: str, model: type[pydantic.BaseModel]) -> dict[str, object]:
    """Collect ``key: value`` lines whose key names a field of ``model``; continuation lines extend the value."""
    lookup = _field_lookup(model)
    found: dict[str, list[str]] = {}
    current: str | None = None
    for line in text.splitlines():
        m = _KEY_LINE_RE.match(line)
        if m and norm_key(m.group(1)) in lookup:
            current = lookup[norm_key(m.group(1))]
            found[current] = [m.group(2).strip()]
            continue
        if m and len(m.group(1).split()) <= 3:
            current = None  # "Note: ..." after the fields is commentary, not part of the last value
            continue
        if current is not None and line.strip() and not line.strip().startswith("```"):
            found[current].append(line.strip())
        elif not line.strip():
            current = None
    return {k: _clean_value(" ".join(v).strip()) for k, v in found.items()}


def _clean_value(value: str) -> object:
    """Drop wrapping bold/quotes/braces; decode JSON lists, objects and literals."""
    v = value.strip().strip("*_`").strip()
    if len(v) >= 2 and v[0] == "{" and v[-1] == "}" and ":" not in v and '"' not in v:
        v = v[1:-1].strip()  # the model kept the template's {placeholder} braces around its text
    if v[:1] in "[{":
        try:
            return json.loads(v)
        except json.JSONDecodeError:
            pass
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'“”":
        v = v[1:-1]
    if len(v) >= 2 and v[0] == "“" and v[-1] == "”":
        v = v[1:-1]
    return v


def _normalise_json_keys(data: dict[str, object], model: type[pydantic.BaseModel]) -> dict[str, object]:
    lookup = _field_lookup(model)
    out: dict[str, object] = {}
    for k, v in data.items():
        name = lookup.get(norm_key(str(k)))
        if name is not None:
            out[name] = v
    return out


def extract_fields(text: str, model: type[pydantic.BaseModel]) -> dict[str, object]:
    """Fields from JSON (fenced or inline) or from ``field: value`` lines, whichever yields more."""
    body = strip_fences(text)
    candidates: list[dict[str, object]] = []
    obj = find_json_object(body) or find_json_object(text)
    if obj is not None:
        candidates.append(_normalise_json_keys(obj, model))
    candidates.append(parse_lines(text, model))
    return max(candidates, key=len)


def coerce_lists(fields: dict[str, object], model: type[pydantic.BaseModel]) -> dict[str, object]:
    """A list field answered as ``a; b; c`` or ``a | b | c`` becomes a list."""
    out = dict(fields)
    for name, info in model.model_fields.items():
        v = out.get(name)
        if isinstance(v, str) and typing.get_origin(info.annotation) in (list, tuple):
            parts = [p.strip().strip("\"'") for p in re.split(r"\s*[;|]\s*", v) if p.strip()]
            out[name] = parts
    return out


def format_validation_error(exc: pydantic.ValidationError) -> str:
    """A compact, model-readable list of what was wrong."""
    lines = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "answer"
        msg = err["msg"]
        if err["type"] == "missing":
            msg = "missing: write a line `" + loc + ": ...`"
        lines.append(f"- {loc}: {msg}")
    return "\n".join(lines)


def is_not_applicable_value(value: object) -> bool:
    return isinstance(value, str) and bool(NOT_APPLICABLE_RE.fullmatch(value.strip().strip(".").strip()))


def parse_answer(text: str, model: type[pydantic.BaseModel], context: dict[str, object] | None = None) -> Parsed:
    """Parse and validate one answer.

    "Not applicable" is recognised when a field says so (``edit_type: not_applicable``) or when
    the answer does not validate and says "not applicable" anywhere. Raises :class:`ParseError`.
    """
    if not text or not text.strip():
        raise ParseError("the answer was empty")
    fields = extract_fields(text, model)
    if any(is_not_applicable_value(v) for v in fields.values()):
        return Parsed("not_applicable", None)
    fields = coerce_lists(fields, model)
    try:
        obj = model.model_validate(fields, context=context or {})
    except pydantic.ValidationError as exc:
        if NOT_APPLICABLE_RE.search(text):
            return Parsed("not_applicable", None)
        if not fields:
            raise ParseError("no field of the required format was found in the answer") from None
        raise ParseError(format_validation_error(exc)) from None
    return Parsed("ok", obj.model_dump(mode="json"))
