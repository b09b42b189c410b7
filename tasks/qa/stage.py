"""``QAStage``: edits -> analysis rows and question rows (the ``qa`` stage of the pipeline)."""

from __future__ import annotations

from typing import Any

from storage import addresses
from tasks.base import RunContext, ShardResult, Stage, chunk
from tasks.qa.analyse import analyse_edits
from tasks.qa.synthesis import problem_rejects, questions_for_edit, settings_from

STAGE = "qa"


def wanted(edit: dict[str, Any]) -> bool:
    """Edits that get questions: those that passed auto-QC (dense counting rows always do)."""
    return edit["status"] == "ok"


def qa_edits(client: Any, edits: list[dict[str, Any]], ctx: RunContext, *, progress: bool = False) -> ShardResult:
    """The stage logic for one shard, callable without the runner."""
    cfg = ctx.config.qa
    analysed = analyse_edits(client, edits, ctx.images, ctx.config.mllm, progress=progress)
    settings = settings_from(cfg, ctx.seed)
    questions: list[dict[str, Any]] = []
    rejects = list(analysed.rejects)
    for e in edits:
        fields = analysed.fields.get(e["id"])
        if fields is None:
            continue
        rendered = questions_for_edit(e, fields, settings, beaf=cfg.beaf)
        questions.extend(rendered.rows)
        rejects.extend(problem_rejects(e, rendered.problems))
    questions.sort(key=lambda r: (r["edit_id"], r["question_set"], r["id"]))
    analysed.rows.sort(key=lambda r: r["id"])
    return ShardResult(outputs={"analysis": analysed.rows, "questions": questions}, rejects=rejects, rows_in=len(edits))


class QAStage(Stage):
    name = STAGE
    outputs = addresses.outputs(addresses.ANALYSIS, addresses.QUESTIONS)
    upstream = ("edit",)

    def config_section(self, ctx: RunContext) -> Any:
        """Answer-changing MLLM keys, the qa section, the seed, the analysis prompts and the question templates."""
        from prompts.analysis import ANALYSIS_PROMPTS
        from prompts.spec import prompt_fingerprints
        from tasks.qa.templates import templates_fingerprint

        return {
            "mllm": ctx.config.mllm.stage_key(),
            "qa": ctx.config.qa.stage_key(),
            "seed": ctx.seed,
            "prompts": prompt_fingerprints(ANALYSIS_PROMPTS.values()),
            "templates": templates_fingerprint(),
        }

    def plan(self, ctx: RunContext) -> list[Any]:
        edits = [r for r in addresses.EDITS.reader(ctx.run).rows() if wanted(r)]
        return chunk(sorted(edits, key=lambda r: r["id"]), ctx.config.run.shard_size)

    def process_shard(self, ctx: RunContext, index: int, work: Any) -> ShardResult:
        from tasks.instruct import shared_client

        client = shared_client(ctx.config.mllm, ctx.run, no_cache=bool(ctx.options.get("no_cache")))
        return qa_edits(client, list(work), ctx, progress=bool(ctx.options.get("progress")))

    def finalize(self, ctx: RunContext, summary: dict[str, Any]) -> dict[str, Any]:
        rows = addresses.QUESTIONS.reader(ctx.run).rows(["task", "question_set"])
        by: dict[str, dict[str, int]] = {}
        for r in rows:
            by.setdefault(r["task"], {}).setdefault(r["question_set"], 0)
            by[r["task"]][r["question_set"]] += 1
        return {"questions_by_task": {k: dict(sorted(v.items())) for k, v in sorted(by.items())}}
