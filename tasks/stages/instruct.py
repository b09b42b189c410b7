"""The instruct stage: one MLLM call per candidate turns mined candidates into edit instructions.

What a task asks and what its answer becomes are the task's spec (storage/task_spec.py): its
``instruct_prompt`` (the prompt, in ``prompts/``), its ``instruct_rows`` (answer -> rows; the
built-in tasks' are the ``instruct_rows_*`` functions below) and, where a task drops near-duplicate
instructions of one object, its ``instruct_dedup``. For the built-ins: RE -> a removal
instruction; CA -> two counter-commonsense instructions (two rows) with near-duplicate
attributes of the same object dropped as rejects; AT -> an edit plan with the question
materials; DC -> the ambiguity filter decides keep (applicable) or drop (not_applicable). Every
candidate yields at least one row (``applicable``, ``not_applicable`` or ``failed``) and every
failure also a reject, so nothing disappears.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from prompts.clients.base import MLLMClient
from prompts.config import MLLMConfig
from storage import addresses
from storage.hashing import canonical_json, stable_id
from storage.image_store import BadImage, check_source_size
from storage.rejects import RejectRow, reject
from storage.rows import CandidateRow, InstructionRow
from storage.task_spec import task_hook
from tasks.engine.base import RunContext, ShardResult, Stage, chunk
from tasks.engine.build_config import BuildConfig
from tasks.engine.config import InstructConfig
from tasks.engine.mllm import shared_client
from tasks.engine.prompt_hooks import registered_task_prompts, task_prompt
from tasks.engine.reuse import Entry, ItemReuse, code_version, task_code

if TYPE_CHECKING:
    from editors.capabilities import EditorLimits
    from prompts.runner import PromptInput, PromptOutcome
    from prompts.spec import PromptSpec

STAGE = "instruct"
INSTRUCT_PROMPT = "instruct_prompt"  # spec hooks this stage reads (storage/task_spec.py)
INSTRUCT_ROWS = "instruct_rows"
INSTRUCT_DEDUP = "instruct_dedup"


def plan_shards(candidates: list[CandidateRow], shard_size: int) -> list[list[CandidateRow]]:
    """Sorted by id; candidates of a task that dedups (``instruct_dedup``) stay in one shard per
    (task, object name), since dedup is per object (the built-ins: CA)."""
    rows = sorted(candidates, key=lambda r: r["id"])
    dedups = {t for t in {r["task"] for r in rows} if task_hook(t, INSTRUCT_DEDUP) is not None}
    others = [r for r in rows if r["task"] not in dedups]
    shards = chunk(others, shard_size)
    groups: dict[tuple[str, str], list[CandidateRow]] = {}
    for r in rows:
        if r["task"] in dedups:
            groups.setdefault((r["task"], str(r.get("target_name") or "")), []).append(r)
    current: list[CandidateRow] = []
    for key in sorted(groups):
        if current and len(current) + len(groups[key]) > shard_size:
            shards.append(current)
            current = []
        current.extend(groups[key])
    if current:
        shards.append(current)
    return shards


class InstructStage(Stage):
    name = STAGE
    outputs = addresses.outputs(addresses.INSTRUCTIONS)
    upstream = ("mine",)

    def config_section(self, ctx: RunContext) -> dict[str, object]:
        """Answer-changing MLLM keys, the instruct section, and each prompt's version and template hash."""
        from prompts.spec import prompt_fingerprints

        prompts = prompt_fingerprints(tuple(registered_task_prompts(INSTRUCT_PROMPT).values()))
        return {
            "mllm": ctx.config.mllm.stage_key(),
            "instruct": ctx.config.instruct.stage_key(),
            "prompts": prompts,
            "editor_limits": editor_limits(ctx).to_json(),
        }

    def model_endpoints(self, config: BuildConfig) -> list[MLLMConfig]:
        return [config.mllm]

    def plan(self, ctx: RunContext) -> list[Any]:
        rows = addresses.CANDIDATES.reader(ctx.run).rows()
        return plan_shards(rows, ctx.shard_size)

    def process_shard(self, ctx: RunContext, index: int, work: Any) -> ShardResult:
        client = shared_client(ctx.config.mllm, ctx.run, no_cache=bool(ctx.options.get("no_cache")))
        reuse = ItemReuse.for_shard(ctx, STAGE, STAGE)
        rows, rejects = instruct_candidates(
            client,
            list(work),
            ctx.config.mllm,
            ctx.config.instruct,
            progress=bool(ctx.options.get("progress")),
            reuse=reuse,
            limits=editor_limits(ctx),
        )
        return ShardResult(
            outputs={"instructions": rows}, rejects=rejects, rows_in=len(work), items=reuse.counts.as_dict()
        )

    def finalize(self, ctx: RunContext, summary: dict[str, Any]) -> dict[str, Any]:
        rows = addresses.INSTRUCTIONS.reader(ctx.run).rows(["task", "status"])
        by: dict[str, dict[str, int]] = {}
        for r in rows:
            by.setdefault(r["task"], {}).setdefault(r["status"], 0)
            by[r["task"]][r["status"]] += 1
        return {"status_by_task": {k: dict(sorted(v.items())) for k, v in sorted(by.items())}}


# ---------------------------------------------------------------------------- shard logic
def editor_limits(ctx: RunContext) -> EditorLimits:
    """What the configured editors can render (editors/capabilities.py): the rules backend then
    proposes only renderable edits and the LLM prompts are told the allowed families."""
    from editors.registry import limits_for

    return limits_for([s.name for s in ctx.config.editors])


def _item_fields(c: CandidateRow) -> dict[str, object]:
    """The item columns carried forward from the candidate (schemas.ITEM_FIELDS)."""
    return {
        "task": c["task"],
        "variant": c["variant"],
        "source": c["source"],
        "image_id": c["image_id"],
        "image_path": c["image_path"],
        "width": c["width"],
        "height": c["height"],
        "candidate_id": c["id"],
        "candidate_json": canonical_json(c),
    }


def read_image_bytes(path: str) -> bytes:
    """The source image's bytes; raises ValueError (unreadable; ``BadImage`` above the one pixel
    limit of source images) or FileNotFoundError (missing)."""
    import fsspec

    from prompts.runner import image_mime

    with fsspec.open(path, "rb") as f:
        data = f.read()
    image_mime(data)  # raises ValueError on anything but PNG/JPEG/WebP/GIF
    check_source_size(data, path)  # a model must not be sent what the edit stage would refuse
    return data


def instruct_candidates(
    client: MLLMClient,
    candidates: list[CandidateRow],
    mllm: MLLMConfig,
    cfg: InstructConfig,
    *,
    progress: bool = False,
    reuse: ItemReuse | None = None,
    limits: EditorLimits | None = None,
) -> tuple[list[InstructionRow], list[RejectRow]]:
    """Rows and rejects for a list of candidates (one shard): the stage logic, callable without a run.

    With ``reuse``, candidates whose item key is stored skip the model; rows and rejects are
    assembled in candidate order either way, then deduplicated per object as one shard."""

    def run(todo: list[CandidateRow]) -> list[Entry]:
        outcomes = _candidate_outcomes(client, todo, mllm, progress=progress, limits=limits)
        return [Entry({"rows": r, "rejects": j}, keep=reuse.keeps(j) if reuse else True) for r, j in outcomes]

    if reuse is None:
        values = [e.value for e in run(candidates)]
    else:
        keys = [instruct_item_key(reuse, client, mllm, c, limits) for c in candidates]
        values = reuse.map(keys, lambda misses: run([candidates[i] for i in misses]))
    # the item columns come from the current candidate (its dataset statistics may have changed)
    rows = [{**r, **_item_fields(c)} for c, v in zip(candidates, values) for r in v["rows"]]
    rejects = [j for v in values for j in v["rejects"]]
    if cfg.dedup_counterfactuals:
        rows, dropped = dedup_rows(rows, cfg)
        rejects.extend(dropped)
    rows.sort(key=lambda r: r["id"])
    return rows, rejects


def instruct_item_key(
    reuse: ItemReuse, client: MLLMClient, mllm: MLLMConfig, c: CandidateRow, limits: EditorLimits | None = None
) -> str | None:
    """A candidate's item key: what the model sees (the candidate's prompt context, its image's
    content when the backend sees images), the task prompt's version and template, the
    answer-changing MLLM settings, what the configured editors can render (it shapes the
    proposals) and the code version. Dataset statistics the candidate carries
    (pair counts, ranks) are not in it: rows take them from the current candidate."""
    from prompts.instruct_prompts import candidate_context
    from prompts.spec import prompt_fingerprints
    from storage.hashing import sha256_hex

    spec = task_prompt(c["task"], INSTRUCT_PROMPT)
    if spec is None:
        return None
    image = None
    if getattr(client, "uses_images", True):
        try:
            image = sha256_hex(read_image_bytes(c["image_path"]))
        except (OSError, ValueError):
            return None  # computed: the row and reject say why
    try:
        context = candidate_context(c, task_hook(str(c["task"]), "instruct_context"))
    except (KeyError, TypeError, ValueError):
        return None
    return reuse.key(
        candidate=c["id"],
        context=context,
        image=image,
        prompt=prompt_fingerprints((spec,)),
        mllm=mllm.stage_key(),
        limits=limits.to_json() if limits is not None else None,
        code=code_version(
            "tasks.stages.instruct",
            "prompts",
            *task_code(c["task"], INSTRUCT_ROWS, "instruct_rules", "instruct_context"),
        ),
    )


def _candidate_outcomes(
    client: MLLMClient,
    candidates: list[CandidateRow],
    mllm: MLLMConfig,
    *,
    progress: bool = False,
    limits: EditorLimits | None = None,
) -> list[tuple[list[InstructionRow], list[RejectRow]]]:
    """(rows, rejects) of each candidate, in order; model calls are batched per prompt."""
    from prompts.instruct_prompts import candidate_context
    from prompts.runner import PromptInput, run_prompt

    outcomes: list[tuple[list[InstructionRow], list[RejectRow]]] = [([], []) for _ in candidates]
    uses_images = getattr(client, "uses_images", True)
    by_prompt: dict[str, list[tuple[int, PromptInput]]] = {}
    specs: dict[str, PromptSpec] = {}
    for i, c in enumerate(candidates):
        rows, rejects = outcomes[i]
        spec = task_prompt(c["task"], INSTRUCT_PROMPT)
        if spec is None:
            rejects.append(
                reject(
                    c["id"], STAGE, "unknown_task", f"candidate {c['id']}: task {c['task']!r} has no instruct prompt"
                )
            )
            continue
        try:
            context = candidate_context(c, task_hook(str(c["task"]), "instruct_context"))
        except (KeyError, TypeError, ValueError) as exc:
            rejects.append(
                reject(c["id"], STAGE, "bad_candidate", f"candidate {c['id']}: {exc.__class__.__name__}: {exc}")
            )
            rows.append(_failed_row(c, spec, client, f"bad candidate: {exc}"))
            continue
        if limits is not None and limits.limited:
            context["editor_limits"] = limits.to_json()
        images: list[bytes] = []
        if uses_images:
            try:
                images = [read_image_bytes(c["image_path"])] * spec.n_images
            except FileNotFoundError:
                rejects.append(
                    reject(c["id"], STAGE, "image_missing", f"candidate {c['id']}: image not found: {c['image_path']}")
                )
                rows.append(_failed_row(c, spec, client, "image missing"))
                continue
            except BadImage as exc:
                rejects.append(reject(c["id"], STAGE, "image_too_large", f"candidate {c['id']}: {exc}"))
                rows.append(_failed_row(c, spec, client, "image too large"))
                continue
            except (OSError, ValueError) as exc:
                rejects.append(
                    reject(c["id"], STAGE, "image_unreadable", f"candidate {c['id']}: {c['image_path']}: {exc}")
                )
                rows.append(_failed_row(c, spec, client, "image unreadable"))
                continue
        by_prompt.setdefault(spec.name, []).append((i, PromptInput(context, images)))
        specs[spec.name] = spec

    for name in sorted(by_prompt):
        items = by_prompt[name]
        spec = specs[name]
        results = run_prompt(
            client,
            spec,
            [inp for _, inp in items],
            parse_retries=mllm.parse_retries,
            progress=progress,
            temperature=mllm.temperature,
            max_tokens=mllm.max_tokens,
        )
        for (i, _), out in zip(items, results):
            new_rows, new_rejects = _rows_for(candidates[i], out)
            outcomes[i][0].extend(new_rows)
            outcomes[i][1].extend(new_rejects)
    return outcomes


def _row(c: CandidateRow, out: PromptOutcome, row_id: str, status: str, **cols: Any) -> InstructionRow:
    row = {"id": row_id, **_item_fields(c), "status": status, **out.provenance()}
    row.update({"target_box": c.get("target_box"), "target_name": c.get("target_name")})
    row.update(cols)
    return row


def _failed_row(c: CandidateRow, spec: PromptSpec, client: MLLMClient, error: str) -> InstructionRow:
    return {
        "id": stable_id(c["id"], STAGE),
        **_item_fields(c),
        "status": "failed",
        "target_box": c.get("target_box"),
        "target_name": c.get("target_name"),
        "fields_json": canonical_json({"error": error}),
        "prompt_name": spec.name,
        "prompt_version": spec.version,
        "backend": client.backend,
        "model_id": client.model_id,
        "raw_response": None,
    }


def _rows_for(c: CandidateRow, out: PromptOutcome) -> tuple[list[InstructionRow], list[RejectRow]]:
    """Instruction rows (and rejects) for one candidate's prompt outcome."""
    rid = stable_id(c["id"], STAGE)
    if out.status in ("unparseable", "error"):
        reason = "llm_unparseable" if out.status == "unparseable" else "llm_error"
        detail = f"candidate {c['id']}: {out.prompt_name} v{out.prompt_version} after {out.attempts} attempt(s): {out.error}"
        row = _row(c, out, rid, "failed", fields_json=canonical_json({"error": out.error}))
        return [row], [reject(c["id"], STAGE, reason, detail, {"raw": out.raw, "error": out.error})]
    if out.status == "not_applicable":
        return [_row(c, out, rid, "not_applicable")], []
    build = task_hook(c["task"], INSTRUCT_ROWS) or instruct_rows_edit_plan
    rows = []
    for r in build(c, out.fields):
        cols = dict(r)
        slot, status, fields = cols.pop("slot", None), cols.pop("status", "applicable"), cols.pop("fields")
        row_id = rid if slot is None else stable_id(c["id"], STAGE, slot)
        rows.append(_row(c, out, row_id, status, **cols, fields_json=canonical_json(fields)))
    return rows, []


# ---------------------------------------------------------------------------- the default answer -> rows
# The ``instruct_rows`` hook of a task: (candidate, the prompt's validated fields) -> one dict per
# instruction row: ``fields`` (stored as fields_json), optional ``slot`` (id suffix when a candidate
# yields several rows), optional ``status`` (default ``applicable``), and the columns to set
# (``instruction``, ``edit_type``, ``target_box``, ``target_name``).
def instruct_rows_edit_plan(c: dict[str, Any], f: dict[str, Any]) -> list[dict[str, Any]]:
    """One applicable row carrying the answer's ``instruction`` and ``edit_type`` (AT's edit plan;
    also the default of a task without an ``instruct_rows`` hook)."""
    return [{"instruction": f["instruction"], "edit_type": f["edit_type"], "fields": f}]


def dedup_rows(rows: list[InstructionRow], cfg: InstructConfig) -> tuple[list[InstructionRow], list[RejectRow]]:
    """Each task's ``instruct_dedup`` hook over that task's rows of a shard; the rows it keeps
    stay in place, the rejects it returns say what was dropped."""
    rejects: list[RejectRow] = []
    for task in sorted({r["task"] for r in rows}):
        dedup = task_hook(task, INSTRUCT_DEDUP)
        if dedup is None:
            continue
        kept, dropped = dedup([r for r in rows if r["task"] == task], cfg)
        keep = {r["id"] for r in kept}
        rows = [r for r in rows if r["task"] != task or r["id"] in keep]
        rejects.extend(dropped)
    return rows, rejects
