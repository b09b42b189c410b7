"""``QAStage``: edits -> analysis rows and question rows (the ``qa`` stage of the pipeline)."""

from __future__ import annotations

import posixpath
from typing import Any

from storage import schemas
from storage.hashing import stable_id
from storage.parquet_io import ArtifactReader
from storage.rejects import reject
from storage.stage_store import StageStore
from tasks.base import RunContext, ShardResult, Stage, UpstreamMissing, chunk
from tasks.qa.analyse import ITEM_COLUMNS, NO_PROMPT, analyse_edits, analysis_row
from tasks.qa.synthesis import problem_rejects, questions_for_edit, settings_from

STAGE = "qa"
# MLLM settings that change answers (concurrency, timeouts and devices do not).
ANSWER_KEYS = ("backend", "model", "base_url", "parse_retries", "temperature", "max_tokens")


def wanted(edit: dict[str, Any]) -> bool:
    """Edits that get questions: status ok. Dense counting rows take any status: nothing is
    edited for DC, so the edit stage's change check cannot pass and the original is what is asked about."""
    return edit["status"] == "ok" or edit["task"] == "dense_counting"


def dc_item(instruction: dict[str, Any]) -> dict[str, Any]:
    """An applicable dense-counting instruction as an edit-shaped row (editor ``none``, no edit).

    Its image is copied into the run's image store when the shard runs (``stage_dc_images``).
    """
    return {
        "id": stable_id(instruction["id"], STAGE, "dense_counting"),
        "instruction_id": instruction["id"],
        **{k: instruction[k] for k in ITEM_COLUMNS},
        "instruction": instruction.get("instruction"),
        "edit_type": "none",
        "target_name": instruction.get("target_name"),
        "target_box": instruction.get("target_box"),
        "instruction_fields_json": instruction.get("fields_json"),
        "editor": "none",
        "status": "ok",
        "original_image": None,
        "edited_image": None,
    }


def stage_dc_images(ctx: RunContext, items: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """Put the source images of DC items into the image store; unreadable ones become rejects."""
    import io

    import fsspec
    from PIL import Image

    ready, rows, rejects = [], [], []
    for it in items:
        if it["original_image"] is not None:
            ready.append(it)
            continue
        path = it["image_path"]
        try:
            with fsspec.open(path, "rb") as f:
                data = f.read()
            Image.open(io.BytesIO(data)).verify()
        except FileNotFoundError as exc:
            reason, detail = "image_missing", f"{exc}"
        except Exception as exc:  # corrupt or truncated image
            reason, detail = "image_unreadable", f"{type(exc).__name__}: {exc}"
        else:
            ext = posixpath.splitext(path)[1].lower().lstrip(".") or "png"
            rel = ctx.images.put_bytes(data, "jpg" if ext == "jpeg" else ext)
            ready.append({**it, "original_image": rel, "edited_image": rel})
            continue
        rows.append(analysis_row(it, "failed", None, {"error": detail}, NO_PROMPT))
        rejects.append(reject(it["id"], STAGE, reason, f"dense counting item {it['id']} (instruction {it['instruction_id']}): {path}: {detail}"))
    return ready, rows, rejects


def qa_edits(client: Any, edits: list[dict[str, Any]], ctx: RunContext, *, progress: bool = False) -> ShardResult:
    """The stage logic for one shard, callable without the runner."""
    cfg = ctx.config.qa
    edits, failed_rows, rejects = stage_dc_images(ctx, edits)
    analysed = analyse_edits(client, edits, ctx.images, ctx.config.mllm, progress=progress)
    analysed.rows.extend(failed_rows)
    settings = settings_from(cfg, ctx.seed)
    questions: list[dict[str, Any]] = []
    rejects.extend(analysed.rejects)
    for e in edits:
        fields = analysed.fields.get(e["id"])
        if fields is None:
            continue
        rendered = questions_for_edit(e, fields, settings, beaf=cfg.beaf)
        questions.extend(rendered.rows)
        rejects.extend(problem_rejects(e, rendered.problems))
    questions.sort(key=lambda r: (r["edit_id"], r["question_set"], r["id"]))
    analysed.rows.sort(key=lambda r: r["id"])
    return ShardResult(outputs={"analysis": analysed.rows, "questions": questions}, rejects=rejects, rows_in=len(edits) + len(failed_rows))


class QAStage(Stage):
    name = STAGE
    outputs = {"analysis": schemas.ANALYSIS, "questions": schemas.QUESTIONS}
    upstream = ("edit",)

    def config_section(self, ctx: RunContext) -> Any:
        mllm = ctx.config.mllm.model_dump(mode="json")
        return {"mllm": {k: mllm[k] for k in ANSWER_KEYS}, "qa": ctx.config.qa.model_dump(mode="json"), "seed": ctx.seed}

    def input_fingerprints(self, ctx: RunContext) -> dict[str, str]:
        """The edits, plus the instructions (dense counting is read from there)."""
        fps = super().input_fingerprints(ctx)
        manifest = StageStore(ctx.run, "instruct", {}).read_manifest()
        if not manifest or manifest.get("status") != "complete":
            raise UpstreamMissing(f"stage 'qa' reads 'instruct' (dense counting items), which has not completed in {ctx.run.url}")
        fps["instruct"] = manifest["output_fingerprint"]
        return fps

    def plan(self, ctx: RunContext) -> list[Any]:
        edits = [r for r in ArtifactReader(ctx.run, "edit/edits", schemas.EDITS).rows() if wanted(r)]
        # DC instructions the edit stage did not pass through become edit-shaped items here
        passed = {r["instruction_id"] for r in edits if r["task"] == "dense_counting"}
        instructions = ArtifactReader(ctx.run, "instruct/instructions", schemas.INSTRUCTIONS).rows()
        counting = [
            dc_item(r) for r in instructions if r["task"] == "dense_counting" and r["status"] == "applicable" and r["id"] not in passed
        ]
        return chunk(sorted(edits + counting, key=lambda r: r["id"]), ctx.config.run.shard_size)

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
