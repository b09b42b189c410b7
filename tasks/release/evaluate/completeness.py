"""How complete each evaluated item is: the main questions it was scored on against the
question set of its task (12 for RE / CA / AT, 8 for DC), per mode.

React-Score renormalises its weights when a question type is missing; an item that lost a
question (a reject in qa or review, a missing image) silently weighs its other questions more.
Both are flagged: ``complete`` is false and every short item is listed with what it misses.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from tasks.stages.qa.templates import question_set, template_tasks


def expected_qids(task: str) -> tuple[str, ...]:
    """The main-set qids of a task's question templates (none for an unknown task)."""
    return tuple(t.qid for t in question_set(task).main) if task in template_tasks() else ()


def completeness(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Per item and mode: scored main questions vs expected; ``complete`` when none is short.

    Answers with a transport error count as missing (they were not scored)."""
    have: dict[tuple[str, str], set[str]] = defaultdict(set)
    info: dict[str, dict[str, Any]] = {}
    modes: set[str] = set()
    for r in rows:
        if (r.get("question_set") or "main") != "main":
            continue
        info.setdefault(
            str(r.get("edit_id")), {"task": r.get("task"), "editor": r.get("editor"), "variant": r.get("variant")}
        )
        modes.add(str(r.get("mode")))
        if r.get("status") != "error":
            have[(str(r.get("edit_id")), str(r.get("mode")))].add(str(r.get("qid")))
    short = []
    for edit_id in sorted(info):
        want = expected_qids(str(info[edit_id]["task"]))
        for mode in sorted(modes):
            got = have.get((edit_id, mode), set())
            missing = [q for q in want if q not in got]
            if missing:
                short.append(
                    {
                        "edit_id": edit_id,
                        **info[edit_id],
                        "mode": mode,
                        "questions": len(got & set(want)),
                        "expected": len(want),
                        "missing": missing,
                    }
                )
    return {
        "items": len(info),
        "complete_items": len(info) - len({s["edit_id"] for s in short}),
        "incomplete": short,
        "complete": not short,
    }
