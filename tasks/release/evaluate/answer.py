"""Answering: the prompt context and request of each question, and the images it is asked about.

The model under test sees the question (with lettered options for MC) and one image or a
before/after pair; the rules baseline also reads the edit's annotations from the context.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from prompts.clients.base import MLLMClient, MLLMRequest
from prompts.eval_prompts import answer_spec
from prompts.runner import PromptInput, build_messages
from storage.image_store import ImageStore
from storage.rejects import reject
from tasks.engine.reuse import ItemReuse, complete_with_reuse


def load_images(
    store: ImageStore, stage: str, questions: list[dict[str, Any]]
) -> tuple[dict[str, bytes], list[dict[str, Any]], list[dict[str, Any]]]:
    """(image bytes by path, questions ready to ask, reject rows): a question whose image is
    missing or that has neither one image nor a pair is rejected with the reason."""
    images: dict[str, bytes] = {}
    ready: list[dict[str, Any]] = []
    rejects: list[dict[str, Any]] = []
    for q in questions:
        try:
            for rel in q["images"]:
                if rel not in images:
                    images[rel] = store.get_bytes(rel)
        except (FileNotFoundError, ValueError) as exc:
            rejects.append(
                reject(q["id"], stage, "image_missing", f"question {q['id']}: {exc}", {"images": q["images"]})
            )
            continue
        if len(q["images"]) not in (1, 2):
            rejects.append(
                reject(
                    q["id"],
                    stage,
                    "bad_image_count",
                    f"question {q['id']} has {len(q['images'])} images; 1 or 2 expected",
                )
            )
            continue
        ready.append(q)
    return images, ready, rejects


def answer_context(q: dict[str, Any], mode: str, annotations: dict[str, Any]) -> dict[str, Any]:
    """What the answering template (and the rules baseline) is filled with."""
    options = list(q.get("options") or [])
    return {
        "question": q["text"],
        "options": [[chr(65 + i), o] for i, o in enumerate(options)],
        "options_list": options,
        "cot": mode == "cot",
        "pair": len(q["images"]) == 2,
        "task": q["task"],
        "qtype": q["qtype"],
        "question_set": q["question_set"],
        "annotations": jsonable(annotations),
    }


@dataclass(frozen=True)
class AskSettings:
    """How the model under test is asked, the same for every shard and mode: its sampling
    (``eval.temperature``, ``eval.max_tokens``) and ``blind`` (``reactbench eval --blind``, the
    language-only run): the same prompt with the images withheld, and no annotations in the
    context either (the offline backends' "image"); the context says ``blind``, which also sets
    the requests apart in the response cache."""

    temperature: float
    max_tokens: int
    blind: bool = False


def ask(
    client: MLLMClient,
    questions: list[dict[str, Any]],
    images: dict[str, bytes],
    mode: str,
    annotations: dict[str, dict[str, Any]],
    settings: AskSettings,
    reuse: ItemReuse | None = None,
) -> list[tuple[dict[str, Any], Any, Any]]:
    """Ask every question in one batch: (question, prompt spec, response) in question order;
    with ``reuse``, answers stored under the same item key are taken instead of asked again."""
    reqs, specs = [], []
    blind = settings.blind
    for q in questions:
        spec = answer_spec(q["qtype"], mode, len(q["images"]))
        if blind:
            inp = PromptInput({**answer_context(q, mode, {}), "blind": True}, [])
        else:
            inp = PromptInput(
                answer_context(q, mode, annotations.get(q["edit_id"], {})), [images[r] for r in q["images"]]
            )
        messages = build_messages(spec, inp, require_images=not blind)
        reqs.append(
            MLLMRequest(spec.name, spec.version, messages, inp.context, settings.temperature, settings.max_tokens)
        )
        specs.append(spec)
    if not reqs:
        responses = []
    else:
        responses = complete_with_reuse(reuse, client, reqs) if reuse else client.complete(reqs)
    return list(zip(questions, specs, responses))


def jsonable(ann: dict[str, Any]) -> dict[str, Any]:
    return {k: (sorted(v) if isinstance(v, set) else v) for k, v in sorted(ann.items())}
