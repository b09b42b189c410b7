"""``QAStage``: edits -> analysis rows and question rows (the ``qa`` stage of the pipeline)."""

from __future__ import annotations

from typing import Any

from storage import schemas
from storage.parquet_io import ArtifactReader
from tasks.base import RunContext, ShardResult, Stage, chunk
from tasks.qa.analyse import analyse_edits
from tasks.qa.synthesis import problem_rejects, questions_for_edit, settings_from

STAGE = "qa"
# MLLM settings that change answers (concurrency, timeouts and devices do not).
ANSWER_KEYS = ("backend", "model", "base_url", "parse_retries", "temperature", "max_tokens")


def wanted(edit: dict[str, Any]) -> bool:
    """Edits that get questions: those that passed auto-QC (dense counting rows always do)."""
    return edit["status"] == "ok"


def qa_edits(client: Any, edits: list[dict[str, Any]], ctx: RunContext, *, progress: bool = False) -> ShardResult:
    """The stage logic for one shard, callable without the runner."""
    from editors.verify import verification_failed, verify_reject

    cfg = ctx.config.qa
    unverified = [e for e in edits if verification_failed(e)]  # performed, but not what the instruction asked
    edits = [e for e in edits if not verification_failed(e)]
    analysed = analyse_edits(client, edits, ctx.images, ctx.config.mllm, progress=progress)
    settings = settings_from(cfg, ctx.seed)
    questions: list[dict[str, Any]] = []
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
    return ShardResult(outputs={"analysis": analysed.rows, "questions": questions}, rejects=rejects, rows_in=len(edits) + len(unverified))


class QAStage(Stage):
    name = STAGE
    outputs = {"analysis": schemas.ANALYSIS, "questions": schemas.QUESTIONS}
    upstream = ("edit",)

    def config_section(self, ctx: RunContext) -> Any:
        """Answer-changing MLLM keys, the qa section, the seed, the analysis prompts and the question templates."""
        from prompts.analysis import ANALYSIS_PROMPTS
        from prompts.spec import prompt_fingerprints
        from tasks.qa.templates import templates_fingerprint

        mllm = ctx.config.mllm.model_dump(mode="json")
        return {
            "mllm": {k: mllm[k] for k in ANSWER_KEYS},
            "qa": ctx.config.qa.model_dump(mode="json"),
            "seed": ctx.seed,
            "prompts": prompt_fingerprints(ANALYSIS_PROMPTS.values()),
            "templates": templates_fingerprint(),
        }

    def plan(self, ctx: RunContext) -> list[Any]:
        from editors.verify import verification_failed

        edits = [r for r in ArtifactReader(ctx.run, "edit/edits", schemas.EDITS).rows() if wanted(r) or verification_failed(r)]
        return chunk(sorted(edits, key=lambda r: r["id"]), ctx.config.run.shard_size)

    def process_shard(self, ctx: RunContext, index: int, work: Any) -> ShardResult:
        from tasks.instruct import shared_client

        client = shared_client(ctx.config.mllm, ctx.run, no_cache=bool(ctx.options.get("no_cache")))
        return qa_edits(client, list(work), ctx, progress=bool(ctx.options.get("progress")))

    def finalize(self, ctx: RunContext, summary: dict[str, Any]) -> dict[str, Any]:
        rows = ArtifactReader(ctx.run, f"{STAGE}/questions", schemas.QUESTIONS).rows(["task", "question_set"])
        by: dict[str, dict[str, int]] = {}
        for r in rows:
            by.setdefault(r["task"], {}).setdefault(r["question_set"], 0)
            by[r["task"]][r["question_set"]] += 1
        return {"questions_by_task": {k: dict(sorted(v.items())) for k, v in sorted(by.items())}}
