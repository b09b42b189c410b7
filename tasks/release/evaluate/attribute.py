"""Sub-cause attribution of CoT hallucinations (papers/reactbench.txt Appendix A, Figs. 9-12).

The classifier sees what the paper's prompts give it: the picture(s) the question was asked
about, the question, the correct answer, the per-task facts of the item (edit type, location,
what was removed or remains, original and new attribute, the count) gathered from every
question of the item, and the model's reasoning. A cyclic MC question is attributed once per
item and question (its first wrong presentation), not once per rotation.
"""

from __future__ import annotations

from typing import Any

from prompts.clients.base import MLLMClient
from prompts.eval_prompts import SUBCAUSE, SUBCAUSE_PAIR
from prompts.runner import PromptInput, run_prompt
from storage.hashing import stable_id
from storage.task_spec import task_hook
from tasks.engine.taxonomy import subcauses, task_text
from tasks.release.evaluate.score import gold_text
from tasks.release.items import rubric

_NOT_FACTS = ("correct_if", "wrong_if", "reference_answer", "correct_option")


def item_facts(a: dict[str, Any], item_questions: list[dict[str, Any]], ann: dict[str, Any]) -> list[list[str]]:
    """The facts of the item an answer belongs to, as ``[key, value]`` pairs sorted by key."""
    facts = {
        k: ann[k]
        for k in ("target_name", "original_attribute", "new_attribute", "attribute_type", "count")
        if ann.get(k) is not None
    }
    rename = task_hook(a["task"], "subcause_facts")
    if rename is not None:
        facts = dict(rename(facts))
    for q in sorted(item_questions, key=lambda q: q["id"]):
        for k, v in rubric(q).items():
            if k not in _NOT_FACTS and v not in (None, ""):
                facts.setdefault(k, v)
    facts["correct_answer"] = gold_text(a)
    return [[k, str(v)] for k, v in sorted(facts.items())]


def once_per_question(wrong: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One answer per (mode, item, question set, question, image role): the lowest rotation."""
    seen: dict[tuple, dict[str, Any]] = {}
    for a in sorted(wrong, key=lambda a: (a.get("rotation") or 0, a["id"])):
        seen.setdefault((a["mode"], a["edit_id"], a["question_set"], a["qid"], a.get("image_role")), a)
    return sorted(seen.values(), key=lambda a: a["id"])


def attribute_subcauses(
    judge: MLLMClient,
    wrong: list[dict[str, Any]],
    facts: dict[str, list[list[str]]],
    images: dict[str, list[bytes]],
) -> list[dict[str, Any]]:
    """Sub-cause rows for wrong CoT answers; ``facts`` and ``images`` are keyed by answer id."""
    todo = [a for a in once_per_question(wrong) if subcauses(a["task"])]
    by_spec: dict[str, list[tuple[dict[str, Any], PromptInput]]] = {}
    for a in todo:
        tax, text = subcauses(a["task"]), task_text(a["task"])
        imgs = images.get(a["id"], [])
        spec = SUBCAUSE_PAIR if len(imgs) == 2 else SUBCAUSE
        ctx = {
            "task": a["task"],
            "task_label": text["label"],
            "cause": text["cause"],
            "question": a["text"],
            "gold": a["gold"],
            "facts": facts.get(a["id"], []),
            "response": a["raw_response"] or "",
            "subcauses": [list(t) for t in tax],
            "codes": [t[0] for t in tax],
            "pair": len(imgs) == 2,
        }
        by_spec.setdefault(spec.name, []).append((a, PromptInput(ctx, imgs)))
    rows = []
    for spec in (SUBCAUSE, SUBCAUSE_PAIR):
        batch = by_spec.get(spec.name, [])
        if not batch:
            continue
        outcomes = run_prompt(judge, spec, [i for _, i in batch], temperature=0.0, max_tokens=256)
        for (a, _), out in zip(batch, outcomes):
            rows.append(
                {
                    "id": stable_id("subcause", a["id"], out.backend, out.model_id),
                    "answer_id": a["id"],
                    "task": a["task"],
                    "qid": a["qid"],
                    "qtype": a["qtype"],
                    "editor": a["editor"],
                    "variant": a.get("variant"),
                    "mode": a["mode"],
                    "status": out.status if out.status != "not_applicable" else "unparseable",
                    "label": (out.fields or {}).get("label"),
                    "rationale": (out.fields or {}).get("rationale"),
                    **out.provenance(),
                }
            )
    return sorted(rows, key=lambda r: r["id"])
