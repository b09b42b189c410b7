"""A VLMEvalKit-style TSV: one line per question, images inlined as base64.

Columns: ``index, image, question, A..E, answer, category (task), l2-category (dimension),
split, qtype, question_set, qid``. Single images are a base64 string; before/after pairs a
JSON list of two base64 strings (VLMEvalKit's multi-image convention).
"""

from __future__ import annotations

import base64
import csv
import io
import json
from typing import Any

LETTERS = "ABCDE"
HEADER = ["index", "image", "question", *LETTERS, "answer", "category", "l2-category", "split", "qtype", "question_set", "qid", "id"]


def tsv_text(rows: list[dict[str, Any]]) -> str:
    """The TSV for released rows (as built by ``tasks.export.rows.release_row``), in row order."""
    buf = io.StringIO()
    w = csv.writer(buf, delimiter="\t", lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
    w.writerow(HEADER)
    for i, r in enumerate(rows):
        imgs = [base64.b64encode(im["bytes"]).decode("ascii") for im in r["images"]]
        opts = list(r["options"] or []) + [""] * len(LETTERS)
        w.writerow(
            [i, imgs[0] if len(imgs) == 1 else json.dumps(imgs), r["question"], *opts[: len(LETTERS)], r["answer"], r["task"], r["dimension"] or "", "test", r["qtype"], r["question_set"], r["qid"], r["id"]]
        )
    return buf.getvalue()
