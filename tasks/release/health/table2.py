"""The build's mix beside the paper's Table 2 (tasks: images and QA pairs), with ratios, and
the build's own counts per question type and dimension (the paper gives none for those).

Questions are counted once each (a cyclic MC question's presentations are one question), on
the main and control sets: BEAF existence questions are an extra this pipeline adds.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from storage.task_spec import all_tasks, task_order
from tasks.release.health.questions import first_presentations


def paper_table2() -> dict[str, dict[str, int]]:
    """Images and QA pairs per task of the published benchmark (each task spec's
    ``reference_counts``: the ReactBench paper's Table 2 for the built-in tasks), in task order."""
    specs = all_tasks()
    return {t: dict(specs[t].reference_counts) for t in sorted(specs, key=task_order) if specs[t].reference_counts}


def _ratio(ours: int, paper: int | None) -> float | None:
    return round(ours / paper, 4) if paper else None


def table2_figures(questions: pa.Table, originals: pa.Table) -> dict[str, Any]:
    """Per task: our questions and source images, the paper's, and ours / paper; plus our counts
    per question type and per dimension."""
    q = first_presentations(questions)
    q = q.filter(pc.not_equal(q.column("question_set"), "beaf"))
    per_task = {r["task"]: r["count_all"] for r in q.group_by("task").aggregate([([], "count_all")]).to_pylist()}
    images = {
        r["task"]: r["original_image_count_distinct"]
        for r in originals.group_by("task").aggregate([("original_image", "count_distinct")]).to_pylist()
    }
    reference = paper_table2()
    tasks: dict[str, Any] = {}
    for task in list(reference) + sorted(set(per_task) - set(reference)):
        paper = reference.get(task, {})
        ours_q, ours_i = int(per_task.get(task, 0)), int(images.get(task, 0))
        tasks[task] = {
            "questions": ours_q,
            "paper_questions": paper.get("questions"),
            "questions_ratio": _ratio(ours_q, paper.get("questions")),
            "images": ours_i,
            "paper_images": paper.get("images"),
            "images_ratio": _ratio(ours_i, paper.get("images")),
        }
    total_q, total_p = sum(per_task.values()), sum(p["questions"] for p in reference.values())
    share = {
        t: {
            "ours": round(v["questions"] / max(1, total_q), 4),
            "paper": round((v["paper_questions"] or 0) / total_p, 4),
        }
        for t, v in tasks.items()
    }
    by_type: dict[str, dict[str, int]] = defaultdict(dict)
    by_dim: dict[str, dict[str, int]] = defaultdict(dict)
    for r in q.group_by(["task", "qtype"]).aggregate([([], "count_all")]).to_pylist():
        by_type[r["task"]][r["qtype"]] = r["count_all"]
    for r in q.group_by(["task", "dimension"]).aggregate([([], "count_all")]).to_pylist():
        by_dim[r["task"]][str(r["dimension"])] = r["count_all"]
    return {
        "tasks": tasks,
        "total": {"questions": total_q, "paper_questions": total_p, "questions_ratio": _ratio(total_q, total_p)},
        "task_share": share,
        "question_types": {t: dict(sorted(v.items())) for t, v in by_type.items()},
        "dimensions": {t: dict(sorted(v.items())) for t, v in by_dim.items()},
    }
