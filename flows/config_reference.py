"""Render the config reference (every key, type, default, meaning) from the pydantic models.

The README embeds the output between markers; a test keeps the two in sync, so the
documentation never drifts from the schema.
"""

from __future__ import annotations

import json
from typing import Any, get_args

from pydantic import BaseModel

from flows.config import BuildConfig

BEGIN = "<!-- config-reference:begin -->"
END = "<!-- config-reference:end -->"


def _type_name(annotation: Any) -> str:
    text = str(annotation) if get_args(annotation) else getattr(annotation, "__name__", str(annotation))
    return text.replace("typing.", "").replace("NoneType", "None")


def _rows(model: type[BaseModel], prefix: str) -> list[tuple[str, str, str, str]]:
    rows = []
    for name, field in model.model_fields.items():
        key = f"{prefix}{name}"
        ann = field.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            rows.extend(_rows(ann, key + "."))
            continue
        default = field.get_default(call_default_factory=True)
        if isinstance(default, BaseModel):
            default = default.model_dump(mode="json")
        elif isinstance(default, tuple) and default and isinstance(default[0], BaseModel):
            default = [d.model_dump(mode="json") for d in default]
        rows.append((key, _type_name(ann), json.dumps(default, default=str), field.description or ""))
    for name, section in getattr(model, "task_sections", dict)().items():  # mine.<task>: the registered tasks' sections
        rows.extend(_rows(section, f"{prefix}{name}."))
    return rows


def render_reference() -> str:
    lines = ["| key | type | default | meaning |", "|---|---|---|---|"]
    for key, typ, default, desc in _rows(BuildConfig, ""):
        typ, desc = typ.replace("|", "\\|"), desc.replace("|", "\\|")
        lines.append(f"| `{key}` | `{typ}` | `{default}` | {desc} |")
    return "\n".join(lines)


def update_readme(text: str) -> str:
    """Replace the block between the markers with the current reference."""
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    return text[:start] + "\n" + render_reference() + "\n" + text[end:]


if __name__ == "__main__":  # python -m flows.config_reference README.md
    import sys
    from pathlib import Path

    path = Path(sys.argv[1] if len(sys.argv) > 1 else "README.md")
    path.write_text(update_readme(path.read_text()))
