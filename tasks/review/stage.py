"""The review stage: put auto-QC-accepted edits and their questions into the review queue.

Shards turn edits (with their questions) into ``review/queue`` rows, a small artifact listing
the queue items; ``finalize`` reconciles the database with them: rows it does not hold yet are added, so a
rerun (or a deleted database) fills the queue again without adding anything twice, and items
whose edit or questions left the current ``qa`` output are retired (an event, never a delete). The stage folder
is never wiped wholesale: it holds the queue database with the human decisions.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pyarrow as pa

from storage import addresses
from storage.fs import RunFS
from storage.hashing import canonical_json, stable_id
from storage.rejects import reject
from storage.review_db import DEFAULT_DB_NAME, redact, sqlite_url
from storage.schemas import ArtifactSchema, register
from storage.stage_store import MANIFEST, MARKERS, ShardResult, StageStore
from tasks.engine.base import RunContext, Stage, chunk

REVIEW_QUEUE = register(
    ArtifactSchema(
        "review_queue",
        1,
        pa.schema(
            [
                pa.field("id", pa.string(), nullable=False),  # queue item id: stable_id("review", stage, edit_id)
                pa.field("stage", pa.string(), nullable=False),  # edit | qa
                pa.field("edit_id", pa.string(), nullable=False),
                pa.field("parent_id", pa.string()),  # qa items: the edit item they wait for
                pa.field("task", pa.string(), nullable=False),
                pa.field("variant", pa.string(), nullable=False),
                pa.field("editor", pa.string(), nullable=False),
                pa.field("n_questions", pa.int32(), nullable=False),
                pa.field("payload_json", pa.string(), nullable=False),  # what the review pages show
            ]
        ),
    )
)
QUEUE = addresses.review_queue(REVIEW_QUEUE)

# Edit columns the review pages need (the editor is kept for the admin and hidden from annotators).
PAYLOAD_FIELDS = (
    "task",
    "variant",
    "source",
    "image_id",
    "width",
    "height",
    "instruction",
    "edit_type",
    "target_name",
    "target_box",
    "original_image",
    "edited_image",
    "mask_image",
    "editor",
)
QUESTION_FIELDS = (
    "id",
    "question_set",
    "qid",
    "qtype",
    "dimension",
    "text",
    "options",
    "gold",
    "images",
    "image_role",
)


def item_id(stage: str, edit_id: str) -> str:
    return stable_id("review", stage, edit_id)


def default_db_url(run: RunFS) -> str:
    """SQLite in ``<run>/review/queue.sqlite``; a remote run directory needs ``review.db_url``."""
    if not run.local:
        raise ValueError(
            f"the run directory {run.url} is not local, so the review queue cannot be an SQLite file there; "
            "set review.db_url (e.g. postgresql://user@host/db) in the config or pass --db"
        )
    run.makedirs(addresses.REVIEW_DIR)
    return sqlite_url(run.path(addresses.REVIEW_DIR, DEFAULT_DB_NAME))


def is_unedited(edit: dict[str, Any]) -> bool:
    """Rows with nothing to verify at stage 1 (dense counting: the edit stage's ``none`` rows)."""
    return edit.get("edit_type") == "none"


def queue_rows(edit: dict[str, Any], questions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The queue items of one edit: verification, then QA review once the edit is accepted.

    An unedited row (dense counting) has only the QA item, available at once.
    """
    base = {k: edit.get(k) for k in PAYLOAD_FIELDS}
    qs = [
        {k: q.get(k) for k in QUESTION_FIELDS}
        for q in sorted(questions, key=lambda q: (q["question_set"], _qnum(q["qid"]), q["id"]))
    ]
    edit_item = item_id("edit", edit["id"])
    common = {
        "edit_id": edit["id"],
        "task": edit["task"],
        "variant": edit["variant"],
        "editor": edit["editor"],
        "n_questions": len(qs),
    }
    qa_item = {
        "id": item_id("qa", edit["id"]),
        "stage": "qa",
        "parent_id": None if is_unedited(edit) else edit_item,
        **common,
        "payload_json": canonical_json({"edit_id": edit["id"], **base, "questions": qs}),
    }
    if is_unedited(edit):
        return [qa_item]
    return [
        {
            "id": edit_item,
            "stage": "edit",
            "parent_id": None,
            **common,
            "payload_json": canonical_json({"edit_id": edit["id"], **base}),
        },
        qa_item,
    ]


def _qnum(qid: str) -> tuple[str, int]:
    digits = "".join(c for c in qid if c.isdigit())
    return (qid.rstrip("0123456789"), int(digits) if digits else 0)


class ReviewStageStore(StageStore):
    """Resetting the stage removes its shards and markers but keeps the queue database and exports."""

    def reset(self) -> None:
        for part in [*self.outputs, "rejects", MARKERS, MANIFEST]:
            self.run.rm(self.rel(part))


class ReviewStage(Stage):
    name = "review"
    outputs = {"queue": REVIEW_QUEUE}
    upstream = ("edit", "qa")

    def store(self, ctx: RunContext) -> StageStore:
        return ReviewStageStore(ctx.run, self.name, self.outputs)

    def config_section(self, ctx: RunContext) -> dict[str, object]:
        cfg = ctx.config.review
        return {
            "queue_auto_rejected": cfg.queue_auto_rejected,
            "db": redact(cfg.db_url) if cfg.db_url else "run-sqlite",
        }

    def plan(self, ctx: RunContext) -> list[Any]:
        edits = sorted(addresses.EDITS.reader(ctx.run).rows(), key=lambda r: r["id"])
        by_edit: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for q in addresses.QUESTIONS.reader(ctx.run).iter_rows():
            by_edit[q["edit_id"]].append(q)
        work = [{"edit": e, "questions": by_edit.get(e["id"], [])} for e in edits]
        return chunk(work, ctx.shard_size)

    def process_shard(self, ctx: RunContext, index: int, work: Any) -> ShardResult:
        result = ShardResult(outputs={"queue": []}, rows_in=len(work))
        take_auto_rejected = bool(ctx.config.review.queue_auto_rejected)
        images = ctx.images
        for unit in work:
            edit, questions = unit["edit"], unit["questions"]
            if edit["status"] != "ok" and not (take_auto_rejected and edit["status"] == "auto_rejected"):
                result.rejects.append(
                    reject(
                        edit["id"], self.name, "not_queued_" + _code(edit["status"]), f"edit status {edit['status']!r}"
                    )
                )
                continue
            missing = [p for p in (edit["original_image"], edit["edited_image"]) if not images.exists(p)]
            if missing:
                result.rejects.append(
                    reject(edit["id"], self.name, "image_missing", f"not in the run's image store: {missing}")
                )
                continue
            if not questions:
                result.rejects.append(
                    reject(edit["id"], self.name, "no_questions", "qa/questions holds no question for this edit")
                )
                continue
            result.outputs["queue"].extend(queue_rows(edit, questions))
        return result

    def finalize(self, ctx: RunContext, summary: dict[str, Any]) -> dict[str, Any]:
        from tasks.review.queue import ReviewQueue

        url = ctx.config.review.db_url or default_db_url(ctx.run)
        rows = QUEUE.reader(ctx.run).rows()
        queue = ReviewQueue.open(
            url,
            k=ctx.config.review.k,
            lease_minutes=ctx.config.review.lease_minutes,
            pool_size=ctx.config.review.db_pool_size,
        )
        try:
            changes = queue.reconcile(rows)
        finally:
            queue.close()
        edits = sum(1 for r in rows if r["stage"] == "edit")
        out = {
            "queue_db": redact(url),
            "queue_items": len(rows),
            "queue_items_added": changes.added,
            "queue_items_retired": changes.retired,
            "queue_items_restored": changes.restored,
            "edits_queued": edits,
        }
        if changes.retired or (changes.added and changes.kept + changes.restored):
            out["note"] = (
                f"qa output changed under the existing queue: {changes.retired} items retired (kept in the event log), "
                f"{changes.added} added, {changes.restored} restored"
            )
        return out


def _code(status: str) -> str:
    code = "".join(c if c.isalnum() else "_" for c in str(status).lower()).strip("_")
    return code or "unknown"
