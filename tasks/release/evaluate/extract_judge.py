"""Model-based extraction: the judge reads the Yes/No or letter of a reply the rules could not.

The rules (``prompts.eval_parsing``) give no verdict to a reply they cannot read unambiguously;
VLMEvalKit and MMBench ask an LLM in that case. With ``eval.extract_with_judge`` (off by default)
every unparseable YN / MC answer is put to the configured judge with the ``eval_extract`` prompt
(through the judge client, so its calls are cached like every call). The judge's word is read
strictly: exactly "Yes" / "No" or one of the question's letters; "none" or anything else leaves
the answer unparseable. A row it reads is scored as the rules would score that answer and
records ``parsed_by = "judge"``; ``metrics.json`` counts both (``extraction``).
"""

from __future__ import annotations

import re
from typing import Any

from prompts.clients.base import MLLMClient
from prompts.eval_prompts import EXTRACT
from prompts.runner import PromptInput, run_prompt
from tasks.release.evaluate.score import choice_correct


def _strict(qtype: str, word: str, n_options: int) -> str | None:
    """The judge's answer when it is exactly one allowed answer, else None."""
    w = re.sub(r"[\s().*\"'`]+", "", str(word or "")).strip()
    if qtype == "YN":
        return {"yes": "Yes", "no": "No"}.get(w.lower())
    letters = "ABCDE"[:n_options]
    return w.upper() if len(w) == 1 and w.upper() in letters else None


def extract_with_judge(judge: MLLMClient, answers: list[dict[str, Any]]) -> int:
    """Ask ``judge`` about every unparseable YN / MC row of ``answers`` and score the ones it
    reads, in place; returns how many it was asked about."""
    todo = [a for a in answers if a["qtype"] in ("YN", "MC") and a["status"] == "unparseable"]
    if not todo:
        return 0
    inputs = [
        PromptInput(
            {
                "qtype": a["qtype"],
                "question": a["text"],
                "options": [[chr(65 + i), o] for i, o in enumerate(a.get("options") or [])],
                "reply": a["raw_response"] or "",
                "cot": a["mode"] == "cot",
            }
        )
        for a in todo
    ]
    outcomes = run_prompt(judge, EXTRACT, inputs, temperature=0.0, max_tokens=32)
    for a, out in zip(todo, outcomes):
        if out.status != "ok" or not out.fields:
            continue
        parsed = _strict(a["qtype"], out.fields.get("answer", ""), len(a.get("options") or []))
        if parsed is None:
            continue
        a.update(parsed=parsed, status="ok", parsed_by="judge", correct=choice_correct(a["qtype"], parsed, a["gold"]))
        if a["prior_fallback"] is not None:  # recomputed for the answer the judge read
            a["prior_fallback"] = parsed == "Yes" if a["qtype"] == "YN" else parsed in (a["prior_options"] or [])
    return len(todo)
