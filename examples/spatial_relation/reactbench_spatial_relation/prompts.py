"""The instruct prompt of the task and its offline (``rules`` backend) answer.

The prompt asks a model to phrase one move; where the object goes was already fixed by the
miner from the annotations (``destination_box`` in the candidate), so every backend moves the
object to the same, checked place and the model only words the request.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    ValidationInfo,
    field_validator,
    model_validator,
)

from reactbench_spatial_relation import geometry
from tasks.plugin_api import EnglishStr, ObjectName, PromptSpec, location_phrase, rules_answer

TEMPLATES = Path(__file__).resolve().parent / "templates"


def _same(a: str, b: str) -> bool:
    def norm(s: str) -> str:
        words = [w for w in s.lower().split() if w not in ("a", "an", "the")]
        return " ".join(w[:-1] if w.endswith("s") and len(w) > 3 else w for w in words)

    return norm(a) == norm(b)


class SRInstruction(BaseModel):
    model_config = ConfigDict(extra="ignore")

    move: ObjectName
    away_from: ObjectName
    instruction: EnglishStr

    @field_validator("instruction")
    @classmethod
    def _sentence(cls, v: str) -> str:
        if len(v.split()) < 6:
            raise ValueError("too short to tell an editor what to move and where")
        return v

    @model_validator(mode="after")
    def _names(self, info: ValidationInfo) -> SRInstruction:
        ctx = info.context or {}
        subject, obj = ctx.get("subject_name"), ctx.get("object_name")
        if subject and not _same(self.move, subject):
            raise ValueError(
                f"move: must be the {subject!r} of the relation (it is the object that moves), got {self.move!r}"
            )
        if obj and not _same(self.away_from, obj):
            raise ValueError(f"away_from: must be the {obj!r} of the relation, got {self.away_from!r}")
        return self


SR_INSTRUCTION = PromptSpec("sr_instruction", "1", "sr_instruction.j2", SRInstruction, 1, template_dir=str(TEMPLATES))


def plan_of(candidate: dict[str, Any]) -> dict[str, Any]:
    """What the miner decided for a candidate: the relation, where the object goes, what then holds."""
    extra = json.loads(candidate.get("extra_json") or "{}")
    return {
        "relation": extra["relation"],
        "destination_box": list(extra["destination_box"]),
        "new_relation": extra["new_relation"],
    }


def extend_context(ctx: dict[str, Any], candidate: dict[str, Any]) -> dict[str, Any]:
    """The core's candidate context plus the move the miner planned."""
    plan = plan_of(candidate)
    w, h = int(candidate["width"]), int(candidate["height"])
    return {
        **ctx,
        "relation": plan["relation"],
        "relation_phrase": geometry.phrase(plan["relation"]),
        "destination_box": plan["destination_box"],
        "destination_location": location_phrase(plan["destination_box"], w, h),
        "new_relation": plan["new_relation"],
        "new_relation_phrase": geometry.phrase(plan["new_relation"]),
    }


@rules_answer("sr_instruction")
def sr_instruction(ctx: dict[str, Any]) -> dict[str, Any] | None:
    """Word the planned move from the annotations; refuse boxes too small to lift cleanly."""
    box = ctx.get("target_box") or []
    if len(box) != 4 or min(box[2], box[3]) < 3 or not ctx.get("destination_box"):
        return None
    subject, obj = ctx["subject_name"], ctx["object_name"]
    instruction = (
        f"Lift the {subject} off its place {ctx['relation_phrase']} the {obj} and set it down {ctx['new_relation_phrase']} the {obj}, "
        f"in {ctx['destination_location']}, at the same size. Fill the spot it leaves with the surrounding background; "
        f"keep the {obj} and every other object exactly as they are."
    )
    return {"move": subject, "away_from": obj, "instruction": instruction}


def instruct_context(candidate: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
    """The ``instruct_context`` hook: what the prompt and its rules answer see beyond the core's context."""
    return extend_context(ctx, candidate)


def instruct_rows(c: dict[str, Any], f: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``instruct_rows`` hook: one move of the subject to the planned place. The row's fields
    carry what the editor (``destination_box``) and the questions (relation, new relation, the two
    objects and the other object's box) need."""
    plan = plan_of(c)
    fields = {
        **f,
        **plan,
        "subject": c["target_name"],
        "object": c["partner_name"],
        "object_box": list(c["partner_box"]),
        "source_box": list(c["target_box"]),
    }
    return [
        {
            "instruction": f["instruction"],
            "edit_type": "move",
            "target_box": c["target_box"],
            "target_name": c["target_name"],
            "fields": fields,
        }
    ]
