"""What an editor can render, and the check that refuses anything else.

A benchmark item is only as true as its edit: when an instruction asks for "made of clear glass"
and the editor can only recolour, the honest outcome is a reject (``unsupported_edit``, naming
the editor and the field), never an approximation that the questions then misdescribe.

Each editor class declares a :class:`Capabilities`: the edit kinds it does and, for attribute
edits, the families and values it can draw (``None`` = an open set: a generative model is
asked in words and checked afterwards by :mod:`editors.verify`). Editors that clone pixels
declare ``clone_from_image``: a move or an addition copies the target itself, and a replacement
only copies another annotated instance of the requested class (``replacement`` + ``donor_box``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from storage.annotation.boxes import iou
from storage.annotation.names import basic_name

UNSUPPORTED = "unsupported_edit"
# Words a value may carry around its one meaningful word ("a striped pattern", "pink-coloured").
_FILLER = {
    "a",
    "an",
    "the",
    "colour",
    "color",
    "coloured",
    "colored",
    "pattern",
    "patterned",
    "polka",
    "all",
    "over",
    "whole",
}
VALUE_KEYS = ("new_attribute", "C_new_attribute", "target_attribute", "attribute_new", "new_value")


@dataclass(frozen=True)
class Capabilities:
    """Edit kinds, and per attribute family the values an editor renders (``None``: open set)."""

    kinds: frozenset[str]
    attribute_values: Mapping[str, Mapping[str, str]] | None = None  # family -> {value word: what is drawn}
    clone_from_image: bool = False

    @property
    def open_set(self) -> bool:
        return self.attribute_values is None

    def families(self) -> list[str]:
        return sorted(self.attribute_values or {}) if not self.open_set else ["*"]

    def to_json(self) -> dict[str, object]:
        """The declaration as plain JSON (instruct prompts, the stage key, reports)."""
        values = (
            None if self.attribute_values is None else {f: sorted(v) for f, v in sorted(self.attribute_values.items())}
        )
        return {"kinds": sorted(self.kinds), "attribute_values": values, "clone_from_image": self.clone_from_image}

    def resolve_value(self, value: str) -> tuple[str, str] | None:
        """(family, value word) when ``value`` names exactly one renderable value, else None."""
        if self.attribute_values is None:
            return ("*", value)
        words = [w for w in re.findall(r"[a-z]+", value.lower()) if w not in _FILLER]
        if len(words) != 1:
            return None
        for family, values in sorted(self.attribute_values.items()):
            if words[0] in values:
                return family, words[0]
        return None


def requested_value(fields: Mapping[str, object], instruction: str, caps: Capabilities) -> tuple[str, str] | None:
    """The attribute value a request asks for: the first structured value field when present
    (it must name one renderable value), else the single renderable word of the instruction."""
    for key in VALUE_KEYS:
        if fields.get(key):
            return (key, str(fields[key]))
    if caps.attribute_values is None:
        return ("instruction", instruction)
    words = re.findall(r"[a-z]+", (instruction or "").lower())
    known = {v for vals in caps.attribute_values.values() for v in vals}
    hits = [w for w in words if w in known]
    return ("instruction", hits[-1]) if hits else None


def _same_class(a: str, b: str) -> bool:
    return bool(a) and basic_name(a) == basic_name(b)


def donor_for(
    fields: Mapping[str, object], target_box: Sequence[float] | None
) -> tuple[dict[str, object] | None, str]:
    """The annotated object a replacement clones: the context object at ``donor_box`` whose class
    is the requested ``replacement``; (None, why) when there is none."""
    wanted = str(fields.get("replacement") or "").strip()
    if not wanted:
        return None, "replacement: the request names no class to replace with"
    donor = fields.get("donor_box")
    context = [o for o in fields.get("_context", []) or [] if isinstance(o, dict) and o.get("box")]
    same = [o for o in context if _same_class(str(o.get("name") or ""), wanted)]
    if not same:
        return None, f"replacement: no other annotated {wanted!r} in the image to clone"
    if donor is None:
        return None, f"donor_box: the request does not say which annotated {wanted!r} to clone"
    for o in same:
        if all(abs(float(a) - float(b)) <= 1.0 for a, b in zip(o["box"], donor)):
            if target_box is not None and iou(o["box"], target_box) > 0.5:
                return None, f"donor_box: {list(donor)} is the target itself"
            return o, ""
    return None, f"donor_box: {list(donor)} is not an annotated {wanted!r} of the image"


@dataclass
class Refusal:
    field: str
    detail: str


def check_capabilities(
    editor: str,
    caps: Capabilities,
    kind: str,
    fields: Mapping[str, object],
    instruction: str,
    box: Sequence[float] | None,
) -> Refusal | None:
    """None when ``caps`` cover the request, else what is outside them (field + why)."""
    if kind == "attribute" and not caps.open_set:
        got = requested_value(fields, instruction, caps)
        allowed = {f: sorted(v) for f, v in sorted((caps.attribute_values or {}).items())}
        if got is None:
            return Refusal(
                "instruction", f"editor {editor!r} renders only {allowed}; the instruction names none of them"
            )
        key, value = got
        if caps.resolve_value(value) is None:
            return Refusal(key, f"editor {editor!r} cannot render {key}={value!r}; it renders only {allowed}")
    if kind == "replace" and caps.clone_from_image:
        donor, why = donor_for(fields, box)
        if donor is None:
            return Refusal(
                why.split(":", 1)[0],
                f"editor {editor!r} replaces only with another annotated instance of the requested class; {why}",
            )
    return None


@dataclass(frozen=True)
class EditorLimits:
    """What the instruct stage may propose, from every configured editor's capabilities.

    ``limited`` is True when no configured editor takes an open set of attributes: then only
    edits at least one editor can render are proposed. With an open-set editor among them every
    instruction goes to every editor, and the limited ones reject what they cannot do.
    """

    limited: bool
    kinds: tuple[str, ...] = ()
    attribute_values: dict[str, tuple[str, ...]] = field(default_factory=dict)
    clone_from_image: bool = False

    def to_json(self) -> dict[str, object]:
        return {
            "limited": self.limited,
            "kinds": list(self.kinds),
            "attribute_values": {k: list(v) for k, v in self.attribute_values.items()},
            "clone_from_image": self.clone_from_image,
        }


def combine(caps: Sequence[Capabilities]) -> EditorLimits:
    """The union of limited editors' capabilities, or unlimited when any editor has an open set."""
    if not caps or any(c.open_set for c in caps):
        return EditorLimits(False)
    kinds = sorted({k for c in caps for k in c.kinds})
    values: dict[str, set[str]] = {}
    for c in caps:
        for fam, vals in (c.attribute_values or {}).items():
            values.setdefault(fam, set()).update(vals)
    return EditorLimits(
        True,
        tuple(kinds),
        {f: tuple(sorted(v)) for f, v in sorted(values.items())},
        any(c.clone_from_image for c in caps),
    )
