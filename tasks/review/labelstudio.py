"""Label Studio interchange for teams that review there: tasks out, decisions back in.

Export writes one Label Studio task per edit-verification item (images, instruction, target
box; the editor is left out so the review stays blind) and a labeling config to create the
project with. Import reads Label Studio's JSON export and appends each annotation as a
decision event of a user ``labelstudio:<email or id>``; importing the same file twice adds
nothing. Bad annotations are reported (task, reason code, detail) and skipped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

from tasks.review.accounts import ensure_user
from tasks.review.queue import REASONS, QueueError, ReviewQueue

DEFAULT_IMAGE_PREFIX = "/data/local-files/?d="  # Label Studio's local-files URL; document root = the run directory


def label_config() -> str:
    """The Label Studio labeling config matching the exported tasks."""
    reasons = "\n".join(f"    <Choice value={quoteattr(code)} hint={quoteattr(label)}/>" for code, label in REASONS.items())
    return f"""<View>
  <Header value="$instruction"/>
  <Text name="meta" value="$task / $target_name"/>
  <View style="display:flex;gap:8px">
    <Image name="original" value="$original_image"/>
    <Image name="edited" value="$edited_image"/>
  </View>
  <Choices name="verdict" toName="edited" choice="single" required="true">
    <Choice value="accept"/>
    <Choice value="reject"/>
  </Choices>
  <Choices name="reasons" toName="edited" choice="multiple">
{reasons}
  </Choices>
  <TextArea name="note" toName="edited" maxSubmissions="1"/>
</View>
"""


def export_tasks(queue: ReviewQueue, out: Path, image_prefix: str = DEFAULT_IMAGE_PREFIX) -> int:
    """Write Label Studio tasks (JSON list) for every edit-verification item; returns the count.
    The labeling config goes beside it as ``<out stem>.label_config.xml``."""
    tasks = []
    for row in queue.items(with_payload=True, live_only=True):
        if row.stage != "edit":
            continue
        p = json.loads(row.payload_json)
        tasks.append(
            {
                "data": {
                    "item_id": row.id,
                    "edit_id": row.edit_id,
                    "task": row.task,
                    "variant": row.variant,
                    "instruction": p.get("instruction") or "",
                    "target_name": p.get("target_name") or "",
                    "target_box": p.get("target_box"),
                    "original_image": image_prefix + p["original_image"],
                    "edited_image": image_prefix + p["edited_image"],
                }
            }
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(tasks, indent=1, ensure_ascii=False), encoding="utf-8")
    out.with_name(out.stem + ".label_config.xml").write_text(label_config(), encoding="utf-8")
    return len(tasks)


@dataclass
class ImportSummary:
    imported: int = 0
    already_imported: int = 0
    rejected: list[dict[str, Any]] = field(default_factory=list)  # {task, annotation, reason, detail}


def import_decisions(queue: ReviewQueue, path: Path) -> ImportSummary:
    """Append the decisions of a Label Studio JSON export as events (idempotent)."""
    try:
        tasks = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise QueueError(f"{path}: not a readable Label Studio JSON export: {exc}") from None
    if not isinstance(tasks, list):
        raise QueueError(f"{path}: expected a JSON list of tasks (Label Studio 'JSON' export), got {type(tasks).__name__}")
    summary = ImportSummary()
    for ti, task in enumerate(tasks):
        task_ref = task.get("id", ti) if isinstance(task, dict) else ti
        data = task.get("data", {}) if isinstance(task, dict) else {}
        item = data.get("item_id")
        if not item:
            summary.rejected.append({"task": task_ref, "annotation": None, "reason": "missing_item_id", "detail": "task data has no item_id"})
            continue
        for ai, ann in enumerate(task.get("annotations") or []):
            ann_ref = ann.get("id", ai)
            if ann.get("was_cancelled"):
                summary.rejected.append({"task": task_ref, "annotation": ann_ref, "reason": "cancelled", "detail": "annotation was skipped in Label Studio"})
                continue
            try:
                verdict, reasons, note = _parse_result(ann.get("result") or [])
                who = ann.get("completed_by")
                who = who.get("email") or who.get("id") if isinstance(who, dict) else who
                user = ensure_user(queue.engine, f"labelstudio:{who if who is not None else 'unknown'}")
                ev = queue.import_decision(user, item, verdict, reasons, note, source_ref=f"labelstudio:{item}:{ann_ref}")
            except QueueError as exc:
                summary.rejected.append({"task": task_ref, "annotation": ann_ref, "reason": "invalid_annotation", "detail": str(exc)})
                continue
            if ev is None:
                summary.already_imported += 1
            else:
                summary.imported += 1
    return summary


def _parse_result(result: list[dict[str, Any]]) -> tuple[str, list[str], str]:
    verdict, reasons, note = None, [], ""
    for r in result:
        value = r.get("value") or {}
        if r.get("from_name") == "verdict":
            choices = value.get("choices") or []
            verdict = choices[0] if choices else None
        elif r.get("from_name") == "reasons":
            reasons = list(value.get("choices") or [])
        elif r.get("from_name") == "note":
            texts = value.get("text") or []
            note = "\n".join(texts) if isinstance(texts, list) else str(texts)
    if verdict is None:
        raise QueueError("no 'verdict' choice in the annotation result")
    return verdict, reasons, note
