"""The analysis step: per edit, the fields its questions are filled from: a model answer, or a task's own fields.

Which is the task's spec (storage/task_spec.py): its ``analysis_fields`` hook gives the fields
without a model (AT's edit plan, DC's true count), else its ``analysis_prompt`` is asked (RE, CA).
Each edit yields exactly one ``analysis`` row (status ok | discarded | failed); discarded and
failed analyses also yield a reject carrying the model's own reason, so they can be counted
and inspected. The fields of ``ok`` rows feed the question templates.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from prompts.clients.base import MLLMClient
from prompts.config import MLLMConfig
from storage.hashing import canonical_json, stable_id
from storage.image_store import ImageStore
from storage.json_columns import candidate_of, cut_objects_of, instruction_fields
from storage.rejects import RejectRow, reject
from storage.rows import EditRow
from storage.schemas import ITEM_COLUMNS
from storage.task_spec import task_hook

if TYPE_CHECKING:
    from prompts.runner import PromptInput, PromptOutcome
    from prompts.spec import PromptSpec

STAGE = "qa"
ANALYSIS_PROMPT = "analysis_prompt"  # spec hooks this step reads (storage/task_spec.py)
ANALYSIS_FIELDS = "analysis_fields"


@dataclass
class Analysed:
    """Analysis rows, rejects, and the usable fields per edit id."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    rejects: list[RejectRow] = field(default_factory=list)
    fields: dict[str, dict[str, Any]] = field(default_factory=dict)


def analysis_context(edit: EditRow) -> dict[str, Any]:
    """The prompt / rules context of one edit: the candidate's annotations plus what the edit did."""
    from prompts.instruct_prompts import candidate_context
    from prompts.locations import location_phrase

    eid = edit["id"]
    candidate = candidate_of(edit, f"edit {eid}")
    candidate.setdefault("width", edit["width"])
    candidate.setdefault("height", edit["height"])
    candidate.setdefault("task", edit["task"])
    ctx = candidate_context(candidate, task_hook(str(candidate["task"]), "instruct_context"))
    plan = instruction_fields(edit, f"edit {eid}")
    removed = edit.get("target_name") or ctx["target_name"]
    box = list(edit.get("target_box") or ctx["target_box"] or [])
    target, partner = ctx["target_name"], ctx.get("partner_name") or ""
    kept = partner if removed == target else target
    ctx.update(
        edit_id=eid,
        instruction=edit.get("instruction") or "",
        instruction_fields=plan,
        edit_type=edit.get("edit_type"),
        removed_name=removed,
        removed_box=box,
        removed_location=location_phrase(box, ctx["width"], ctx["height"]) if box else "the image",
        kept_name=kept,
        original_attribute=plan.get("original_attribute") or ctx.get("attribute"),
        new_attribute=plan.get("new_attribute"),
        direction=plan.get("direction"),
        cut_objects=cut_objects_of(edit, f"edit {eid}"),
    )
    return ctx


def analysis_row(
    edit: EditRow, status: str, verdict: str | None, fields: dict[str, Any] | None, provenance: dict[str, Any]
) -> dict[str, Any]:
    """One ``analysis`` row: the edit's item columns carried forward, the outcome, provenance."""
    return {
        "id": stable_id(edit["id"], STAGE, "analysis"),
        "edit_id": edit["id"],
        "editor": edit["editor"],
        **{k: edit[k] for k in ITEM_COLUMNS},
        "status": status,
        "verdict": verdict,
        "fields_json": canonical_json(fields) if fields is not None else None,
        "original_image": edit.get("original_image"),
        "edited_image": edit.get("edited_image"),
        **provenance,
    }


NO_PROMPT: dict[str, Any] = {
    "prompt_name": None,
    "prompt_version": None,
    "backend": None,
    "model_id": None,
    "raw_response": None,
}


def analyse_edits(
    client: MLLMClient, edits: list[EditRow], images: ImageStore, mllm: MLLMConfig, *, progress: bool = False
) -> Analysed:
    """Analyse one shard of edits (any mix of tasks). Model calls are batched per prompt."""
    from prompts.runner import PromptInput, run_prompt
    from tasks.engine.prompt_hooks import task_prompt

    out = Analysed()
    uses_images = getattr(client, "uses_images", True)
    by_prompt: dict[str, list[tuple[EditRow, PromptInput]]] = {}
    by_name: dict[str, PromptSpec] = {}
    for e in edits:
        eid, task = e["id"], e["task"]
        try:
            own_fields = task_hook(task, ANALYSIS_FIELDS)
            if own_fields is not None:
                verdict, fields = own_fields(e)
                out.rows.append(analysis_row(e, "ok", verdict, fields, NO_PROMPT))
                out.fields[eid] = fields
                continue
            spec = task_prompt(task, ANALYSIS_PROMPT)
            if spec is None:
                raise ValueError(f"edit {eid}: task {task!r} has no analysis prompt")
            ctx = analysis_context(e)
            imgs = [images.get_bytes(e["original_image"]), images.get_bytes(e["edited_image"])] if uses_images else []
        except (KeyError, TypeError, ValueError, FileNotFoundError, OSError) as exc:
            out.rows.append(analysis_row(e, "failed", None, {"error": str(exc)}, NO_PROMPT))
            out.rejects.append(reject(eid, STAGE, "bad_edit_row", f"edit {eid}: {exc.__class__.__name__}: {exc}"))
            continue
        by_prompt.setdefault(spec.name, []).append((e, PromptInput(ctx, imgs)))
        by_name[spec.name] = spec

    for name in sorted(by_prompt):
        items = by_prompt[name]
        outcomes = run_prompt(
            client,
            by_name[name],
            [inp for _, inp in items],
            parse_retries=mllm.parse_retries,
            progress=progress,
            temperature=mllm.temperature,
            max_tokens=mllm.max_tokens,
        )
        for (e, _), o in zip(items, outcomes):
            _record(out, e, o)
    return out


def _record(out: Analysed, e: EditRow, o: PromptOutcome) -> None:
    """One prompt outcome -> an analysis row, and a reject unless usable."""
    eid = e["id"]
    prov = o.provenance()
    if o.status in ("unparseable", "error"):
        reason = "llm_unparseable" if o.status == "unparseable" else "llm_error"
        out.rows.append(analysis_row(e, "failed", None, {"error": o.error}, prov))
        out.rejects.append(
            reject(
                eid,
                STAGE,
                reason,
                f"edit {eid}: {o.prompt_name} v{o.prompt_version} after {o.attempts} attempt(s): {o.error}",
                {"raw": o.raw},
            )
        )
        return
    if o.status == "not_applicable":
        out.rows.append(analysis_row(e, "discarded", None, None, prov))
        out.rejects.append(
            reject(
                eid, STAGE, "analysis_discarded", f"edit {eid}: the model answered 'not applicable'", {"raw": o.raw}
            )
        )
        return
    f = o.fields
    verdict = f.get("verification_status")
    if f.get("discard") or verdict == "fail":
        why = (
            f.get("discard_reason")
            if f.get("discard_reason") not in (None, "", "none")
            else f.get("verification_issues") or "verification failed"
        )
        out.rows.append(analysis_row(e, "discarded", verdict, f, prov))
        out.rejects.append(
            reject(
                eid,
                STAGE,
                "analysis_discarded",
                f"edit {eid} ({e['task']}): {why}",
                {"verdict": verdict, "reason": why},
            )
        )
        return
    out.rows.append(analysis_row(e, "ok", verdict, f, prov))
    out.fields[eid] = f
