"""Builders of a small hand-made run directory: edits and questions of all four tasks, written
through the storage API (the shape the qa and review stages write), with real PNG images."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from storage.fs import RunFS
from storage.hashing import canonical_json, stable_id
from storage.image_store import ImageStore
from storage.parquet_io import table_from_rows, write_table
from storage.schemas import EDITS, QUESTIONS, VERIFIED_EDITS, VERIFIED_QUESTIONS


def _img(store: ImageStore, seed: int) -> str:
    rng = np.random.default_rng(seed)
    return store.put_array(rng.integers(0, 255, size=(24, 32, 3), dtype=np.uint8))


def _edit(
    eid: str,
    task: str,
    cand: dict[str, Any],
    orig: str,
    edited: str,
    editor: str = "classical",
    seconds: float = 0.5,
    status: str = "ok",
) -> dict[str, Any]:
    return {
        "id": eid,
        "instruction_id": f"i-{eid}",
        "task": task,
        "variant": "targeted",
        "source": "fsc147" if task == "dense_counting" else "visual_genome",
        "image_id": f"img-{eid}",
        "image_path": f"/data/{eid}.jpg",
        "width": 32,
        "height": 24,
        "candidate_id": f"c-{eid}",
        "candidate_json": canonical_json(cand),
        "instruction": f"edit {eid}",
        "edit_type": "remove",
        "target_name": cand.get("target_name"),
        "target_box": [1.0, 1.0, 5.0, 5.0],
        "editor": editor,
        "editor_params_json": "{}",
        "seed": 0,
        "status": status,
        "original_image": orig,
        "edited_image": edited,
        "mask_image": None,
        "qc_json": canonical_json(
            {"psnr_outside": 31.5, "ssim_outside": 0.93, "change_inside": 0.4, "passed": status == "ok"}
        ),
        "edit_seconds": seconds,
    }


def _q(
    edit: dict[str, Any],
    qset: str,
    qid: str,
    qtype: str,
    dim: str,
    text: str,
    gold: str,
    images: list[str],
    role: str,
    options=None,
    rubric=None,
    rotation=0,
) -> dict[str, Any]:
    return {
        "id": stable_id(edit["id"], qset, qid, role, rotation),
        "edit_id": edit["id"],
        "editor": edit["editor"],
        "task": edit["task"],
        "variant": edit["variant"],
        "question_set": qset,
        "qid": qid,
        "qtype": qtype,
        "dimension": dim,
        "text": text,
        "options": options,
        "gold": gold,
        "rotation": rotation,
        "rubric_json": canonical_json(rubric) if rubric else None,
        "images": images,
        "image_role": role,
    }


def build_rows(
    store: ImageStore, editor: str = "classical", seconds: float = 0.5, cyclic: bool = True
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Edits and questions of all four tasks; RE Q12 in its four cyclic presentations, or with
    ``cyclic=False`` once (what a ``qa.mc_mode: shuffle`` build holds)."""
    o = [_img(store, i) for i in range(4)]
    e = [_img(store, 10 + i + (100 if editor != "classical" else 0)) for i in range(4)]
    sfx = "" if editor == "classical" else f"-{editor}"
    re_ = _edit(
        "e-re" + sfx,
        "relational_erasure",
        {"target_name": "mustard", "partner_name": "hot dog", "context_json": canonical_json([{"name": "ketchup"}])},
        o[0],
        e[0],
        editor,
        seconds,
    )
    ca = _edit(
        "e-ca" + sfx,
        "counterfactual_attribute",
        {"target_name": "banana", "attribute": "yellow"},
        o[1],
        e[1],
        editor,
        seconds,
    )
    at = _edit("e-at" + sfx, "alteration_tracing", {"target_name": "cup"}, o[2], e[2], editor, seconds)
    dc = _edit("e-dc" + sfx, "dense_counting", {"target_name": "apple", "count": 21}, o[3], o[3], editor, seconds)
    qs = [
        _q(re_, "main", "Q1", "YN", "direct", "Can you see a mustard line on top of the bun?", "No", [e[0]], "edited"),
        _q(
            re_,
            "main",
            "Q5",
            "SA",
            "direct",
            "What can be seen on top of the bun?",
            "a bare bun surface",
            [e[0]],
            "edited",
            rubric={
                "removed_object": "mustard",
                "remaining_at_location": "a bare bun surface",
                "location": "top of the bun",
            },
        ),
        _q(
            re_,
            "main",
            "Q9",
            "MC",
            "direct",
            "Which description matches the top of the bun?",
            "B",
            [e[0]],
            "edited",
            options=[
                "A mustard line",
                "A bare bun surface with no condiment",
                "Mustard blobs",
                "A dotted mustard trail",
            ],
        ),
    ]
    opts12 = ["None of these", "a mustard line", "a bicycle", "a car"]
    for r in range(4 if cyclic else 1):
        rot = opts12[r:] + opts12[:r]
        qs.append(
            _q(
                re_,
                "main",
                "Q12",
                "MC",
                "absurd",
                "Which of these is on top of the bun?",
                "ABCD"[rot.index("None of these")],
                [e[0]],
                "edited",
                options=rot,
                rotation=r,
            )
        )
    for i, (dim, obj, g_o, g_e) in enumerate(
        [
            ("removed", "a mustard", "Yes", "No"),
            ("present", "a ketchup", "Yes", "Yes"),
            ("absent", "a giraffe", "No", "No"),
        ],
        1,
    ):
        for role, img, gold in (("original", o[0], g_o), ("edited", e[0], g_e)):
            qs.append(_q(re_, "beaf", f"B{i}", "YN", dim, f"Is there {obj} in this image?", gold, [img], role))
    qs += [
        _q(ca, "main", "Q1", "YN", "direct", "Is the banana yellow?", "No", [e[1]], "edited"),
        _q(
            ca,
            "main",
            "Q5",
            "SA",
            "direct",
            "What is the colour of the banana?",
            "blue",
            [e[1]],
            "edited",
            rubric={
                "object": "banana",
                "attribute_type": "colour",
                "original_attribute": "yellow",
                "new_attribute": "blue",
            },
        ),
        _q(
            ca,
            "main",
            "Q9",
            "MC",
            "direct",
            "What is the colour of the banana?",
            "A",
            [e[1]],
            "edited",
            options=["blue", "yellow", "green", "brown"],
        ),
        _q(
            at,
            "main",
            "Q1",
            "YN",
            "none",
            "Comparing the two pictures, has anything changed?",
            "Yes",
            [o[2], e[2]],
            "pair",
        ),
        _q(
            at,
            "main",
            "Q7",
            "SA",
            "none",
            "Comparing the two pictures, what changed?",
            "the cup on the table was removed",
            [o[2], e[2]],
            "pair",
            rubric={"object": "cup", "location": "the table", "change": "was removed", "operation": "removed"},
        ),
        _q(
            at,
            "main",
            "Q10",
            "MC",
            "none",
            "Comparing the two pictures, what changed?",
            "C",
            [o[2], e[2]],
            "pair",
            options=["Nothing changed", "The lamp moved", "The cup was removed", "A plate was added"],
        ),
        _q(
            at,
            "control",
            "C1",
            "YN",
            "control_location",
            "Comparing the two pictures, has anything changed at the window?",
            "No",
            [o[2], e[2]],
            "pair",
        ),
        _q(dc, "main", "Q1", "YN", "exact", "Does this picture contain exactly 21 apples?", "Yes", [o[3]], "original"),
        _q(
            dc,
            "main",
            "Q5",
            "SA",
            "exact",
            "How many apples does this picture contain?",
            "21",
            [o[3]],
            "original",
            rubric={"count": "21", "object": "apples"},
        ),
        _q(
            dc,
            "main",
            "Q6",
            "SA",
            "range",
            "Estimate the number of apples as a range.",
            "19-23",
            [o[3]],
            "original",
            rubric={"count": "21", "object": "apples", "max_span": "6"},
        ),
        _q(
            dc,
            "main",
            "Q7",
            "MC",
            "exact",
            "How many apples does this picture contain?",
            "B",
            [o[3]],
            "original",
            options=["17", "21", "25", "14", "30"],
        ),
    ]
    return [re_, ca, at, dc], qs


def write_run(
    root: Path,
    verified: bool = True,
    unverified: bool = True,
    editors: tuple[str, ...] = ("classical",),
    cyclic: bool = True,
) -> RunFS:
    """A run directory holding qa/questions + edit/edits and (optionally) the review export."""
    run = RunFS.open(str(root))
    store = ImageStore(run)
    edits: list[dict[str, Any]] = []
    questions: list[dict[str, Any]] = []
    for k, ed in enumerate(editors):
        e, q = build_rows(store, ed, seconds=0.5 + k, cyclic=cyclic)
        edits += e
        questions += q
    if unverified:
        write_table(run, "edit/edits/part-00000.parquet", table_from_rows(EDITS, edits))
        write_table(run, "qa/questions/part-00000.parquet", table_from_rows(QUESTIONS, questions))
    if verified:
        ve = [dict(x, decisions_json=json.dumps([{"action": "accept"}])) for x in edits]
        from tasks.review.export_set import write_export_set  # a review export is a set sealed by its manifest

        write_export_set(
            run,
            {
                "verified_edits": table_from_rows(VERIFIED_EDITS, ve),
                "verified_questions": table_from_rows(VERIFIED_QUESTIONS, questions),
            },
            0,
        )
    run.write_text_atomic("config.yaml", "version: 1\n")
    return run


class ScriptedReplies:
    """An MLLM client that answers each question with ``reply(question)``: the question is found
    by its text, options and the images sent, so any export can be fed the very same replies."""

    backend = "scripted"
    uses_images = True

    def __init__(self, model_id: str, questions: list[dict[str, Any]], image_bytes: dict[str, bytes], reply: Any):
        import hashlib

        self.model_id = model_id
        self.reply = reply
        self._hash = lambda b: hashlib.sha256(b).hexdigest()
        self.by_key = {
            self._key(q["text"], q.get("options") or [], [image_bytes[p] for p in q["images"]]): q for q in questions
        }

    def _key(self, text: str, options: list[str], images: list[bytes]) -> tuple:
        return (text, tuple(options), tuple(self._hash(b) for b in images))

    def complete(self, requests: list[Any]) -> list[Any]:
        from prompts.clients.base import MLLMResponse

        out = []
        for req in requests:
            images = [p["data"] for p in req.messages[0]["content"] if p["type"] == "image"]
            q = self.by_key[self._key(req.context["question"], req.context["options_list"], images)]
            out.append(MLLMResponse(self.reply(q), self.model_id, self.backend))
        return out
