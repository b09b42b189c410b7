"""Model checks of performed edits: the instruction's expected outcome asked as yes/no questions.

When the configured MLLM backend sees images (``openai``, ``transformers``) and
``edit.qc.verify.model_checks`` is on, every edit that passed the pixel checks gets one question
derived from its instruction ("Is there a wheel in the lower left part of the image?"), asked on
the original and on the edited image through the ``verify_edit`` prompt and its structured
parser. The expected answers (removal: yes -> no; recolour / move / add / replace: no -> yes) must
both come back, else the edit becomes ``auto_rejected`` (and the qa stage records a
``verify_failed`` reject); an unreadable answer fails too (the item is not shown to people on an unchecked claim).
"""

from __future__ import annotations

import json
from typing import Any

from editors.base import canonical_edit_type
from editors.capabilities import VALUE_KEYS
from prompts.locations import location_phrase
from storage.hashing import canonical_json
from storage.json_columns import instruction_fields
from tasks.engine.base import RunContext
from tasks.engine.build_config import BuildConfig

IMAGE_BACKENDS = ("openai", "transformers")


def model_checks_on(ctx: RunContext) -> bool:
    """Whether this run asks the MLLM about its edits."""
    return model_checks_configured(ctx.config)


def model_checks_configured(config: BuildConfig) -> bool:
    """Whether ``config`` asks the MLLM about the edits (the edit stage's model endpoint)."""
    verify = config.edit.qc.verify
    return bool(verify.enabled and verify.model_checks and config.mllm.backend in IMAGE_BACKENDS)


def stage_key(ctx: RunContext) -> dict[str, Any] | None:
    """What of the MLLM config changes the model checks' verdicts (part of the edit stage key)."""
    if not model_checks_on(ctx):
        return None
    from prompts.verify_prompts import VERIFY_EDIT

    return {"mllm": ctx.config.mllm.stage_key(), "prompt": [VERIFY_EDIT.name, VERIFY_EDIT.version]}


def _a(name: str) -> str:
    return ("an " if name[:1].lower() in "aeiou" else "a ") + name


def expected_question(
    row: dict[str, Any], fields: dict[str, Any], meta: dict[str, Any]
) -> tuple[str, str, str] | None:
    """(question, answer on the original, answer on the edited image), or None when the instruction
    gives nothing a yes/no question can pin down without ambiguity."""
    kind = canonical_edit_type(row.get("edit_type"))
    name = str(row.get("target_name") or "").strip()
    box = row.get("target_box")
    w, h = int(row["width"]), int(row["height"])
    if not name or not box:
        return None
    where = location_phrase(box, w, h)
    if kind == "remove":
        return f"Is there {_a(name)} in {where}?", "yes", "no"
    if kind == "attribute":
        value = next((str(fields[k]) for k in VALUE_KEYS if fields.get(k)), "")
        if not value:
            return None
        return f"Is the {name} in {where} {value}?", "no", "yes"
    if kind in ("move", "add"):
        dest = meta.get("destination_box") or fields.get("destination_box")
        if not dest or location_phrase(dest, w, h) == where:
            return None  # the same words for both places: the question could not tell them apart
        return f"Is there {_a(name)} in {location_phrase(dest, w, h)}?", "no", "yes"
    if kind == "replace":
        repl = str(fields.get("replacement") or "").strip()
        if not repl:
            return None
        return f"Is there {_a(repl)} in {where}?", "no", "yes"
    return None


def model_verify(ctx: RunContext, edits: list[dict[str, Any]]) -> None:
    """Ask the model about every pixel-verified edit of a batch; update the rows in place (the
    ``verify_failed`` reject is written by the qa stage, which passes over such edits)."""
    if not edits or not model_checks_on(ctx):
        return
    from prompts.runner import PromptInput, run_prompt
    from prompts.verify_prompts import VERIFY_EDIT
    from tasks.engine.mllm import shared_client

    todo: list[tuple[dict[str, Any], dict[str, Any], tuple[str, str, str]]] = []
    for row in edits:
        qc = json.loads(row["qc_json"])
        verdict = qc.get("verification") or {}
        if not verdict.get("passed", True):
            continue
        fields = instruction_fields(row, f"edit {row['id']}")
        q = expected_question(row, fields, qc.get("editor_meta") or {})
        if q is None:
            verdict.setdefault("checks", {})["model"] = {
                "skipped": "no unambiguous yes/no question for this instruction"
            }
            row["qc_json"] = canonical_json(qc | {"verification": verdict})
            continue
        todo.append((row, qc, q))
    if not todo:
        return
    client = shared_client(ctx.config.mllm, ctx.run, no_cache=bool(ctx.options.get("no_cache")))
    inputs = []
    for row, _, (question, _, _) in todo:
        for rel in (row["original_image"], row["edited_image"]):
            inputs.append(PromptInput({"question": question}, [ctx.images.get_bytes(rel)]))
    cfg = ctx.config.mllm
    outcomes = run_prompt(client, VERIFY_EDIT, inputs, parse_retries=cfg.parse_retries, temperature=0.0, max_tokens=16)
    for i, (row, qc, (question, want_orig, want_edit)) in enumerate(todo):
        got = [o.fields["answer"] if o.status == "ok" and o.fields else None for o in outcomes[2 * i : 2 * i + 2]]
        verdict = qc["verification"]
        verdict["method"] = "pixels+model"
        verdict.setdefault("checks", {})["model"] = {
            "question": question,
            "expected": [want_orig, want_edit],
            "answers": got,
            "model_id": outcomes[2 * i].model_id,
        }
        if got != [want_orig, want_edit]:
            why = "unreadable" if None in got else f"original {got[0]}, edited {got[1]}"
            verdict["passed"] = False
            verdict.setdefault("failures", []).append(
                f"model check: {question!r} expected {want_orig} -> {want_edit}, got {why}"
            )
            row["status"] = "auto_rejected"
        row["qc_json"] = canonical_json(qc | {"verification": verdict})
