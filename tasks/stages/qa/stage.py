"""``QAStage``: edits -> analysis rows and question rows (the ``qa`` stage of the pipeline)."""

from __future__ import annotations

from typing import Any

from prompts.clients.base import MLLMClient
from prompts.config import MLLMConfig
from storage import addresses
from storage.rows import EditRow, QuestionRow
from storage.schemas import ITEM_COLUMNS
from tasks.engine.base import RunContext, ShardResult, Stage, chunk
from tasks.engine.build_config import BuildConfig
from tasks.engine.reuse import Entry, ItemReuse, code_version, task_code
from tasks.stages.qa.analyse import Analysed, analyse_edits
from tasks.stages.qa.synthesis import problem_rejects, questions_for_edit, settings_from

STAGE = "qa"


def wanted(edit: EditRow) -> bool:
    """Edits that get questions: those that passed auto-QC (dense counting rows always do)."""
    return edit["status"] == "ok"


def qa_edits(
    client: MLLMClient,
    edits: list[EditRow],
    ctx: RunContext,
    *,
    progress: bool = False,
    reuse: ItemReuse | None = None,
) -> ShardResult:
    """The stage logic for one shard, callable without the runner. With ``reuse``, analyses whose
    item key is stored skip the model; questions are always rendered (templates are cheap)."""
    from tasks.stages.qa.unverified import verification_failed, verify_reject

    cfg = ctx.config.qa
    unverified = [e for e in edits if verification_failed(e)]  # performed, but not what the instruction asked
    edits = [e for e in edits if not verification_failed(e)]
    analysed = reused_analyses(client, edits, ctx, reuse, progress=progress)
    settings = settings_from(cfg, ctx.seed)
    questions: list[QuestionRow] = []
    rejects = list(analysed.rejects) + [verify_reject(e, STAGE) for e in unverified]
    for e in edits:
        fields = analysed.fields.get(e["id"])
        if fields is None:
            continue
        rendered = questions_for_edit(e, fields, settings, beaf=cfg.beaf)
        questions.extend(rendered.rows)
        rejects.extend(problem_rejects(e, rendered.problems))
    questions.sort(key=lambda r: (r["edit_id"], r["question_set"], r["id"]))
    analysed.rows.sort(key=lambda r: r["id"])
    items = reuse.counts.as_dict() if reuse is not None else {}
    return ShardResult(
        outputs={"analysis": analysed.rows, "questions": questions},
        rejects=rejects,
        rows_in=len(edits) + len(unverified),
        items=items,
    )


def analysis_item_key(reuse: ItemReuse, ctx: RunContext, edit: EditRow) -> str | None:
    """An edit's analysis key: the edit's own columns (its images are content-addressed paths),
    what the model sees (the analysis context) or, for counting, the true count, the task's
    analysis prompt, the answer-changing MLLM settings and the code version. The carried item
    columns (dataset statistics may change when the dataset grows) and the question templates
    are not in it: changing the templates re-renders questions from stored analyses."""
    from prompts.spec import prompt_fingerprints
    from storage.json_columns import candidate_of
    from tasks.engine.prompt_hooks import task_prompt
    from tasks.stages.qa.analyse import ANALYSIS_PROMPT, analysis_context

    spec = task_prompt(edit["task"], ANALYSIS_PROMPT)
    try:
        context = analysis_context(edit) if spec else None
        cand = candidate_of(edit, f"edit {edit['id']}")
    except (KeyError, TypeError, ValueError):
        return None  # computed: the analysis row and reject say what is wrong
    return reuse.key(
        edit={k: v for k, v in edit.items() if k not in ITEM_COLUMNS},
        context=context,
        count={k: cand.get(k) for k in ("count", "class_name", "target_name")},
        prompt=prompt_fingerprints((spec,)) if spec else None,
        mllm=ctx.config.mllm.stage_key(),
        code=code_version(
            "tasks.stages.qa.analyse", "prompts", *task_code(edit["task"], "analysis_fields", "analysis_rules")
        ),
    )


def reused_analyses(
    client: MLLMClient,
    edits: list[EditRow],
    ctx: RunContext,
    reuse: ItemReuse | None,
    *,
    progress: bool = False,
) -> Analysed:
    """``analyse_edits`` for the edits whose analysis is not stored; rows, rejects and fields in edit order."""

    def run(todo: list[EditRow]) -> list[Entry]:
        got = analyse_edits(client, todo, ctx.images, ctx.config.mllm, progress=progress)
        out = []
        for e in todo:
            rejects = [r for r in got.rejects if r["id"] == e["id"]]
            value = {
                "rows": [r for r in got.rows if r["edit_id"] == e["id"]],
                "rejects": rejects,
                "fields": got.fields.get(e["id"]),
            }
            out.append(Entry(value, keep=reuse.keeps(rejects) if reuse else True))
        return out

    if reuse is None:
        values = [e.value for e in run(edits)]
    else:
        values = reuse.map(
            [analysis_item_key(reuse, ctx, e) for e in edits], lambda misses: run([edits[i] for i in misses])
        )

    merged = Analysed()
    for e, v in zip(edits, values):
        merged.rows.extend({**r, **{k: e[k] for k in ITEM_COLUMNS}} for r in v["rows"])
        merged.rejects.extend(v["rejects"])
        if v["fields"] is not None:
            merged.fields[e["id"]] = v["fields"]
    return merged


class QAStage(Stage):
    name = STAGE
    outputs = addresses.outputs(addresses.ANALYSIS, addresses.QUESTIONS)
    upstream = ("edit",)

    def config_section(self, ctx: RunContext) -> dict[str, object]:
        """Answer-changing MLLM keys, the qa section, the seed, the analysis prompts and the question templates."""
        from prompts.spec import prompt_fingerprints
        from tasks.engine.prompt_hooks import registered_task_prompts
        from tasks.stages.qa.analyse import ANALYSIS_PROMPT
        from tasks.stages.qa.templates import templates_fingerprint

        return {
            "mllm": ctx.config.mllm.stage_key(),
            "qa": ctx.config.qa.stage_key(),
            "seed": ctx.seed,
            "prompts": prompt_fingerprints(tuple(registered_task_prompts(ANALYSIS_PROMPT).values())),
            "templates": templates_fingerprint(),
        }

    def model_endpoints(self, config: BuildConfig) -> list[MLLMConfig]:
        return [config.mllm]

    def plan(self, ctx: RunContext) -> list[Any]:
        from tasks.stages.qa.unverified import verification_failed

        edits = [r for r in addresses.EDITS.reader(ctx.run).rows() if wanted(r) or verification_failed(r)]
        return chunk(sorted(edits, key=lambda r: r["id"]), ctx.shard_size)

    def process_shard(self, ctx: RunContext, index: int, work: Any) -> ShardResult:
        from tasks.engine.mllm import shared_client

        client = shared_client(ctx.config.mllm, ctx.run, no_cache=bool(ctx.options.get("no_cache")))
        reuse = ItemReuse.for_shard(ctx, STAGE, "analysis")
        return qa_edits(client, list(work), ctx, progress=bool(ctx.options.get("progress")), reuse=reuse)

    def finalize(self, ctx: RunContext, summary: dict[str, Any]) -> dict[str, Any]:
        rows = addresses.QUESTIONS.reader(ctx.run).rows(["task", "question_set"])
        by: dict[str, dict[str, int]] = {}
        for r in rows:
            by.setdefault(r["task"], {}).setdefault(r["question_set"], 0)
            by[r["task"]][r["question_set"]] += 1
        return {
            "questions_by_task": {k: dict(sorted(v.items())) for k, v in sorted(by.items())},
            # in force for this build's questions: the health report and the card read it here
            "balance_yes_no": bool(ctx.config.qa.balance_yes_no),
        }
