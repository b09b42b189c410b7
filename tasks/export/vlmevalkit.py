"""VLMEvalKit TSVs: one per question type, following its dataset-type conventions.

- ``reactbench_MCQ.tsv`` (multiple choice, ``ImageMCQDataset``): ``A``..``E`` option columns
  and the gold letter. The presentations of a cyclic question share a group: the first has
  index ``g``, presentation ``r`` has ``g + r * 1_000_000`` (VLMEvalKit's circular convention,
  ``g_index = index % 1e6``), so its circular score is our consistency accuracy.
- ``reactbench_Y_N.tsv`` (``ImageYORNDataset``): answer ``Yes`` / ``No``.
- ``reactbench_VQA.tsv`` (``ImageVQADataset``): the short answers, with the ``rubric`` and
  ``prior_terms`` our judge uses (VLMEvalKit's own VQA metric is exact match; score these with
  ``reactbench eval`` or the lmms-eval form for React-Score).

Images are base64 in the ``image`` column, each distinct image (or before/after pair) once per
file: later rows hold the index of the first row that carries it, which VLMEvalKit resolves
(``ImageBaseDataset``: an ``image`` of at most 64 characters is another row's index). Pairs are a
JSON list of two base64 strings with their file names in ``image_path``.
"""

from __future__ import annotations

import base64
import csv
import io
import json
from typing import Any

LETTERS = "ABCDE"
CIRCULAR_STRIDE = 1_000_000
FILES = {"MC": "vlmevalkit/reactbench_MCQ.tsv", "YN": "vlmevalkit/reactbench_Y_N.tsv", "SA": "vlmevalkit/reactbench_VQA.tsv"}
COMMON = ["category", "l2-category", "split", "qid", "question_set", "variant", "editor", "id"]
HEADERS = {
    "MC": ["index", "image", "image_path", "question", *LETTERS, "answer", *COMMON, "rotation"],
    "YN": ["index", "image", "image_path", "question", "answer", *COMMON],
    "SA": ["index", "image", "image_path", "question", "answer", *COMMON, "rubric", "prior_terms"],
}


def _indices(rows: list[dict[str, Any]], qtype: str) -> list[int]:
    """Row indices: sequential, except circular MC presentations, which share a group index."""
    if qtype != "MC":
        return list(range(len(rows)))
    groups: dict[tuple, int] = {}
    out = []
    for r in rows:
        key = (r["edit_id"], r["question_set"], r["qid"], r.get("image_role"))
        g = groups.setdefault(key, len(groups))
        out.append(g + int(r.get("rotation") or 0) * CIRCULAR_STRIDE)
    return out


def tsv_text(rows: list[dict[str, Any]], qtype: str) -> str:
    """The TSV of one question type for released rows (``tasks.export.rows.release_row``)."""
    mine = [r for r in rows if r["qtype"] == qtype]
    buf = io.StringIO()
    w = csv.writer(buf, delimiter="\t", lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
    w.writerow(HEADERS[qtype])
    first: dict[tuple[str, ...], int] = {}  # image names -> index of the row that carries them
    for index, r in zip(_indices(mine, qtype), mine):
        names = tuple(im["path"] for im in r["images"])
        if names in first:
            image = str(first[names])
        else:
            first[names] = index
            b64 = [base64.b64encode(im["bytes"]).decode("ascii") for im in r["images"]]
            image = b64[0] if len(b64) == 1 else json.dumps(b64)
        path = names[0] if len(names) == 1 else json.dumps(list(names))
        common = [r["task"], r["dimension"] or "", "test", r["qid"], r["question_set"], r["variant"], r["editor"], r["id"]]
        if qtype == "MC":
            opts = list(r["options"] or []) + [""] * len(LETTERS)
            w.writerow([index, image, path, r["question"], *opts[: len(LETTERS)], r["answer"], *common, r.get("rotation") or 0])
        elif qtype == "YN":
            w.writerow([index, image, path, r["question"], r["answer"], *common])
        else:
            w.writerow([index, image, path, r["question"], r["answer"], *common, r["rubric"] or "", json.dumps(list(r.get("prior_terms") or []))])
    return buf.getvalue()


def write_vlmevalkit(out: Any, rows: list[dict[str, Any]]) -> list[str]:
    """Write one TSV per question type present; returns their release-relative paths."""
    written = []
    for qtype, rel in FILES.items():
        if any(r["qtype"] == qtype for r in rows):
            out.write_text_atomic(rel, tsv_text(rows, qtype))
            written.append(rel)
    return written
