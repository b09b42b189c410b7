"""Render the config reference (every key, type, default, meaning) from the pydantic models.

The README embeds the output between markers; a test keeps the two in sync, so the
documentation never drifts from the schema. It documents this package's settings: the
``mine.<task>`` sections of the tasks it registers itself, not those of task plugins that happen
to be installed beside it (they document their own, e.g. examples/spatial_relation).
"""

from __future__ import annotations

import json
from typing import Any, get_args

from pydantic import BaseModel

from flows.config import BuildConfig

DISTRIBUTION = "reactbench-pipeline"  # pyproject's [project] name

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
    for name, section in getattr(
        model, "task_sections", dict
    )().items():  # mine.<task>: this package's tasks' sections
        if name in own_tasks():
            rows.extend(_rows(section, f"{prefix}{name}."))
    return rows


def own_tasks() -> set[str]:
    """The task ids this package's own ``reactbench.tasks`` entry points register."""
    from importlib.metadata import entry_points

    from storage.task_spec import ENTRY_POINT_GROUP

    return {
        ep.name for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.dist is not None and ep.dist.name == DISTRIBUTION
    }


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
