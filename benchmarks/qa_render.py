"""Question rendering throughput: how many checked question rows per second the qa stage renders.

Renders at least 50,000 questions from analysis fields of all four tasks (the full path the stage
takes per edit: slot building, templates, option checks, seeded MC layout, stable ids), once in
``shuffle`` and once in ``cyclic`` mode, side by side in this one run. Target: >= 20,000 questions/s.
The last line is one JSON object with ``questions``, ``seconds`` and ``questions_per_s`` (shuffle mode).

    .venv/bin/python benchmarks/qa_render.py [--questions 50000]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "qa"))

from qa_helpers import FIELDS, make_edit  # noqa: E402  (the same realistic fields the tests use)

from tasks.stages.qa.render import RenderSettings  # noqa: E402
from tasks.stages.qa.synthesis import questions_for_edit  # noqa: E402


def run(n_questions: int, mode: str) -> tuple[int, float, int]:
    """Render edits round-robin over the four tasks until ``n_questions`` rows exist."""
    settings = RenderSettings(mc_mode=mode, run_seed=0)
    tasks = list(FIELDS)
    edits = {t: [make_edit(t, id=f"{t}-{i}") for i in range(64)] for t in tasks}
    total = problems = i = 0
    start = time.perf_counter()
    while total < n_questions:
        task = tasks[i % 4]
        fields = FIELDS[task] if task != "dense_counting" else {"count": 5 + i % 400, "class_name": "bead"}
        out = questions_for_edit(edits[task][i % 64], fields, settings)
        total += len(out.rows)
        problems += len(out.problems)
        i += 1
    return total, time.perf_counter() - start, problems


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=50_000)
    args = ap.parse_args()
    run(2_000, "shuffle")  # warm-up: template compilation, imports
    n, secs, bad = run(args.questions, "shuffle")
    nc, secs_c, _ = run(args.questions, "cyclic")
    qps, qps_c = n / secs, nc / secs_c
    print(f"shuffle: {n} questions in {secs:.2f} s = {qps:,.0f} questions/s ({bad} refused by checks)")
    print(f"cyclic:  {nc} questions in {secs_c:.2f} s = {qps_c:,.0f} questions/s (every MC rotation)")
    print(
        f"ratio cyclic/shuffle throughput: {qps_c / qps:.2f}x; target >= 20,000 questions/s: {'met' if qps >= 20_000 else 'NOT met'}"
    )
    print(json.dumps({"questions": n, "seconds": round(secs, 3), "questions_per_s": round(qps, 1)}))


if __name__ == "__main__":
    main()
