"""One released row per question: the question, its answer, the images it is asked about.

A row is built without its image bytes (:func:`release_row`: each image's release name and its
place in the run's image store) and gets them only when its row group is written
(:func:`with_bytes`), so an export holds the bytes of one row group at a time, never of the
whole benchmark.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypedDict

if TYPE_CHECKING:
    import datasets

COLUMNS: tuple[str, ...] = (
    "id",
    "task",
    "question_set",
    "qid",
    "qtype",
    "dimension",
    "question",
    "options",
    "answer",
    "answer_text",
    "rotation",
    "image_role",
    "images",
    "rubric",
    "prior_terms",
    "edit_id",
    "editor",
    "variant",
    "source",
    "source_image_id",
    "verified",
)


class ImageRef(TypedDict):
    """A released row's image before its bytes are read: its release name and image-store path."""

    path: str
    rel: str


class ReleaseRow(TypedDict):
    """One released question, text only (the columns of :data:`COLUMNS`; ``images`` as references)."""

    id: str
    task: str
    question_set: str
    qid: str
    qtype: str
    dimension: str | None
    question: str
    options: list[str]
    answer: str
    answer_text: str
    rotation: int
    image_role: str | None
    images: list[ImageRef]
    rubric: str | None
    prior_terms: list[str]
    edit_id: str
    editor: str
    variant: str
    source: str | None
    source_image_id: str | None
    verified: bool


def features() -> datasets.Features:
    """The ``datasets.Features`` of every config (images as an ``Image`` list)."""
    import datasets

    s = datasets.Value("string")
    return datasets.Features(
        {
            "id": s,
            "task": s,
            "question_set": s,
            "qid": s,
            "qtype": s,
            "dimension": s,
            "question": s,
            "options": datasets.List(s),
            "answer": s,
            "answer_text": s,
            "rotation": datasets.Value("int32"),
            "image_role": s,
            "images": datasets.List(datasets.Image()),
            "rubric": s,
            "prior_terms": datasets.List(s),
            "edit_id": s,
            "editor": s,
            "variant": s,
            "source": s,
            "source_image_id": s,
            "verified": datasets.Value("bool"),
        }
    )


def answer_text(q: dict[str, Any]) -> str:
    """The gold answer in words (the option text for MC)."""
    gold = str(q["gold"])
    opts = list(q.get("options") or [])
    if q["qtype"] == "MC" and len(gold) == 1 and gold.isalpha():
        i = ord(gold.upper()) - 65
        if 0 <= i < len(opts):
            return opts[i]
    return gold


def release_row(
    q: dict[str, Any], edit: dict[str, Any] | None, verified: bool, prior_terms: list[str] | None = None
) -> ReleaseRow:
    """A question row whose ``images`` name each image (``path``: its content hash, the name the
    release gives it) and where the run's image store holds it (``rel``); no bytes yet.

    ``prior_terms`` are what a hallucinating short answer falls back on (the erased object,
    the original attribute): the offline judge needs them to grade as ``reactbench eval`` does."""
    rubric = q.get("rubric_json")
    return {
        "id": q["id"],
        "task": q["task"],
        "question_set": q["question_set"],
        "qid": q["qid"],
        "qtype": q["qtype"],
        "dimension": q.get("dimension"),
        "question": q["text"],
        "options": list(q.get("options") or []),
        "answer": q["gold"],
        "answer_text": answer_text(q),
        "rotation": q.get("rotation") or 0,
        "image_role": q.get("image_role"),
        "images": [{"path": rel.rsplit("/", 1)[-1], "rel": rel} for rel in q["images"]],
        "rubric": json.dumps(json.loads(rubric), sort_keys=True, ensure_ascii=False) if rubric else None,
        "prior_terms": list(prior_terms or []),
        "edit_id": q["edit_id"],
        "editor": q["editor"],
        "variant": q["variant"],
        "source": (edit or {}).get("source"),
        "source_image_id": (edit or {}).get("image_id"),
        "verified": verified,
    }


def image_rels(row: ReleaseRow) -> list[str]:
    """The image-store paths of a row's images, in order."""
    return [im["rel"] for im in row["images"]]


def with_bytes(row: ReleaseRow, blobs: Mapping[str, bytes]) -> dict[str, object]:
    """The row as released: each image as ``{"bytes", "path"}`` (``datasets.Image``'s storage),
    its bytes taken from ``blobs`` (image-store path -> bytes)."""
    return {**row, "images": [{"bytes": blobs[im["rel"]], "path": im["path"]} for im in row["images"]]}
