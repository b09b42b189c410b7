"""Label Studio interchange for teams that review there: tasks out, decisions back in.

Export writes two Label Studio projects' worth of tasks, each with the labeling config to
create its project with: edit verification (images, instruction, target; the editor is left
out so the review stays blind) and QA review (the same, plus the item's questions as they
stand, each of which the annotator may rewrite, re-key or mark invalid). QA tasks are written
only for items whose edit was accepted, as the web app offers them. Every ``$name`` in a
config is a key of every task's data: Label Studio refuses a task that lacks one.

Import reads Label Studio's JSON export and appends each annotation as a decision event of a
user ``labelstudio:<email or id>``, with its question edits as question events; an annotation
is imported once per content (``source_ref``), so re-importing a file adds nothing (no event
and no account) and an annotation changed in Label Studio arrives as that annotator's new
decision. One Label Studio annotator is one user whichever export names them: a snapshot
export gives their id and email, the quick JSON export only the id, so each id is recorded with
the user it first named (``review_meta``) and later imports by id reach that same user, never a
second identity (which could count one person twice towards an item's k decisions). Bad
annotations are reported (task, reason code, detail) and skipped.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

from storage.hashing import stable_id
from storage.review_db import sql_statement, sql_transaction
from tasks.review.queue import REASONS, QueueError, ReviewQueue
from tasks.review.validation import QuestionError, question_state
from tasks.review.views import question_events

DEFAULT_IMAGE_PREFIX = "/data/local-files/?d="  # Label Studio's local-files URL; document root = the run directory
_QUESTION_RESULT = re.compile(r"^(text|gold|options|invalid)_(\d+)$")  # per-question controls: <field>_<index>

_ITEM_VIEW = """  <Header value="$instruction"/>
  <Text name="meta" value="$meta"/>
  <View style="display:flex;gap:8px">
    <Image name="original" value="$original_image"/>
    <Image name="edited" value="$edited_image"/>
  </View>"""

_QUESTIONS_VIEW = """  <Header value="Questions: rewrite a field only to change it; options one per line"/>
  <Repeater on="$questions" indexFlag="{{idx}}">
    <Text name="question_{{idx}}" value="$questions[{{idx}}].shown"/>
    <TextArea name="text_{{idx}}" toName="question_{{idx}}" placeholder="new question text" maxSubmissions="1"/>
    <TextArea name="gold_{{idx}}" toName="question_{{idx}}" placeholder="new gold answer" maxSubmissions="1"/>
    <TextArea name="options_{{idx}}" toName="question_{{idx}}" placeholder="new options (multiple choice)" maxSubmissions="1"/>
    <Choices name="invalid_{{idx}}" toName="question_{{idx}}" choice="single">
      <Choice value="invalid"/>
    </Choices>
  </Repeater>"""


def _verdict_view() -> str:
    # the annotator reads the label; ``alias`` puts the reason code into the result
    reasons = "\n".join(
        f"    <Choice value={quoteattr(label)} alias={quoteattr(code)}/>" for code, label in REASONS.items()
    )
    return f"""  <Header value="Verdict (a reject needs a reason; 'other' needs a note)"/>
  <Choices name="verdict" toName="edited" choice="single" required="true">
    <Choice value="accept"/>
    <Choice value="reject"/>
  </Choices>
  <Header value="Reject reasons"/>
  <Choices name="reasons" toName="edited" choice="multiple">
{reasons}
  </Choices>
  <TextArea name="note" toName="edited" placeholder="note" maxSubmissions="1"/>"""


def label_config(stage: str = "edit") -> str:
    """The Label Studio labeling config of one stage's project (``edit`` or ``qa``)."""
    if stage not in ("edit", "qa"):
        raise ValueError(f"no Label Studio config for stage {stage!r}; stages: edit, qa")
    parts = [_ITEM_VIEW, _QUESTIONS_VIEW] if stage == "qa" else [_ITEM_VIEW]
    return "<View>\n" + "\n".join([*parts, _verdict_view()]) + "\n</View>\n"


@dataclass
class ExportSummary:
    """What ``export_tasks`` wrote: per stage, the tasks file, its config and the task count."""

    files: dict[str, tuple[Path, Path, int]] = field(default_factory=dict)  # stage -> (tasks, config, n)
    qa_waiting: int = 0  # QA items whose edit is not accepted (yet): not exported

    @property
    def message(self) -> str:
        lines = [
            f"Label Studio {stage}: {n} tasks -> {tasks} (labeling config: {cfg})"
            for stage, (tasks, cfg, n) in self.files.items()
        ]
        if self.qa_waiting:
            lines.append(
                f"  {self.qa_waiting} QA items wait for their edit to be accepted; export again after importing those decisions"
            )
        return "\n".join(lines)


def stage_paths(out: Path, stage: str) -> tuple[Path, Path]:
    """Tasks file and labeling config of a stage: ``out`` itself for edit, ``<stem>.qa.json`` for QA."""
    tasks = out if stage == "edit" else out.with_name(f"{out.stem}.qa{out.suffix or '.json'}")
    return tasks, tasks.with_name(tasks.stem + ".label_config.xml")


def export_tasks(queue: ReviewQueue, out: Path, image_prefix: str = DEFAULT_IMAGE_PREFIX) -> ExportSummary:
    """Write the Label Studio tasks (JSON lists) and labeling configs of both stages."""
    outcomes = {i: o for i, (o, _n, _a) in queue.item_states().items()}
    by_stage: dict[str, list[dict[str, Any]]] = {"edit": [], "qa": []}
    summary = ExportSummary()
    with sql_transaction(queue.engine, write=False) as sql:
        for row in queue.items(with_payload=True, live_only=True):
            if row.stage == "qa" and row.parent_id is not None and outcomes.get(row.parent_id) != "accept":
                summary.qa_waiting += 1
                continue
            p = json.loads(row.payload_json)
            data = {
                "item_id": row.id,
                "edit_id": row.edit_id,
                "task": row.task,
                "variant": row.variant,
                "meta": f"{row.task} / {p.get('target_name') or '-'}",
                "instruction": p.get("instruction") or "",
                "target_name": p.get("target_name") or "",
                "target_box": p.get("target_box"),
                "original_image": image_prefix + p["original_image"],
                "edited_image": image_prefix + (p.get("edited_image") or p["original_image"]),
            }
            if row.stage == "qa":
                data["questions"] = [
                    _question_data(q) for q in question_state(p.get("questions", []), question_events(sql, row.id))
                ]
            by_stage[row.stage].append({"data": data})
    out.parent.mkdir(parents=True, exist_ok=True)
    for stage, tasks in by_stage.items():
        tasks_path, config_path = stage_paths(out, stage)
        tasks_path.write_text(json.dumps(tasks, indent=1, ensure_ascii=False), encoding="utf-8")
        config_path.write_text(label_config(stage), encoding="utf-8")
        summary.files[stage] = (tasks_path, config_path, len(tasks))
    return summary


def _question_data(q: dict[str, Any]) -> dict[str, Any]:
    """One question as a QA task shows it: a one-line summary plus the editable fields."""
    options = list(q.get("options") or [])
    lettered = "  ".join(f"({chr(65 + i)}) {o}" for i, o in enumerate(options))
    state = "" if q.get("valid", True) else " [marked invalid]"
    shown = (
        f"{q['qid']} [{q['qtype']}, {q.get('dimension') or '-'}]{state}: {q['text']}"
        + (f"  {lettered}" if lettered else "")
        + f"  gold: {q['gold']}"
    )
    return {
        "id": q["id"],
        "qid": q["qid"],
        "qtype": q["qtype"],
        "text": q["text"],
        "options": options,
        "gold": q["gold"],
        "shown": shown,
    }


@dataclass
class ImportSummary:
    imported: int = 0
    already_imported: int = 0
    rejected: list[dict[str, Any]] = field(default_factory=list)  # {task, annotation, reason, detail}


@dataclass(frozen=True)
class Annotation:
    """One Label Studio annotation read as a review decision (with QA question edits)."""

    verdict: str
    reasons: list[str]
    note: str
    question_updates: dict[str, dict[str, Any]]

    def ref(self, item_id: str, annotation_id: Any) -> str:
        """The decision's ``source_ref``: the same annotation with the same content is imported once."""
        content = stable_id(self.verdict, self.reasons, self.note, self.question_updates, length=12)
        return f"labelstudio:{item_id}:{annotation_id}:{content}"


def import_decisions(queue: ReviewQueue, path: Path) -> ImportSummary:
    """Append the decisions of a Label Studio JSON export as events (idempotent)."""
    try:
        tasks = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise QueueError(f"{path}: not a readable Label Studio JSON export: {exc}") from None
    if not isinstance(tasks, list):
        raise QueueError(
            f"{path}: expected a JSON list of tasks (Label Studio 'JSON' export), got {type(tasks).__name__}"
        )
    summary = ImportSummary()
    known = _annotator_users(queue)  # Label Studio user id -> user name, from earlier imports
    learned: dict[str, str] = {}
    for ti, task in enumerate(tasks):
        task_ref = task.get("id", ti) if isinstance(task, dict) else ti
        data = task.get("data", {}) if isinstance(task, dict) else {}
        item = data.get("item_id") if isinstance(data, dict) else None
        if not item:
            summary.rejected.append(
                {
                    "task": task_ref,
                    "annotation": None,
                    "reason": "missing_item_id",
                    "detail": "task data has no item_id",
                }
            )
            continue
        for ai, ann in enumerate(task.get("annotations") or []):
            ann_ref = ann.get("id", ai) if isinstance(ann, dict) else ai
            if not isinstance(ann, dict):
                summary.rejected.append(
                    {
                        "task": task_ref,
                        "annotation": ann_ref,
                        "reason": "invalid_annotation",
                        "detail": "an annotation is not a JSON object",
                    }
                )
                continue
            if ann.get("was_cancelled"):
                summary.rejected.append(
                    {
                        "task": task_ref,
                        "annotation": ann_ref,
                        "reason": "cancelled",
                        "detail": "annotation was skipped in Label Studio",
                    }
                )
                continue
            try:
                parsed = parse_annotation(ann.get("result") or [], data.get("questions") or [])
                user = annotator_name(ann, known, learned)
                ev = queue.import_decision(
                    user,
                    item,
                    parsed.verdict,
                    parsed.reasons,
                    parsed.note,
                    source_ref=parsed.ref(item, ann_ref),
                    question_updates=parsed.question_updates,
                )
            except (QueueError, QuestionError) as exc:
                summary.rejected.append(
                    {"task": task_ref, "annotation": ann_ref, "reason": "invalid_annotation", "detail": str(exc)}
                )
                continue
            if ev is None:
                summary.already_imported += 1
            else:
                summary.imported += 1
    _remember_annotators(queue, learned)
    return summary


ANNOTATOR_KEY = "labelstudio-user:"  # review_meta key of a Label Studio user id; its value is the user's name


def annotator_name(ann: dict[str, Any], known: dict[str, str], learned: dict[str, str]) -> str:
    """The user an annotation belongs to: the one its Label Studio user id named before (``known``,
    plus what this import ``learned``), else ``labelstudio:<email>`` where the export carries the
    annotators' details (a snapshot), else ``labelstudio:<id>`` (the quick JSON export)."""
    who = ann.get("completed_by")
    ls_id, email = (who.get("id"), who.get("email")) if isinstance(who, dict) else (who, None)
    ls_id = None if ls_id is None else str(ls_id)
    if ls_id is not None and ls_id in known:
        return known[ls_id]
    name = f"labelstudio:{email or ls_id or 'unknown'}"
    if ls_id is not None:
        known[ls_id] = learned[ls_id] = name
    return name


def _annotator_users(queue: ReviewQueue) -> dict[str, str]:
    with sql_statement(queue.engine) as sql:
        rows = sql.rows("SELECT key, value FROM review_meta WHERE key LIKE :prefix", {"prefix": ANNOTATOR_KEY + "%"})
    return {key[len(ANNOTATOR_KEY) :]: value for key, value in rows}


def _remember_annotators(queue: ReviewQueue, learned: dict[str, str]) -> None:
    """Record which user each newly seen Label Studio id names (the first record wins)."""
    if not learned:
        return
    with sql_transaction(queue.engine) as sql:
        for ls_id, name in learned.items():
            sql.run(
                "INSERT INTO review_meta (key, value) VALUES (:key, :value) ON CONFLICT (key) DO NOTHING",
                {"key": (ANNOTATOR_KEY + ls_id)[:64], "value": name},
            )


def parse_annotation(result: list[dict[str, Any]], questions: list[dict[str, Any]]) -> Annotation:
    """An annotation's result list as a decision; raises :class:`QueueError` naming what is wrong."""
    verdict, reasons, note = None, [], ""
    updates: dict[str, dict[str, Any]] = {}
    if not isinstance(result, list):
        raise QueueError(f"the annotation result is a {type(result).__name__}, not a list")
    for r in result:
        value = r.get("value") if isinstance(r, dict) else None
        if not isinstance(value, dict):
            raise QueueError(f"a result entry without a 'value' object: {json.dumps(r)[:200]}")
        name = str(r.get("from_name") or "")
        if name == "verdict":
            choices = value.get("choices") or []
            verdict = choices[0] if choices else None
        elif name == "reasons":
            reasons = list(value.get("choices") or [])
        elif name == "note":
            note = _text(value)
        elif m := _QUESTION_RESULT.match(name):
            kind, index = m.group(1), int(m.group(2))
            if index >= len(questions):
                raise QueueError(
                    f"result {name!r} names question {index}, but the task has {len(questions)} questions"
                )
            upd = updates.setdefault(questions[index]["id"], {})
            if kind == "invalid":
                upd["invalid"] = "invalid" in (value.get("choices") or [])
            elif kind == "options":
                if options := [line.strip() for line in _text(value).splitlines() if line.strip()]:
                    upd["options"] = options
            elif _text(value).strip():
                upd[kind] = _text(value).strip()
    if verdict is None:
        raise QueueError("no 'verdict' choice in the annotation result")
    return Annotation(verdict, reasons, note, {qid: u for qid, u in updates.items() if u})


def _text(value: dict[str, Any]) -> str:
    texts = value.get("text") or []
    return "\n".join(str(t) for t in texts) if isinstance(texts, list) else str(texts)
