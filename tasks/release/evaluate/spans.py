"""MHALO-style span detection on wrong CoT answers: the judge copies the response with tagged
hallucinated spans; tags are read back into token intervals (``prompts.eval_parsing``)."""

from __future__ import annotations

import json
from typing import Any

from prompts.clients.base import MLLMClient, MLLMRequest
from prompts.eval_parsing import parse_tagged
from prompts.eval_prompts import SPAN_DETECT, TYPE_DEFINITIONS
from prompts.runner import PromptInput, build_messages
from storage.hashing import stable_id


def detect_spans(
    judge: MLLMClient,
    wrong: list[dict[str, Any]],
    facts: dict[str, list[list[str]]],
    prior_terms: dict[str, list[str]],
) -> list[dict[str, Any]]:
    """Span rows for wrong CoT answers; ``facts`` and ``prior_terms`` are keyed by answer id."""
    if not wrong:
        return []
    inputs = [
        PromptInput(
            {
                "task": a["task"],
                "question": a["text"],
                "facts": facts.get(a["id"], []),
                "response": a["raw_response"] or "",
                "types": [[k, v] for k, v in TYPE_DEFINITIONS.items()],
                "prior_terms": list(prior_terms.get(a["id"], [])),
            }
        )
        for a in wrong
    ]
    reqs = [
        MLLMRequest(SPAN_DETECT.name, SPAN_DETECT.version, build_messages(SPAN_DETECT, i), i.context, 0.0, 2048)
        for i in inputs
    ]
    responses = judge.complete(reqs)
    rows = []
    for a, resp in zip(wrong, responses):
        det = parse_tagged(resp.text, a["raw_response"] or "") if resp.error is None else None
        status = "error" if det is None else ("ok" if det.followed else "not_followed")
        rows.append(
            {
                "id": stable_id("spans", a["id"], resp.backend, resp.model_id),
                "answer_id": a["id"],
                "task": a["task"],
                "qid": a["qid"],
                "status": status,
                "spans_json": json.dumps([[s.start, s.end, s.type] for s in det.spans]) if det else None,
                "response": a["raw_response"],
                "prompt_name": SPAN_DETECT.name,
                "prompt_version": SPAN_DETECT.version,
                "backend": resp.backend or judge.backend,
                "model_id": resp.model_id or judge.model_id,
                "raw_response": resp.text,
            }
        )
    return sorted(rows, key=lambda r: r["id"])
