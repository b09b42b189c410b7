"""The evaluation stage: one model answers every question in each mode; answers are scored.

It is a regular :class:`tasks.base.Stage` living at ``eval/<model-slug>`` so that shards,
markers, resume and manifests work as for the build stages. Per shard: answer (one batch
per prompt), extract YN/MC answers, judge SA answers (LLM judge, offline rules judge as
fallback), then attribute CoT-hallucinated answers to sub-causes and mark their spans.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from prompts.clients.base import MLLMClient, MLLMRequest
from prompts.eval_parsing import answer_segment, extract_choice, extract_yes_no, mentions, negated_mention, parse_tagged
from prompts.eval_prompts import (
    SA_JUDGE,
    SPAN_DETECT,
    SUBCAUSE,
    SUBCAUSES as SUBCAUSE_TAXONOMY,
    TASKS,
    TYPE_DEFINITIONS,
    answer_spec,
    is_denial,
    offline_judge,
)
from prompts.runner import PromptInput, build_messages, run_prompt
from storage.hashing import stable_id
from storage.rejects import reject
from tasks.base import RunContext, ShardResult, Stage, chunk
from tasks.evaluate.inputs import answer_id, edit_annotations, input_fingerprint, read_inputs, rubric
from tasks.evaluate.schemas import ANSWERS, SPANS, SUBCAUSES
from tasks.reuse import ItemReuse, complete_with_reuse

PRIOR_TASKS = ("relational_erasure", "counterfactual_attribute")


def model_slug(backend: str, model: str, unverified: bool) -> str:
    """A folder name for one evaluated model (``rules-rules-v1``, ``openai-Qwen-Qwen2.5-VL-7B``)."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", f"{backend}-{model}").strip("-")
    return slug + ("-unverified" if unverified else "")


@dataclass
class EvalClients:
    """The model under test and the judge (also used for sub-causes and spans)."""

    model: MLLMClient
    judge: MLLMClient


class EvalStage(Stage):
    outputs = {"answers": ANSWERS, "subcauses": SUBCAUSES, "spans": SPANS}
    upstream = ()

    def __init__(self, backend: str, model: str, unverified: bool, clients: EvalClients):
        self.backend = backend
        self.model = model
        self.unverified = unverified
        self.clients = clients
        self.name = f"eval/{model_slug(backend, model, unverified)}"  # type: ignore[misc]
        self._questions: list[dict[str, Any]] | None = None
        self._qmap: dict[str, dict[str, Any]] = {}
        self._encoder: Any = None  # tasks.evaluate.embed_judge.Encoder when eval.embedding_model is set
        self._embed_threshold = 0.8
        self._annotations: dict[str, dict[str, Any]] = {}

    # -- contract ----------------------------------------------------------------------
    def config_section(self, ctx: RunContext) -> Any:
        return {
            "backend": self.backend,
            "model": self.model,
            "unverified": self.unverified,
            "eval": ctx.config.eval.model_dump(mode="json"),
            "judge": [self.clients.judge.backend, self.clients.judge.model_id],
        }

    def input_fingerprints(self, ctx: RunContext) -> dict[str, str]:
        return {"questions": input_fingerprint(ctx.run, self.unverified)}

    def plan(self, ctx: RunContext) -> list[Any]:
        questions, edits = read_inputs(ctx.run, self.unverified)
        self._questions = questions
        self._qmap = {q["id"]: q for q in questions}
        self._annotations = edit_annotations(questions, edits)
        return [[q["id"] for q in part] for part in chunk(questions, ctx.config.run.shard_size)]

    def _ensure_loaded(self, ctx: RunContext) -> None:
        """Load questions when a worker runs a shard without having planned (another process)."""
        if self._questions is None:
            self.plan(ctx)

    def process_shard(self, ctx: RunContext, index: int, work: Any) -> ShardResult:
        self._ensure_loaded(ctx)
        self._embed_threshold = ctx.config.eval.embedding_threshold
        if ctx.config.eval.embedding_model and self._encoder is None:
            from tasks.evaluate.embed_judge import load_encoder

            self._encoder = load_encoder(ctx.config.eval.embedding_model)
        by_id = self._questions_by_id()
        questions = [by_id[i] for i in work]
        result = ShardResult(rows_in=len(questions))
        images, ready = self._load_images(ctx, questions, result)
        answers: list[dict[str, Any]] = []
        reuse = ItemReuse.for_shard(ctx, self.name, "eval-answer")  # answers already given are not asked again
        for mode in ctx.config.eval.modes:
            answers += self._answer(ctx, ready, images, mode, reuse)
        result.items = reuse.counts.as_dict()
        self._judge_sa(answers)
        result.outputs["answers"] = sorted(answers, key=lambda a: a["id"])
        wrong_cot = [a for a in answers if a["mode"] == "cot" and a["question_set"] == "main" and not a["correct"] and a["status"] != "error"]
        result.outputs["subcauses"] = self._subcauses(wrong_cot) if ctx.config.eval.subcauses else []
        result.outputs["spans"] = self._spans(wrong_cot) if ctx.config.eval.spans else []
        return result

    # -- steps ---------------------------------------------------------------------------
    def _load_images(self, ctx: RunContext, questions: list[dict[str, Any]], result: ShardResult) -> tuple[dict[str, bytes], list[dict[str, Any]]]:
        images: dict[str, bytes] = {}
        ready = []
        for q in questions:
            try:
                for rel in q["images"]:
                    if rel not in images:
                        images[rel] = ctx.images.get_bytes(rel)
            except (FileNotFoundError, ValueError) as exc:
                result.rejects.append(reject(q["id"], self.name, "image_missing", f"question {q['id']}: {exc}", {"images": q["images"]}))
                continue
            if len(q["images"]) not in (1, 2):
                result.rejects.append(reject(q["id"], self.name, "bad_image_count", f"question {q['id']} has {len(q['images'])} images; 1 or 2 expected"))
                continue
            ready.append(q)
        return images, ready

    def _context(self, q: dict[str, Any], mode: str) -> dict[str, Any]:
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
            "annotations": _jsonable(self._annotations.get(q["edit_id"], {})),
        }

    def _answer(
        self, ctx: RunContext, questions: list[dict[str, Any]], images: dict[str, bytes], mode: str, reuse: ItemReuse | None = None
    ) -> list[dict[str, Any]]:
        cfg = ctx.config.eval
        reqs, metas = [], []
        for q in questions:
            spec = answer_spec(q["qtype"], mode, len(q["images"]))
            inp = PromptInput(self._context(q, mode), [images[r] for r in q["images"]])
            reqs.append(MLLMRequest(spec.name, spec.version, build_messages(spec, inp), inp.context, cfg.temperature, cfg.max_tokens))
            metas.append((q, spec))
        if not reqs:
            responses = []
        else:
            responses = complete_with_reuse(reuse, self.clients.model, reqs) if reuse else self.clients.model.complete(reqs)
        out = []
        for (q, spec), resp in zip(metas, responses):
            row = self._score(q, mode, resp.text, resp.error)
            row.update(prompt_name=spec.name, prompt_version=spec.version, backend=resp.backend or self.clients.model.backend, model_id=resp.model_id or self.clients.model.model_id)
            out.append(row)
        return out

    def _score(self, q: dict[str, Any], mode: str, raw: str, error: str | None) -> dict[str, Any]:
        cot = mode == "cot"
        ann = self._annotations.get(q["edit_id"], {})
        row: dict[str, Any] = {
            "id": answer_id(q["id"], mode, self.backend, self.model),
            "question_id": q["id"],
            **{k: q.get(k) for k in ("edit_id", "editor", "task", "variant", "question_set", "qid", "qtype", "dimension", "rotation", "image_role", "text", "options", "gold")},
            "mode": mode,
            "raw_response": raw,
            "error": error,
            "unverified": self.unverified,
            "beaf_related": (q.get("dimension") == "removed") if q["question_set"] == "beaf" else None,
            "prior_fallback": None,
            "judge": "extract",
        }
        if error is not None:
            return {**row, "status": "error", "parsed": None, "correct": False}
        prior_applies = q["task"] in PRIOR_TASKS and q["question_set"] == "main" and bool(ann.get("prior_terms"))
        if q["qtype"] == "YN":
            parsed = extract_yes_no(raw, cot)
            row["correct"] = parsed is not None and parsed.lower() == str(q["gold"]).strip().lower()
            if prior_applies and str(q["gold"]).strip().lower() == "no":
                row["prior_fallback"] = parsed == "Yes"
        elif q["qtype"] == "MC":
            parsed = extract_choice(raw, list(q.get("options") or []), cot)
            row["correct"] = parsed is not None and parsed == str(q["gold"]).strip().upper()
            prior_letters = _prior_options(q, ann.get("prior_terms") or [])
            if prior_applies and prior_letters:
                row["prior_fallback"] = parsed in prior_letters
        else:
            parsed = answer_segment(raw, cot) or None
            row["correct"] = False  # set by the judge
            row["judge"] = None
        row["parsed"] = parsed
        row["status"] = "ok" if parsed is not None else "unparseable"
        return row

    def _judge_sa(self, answers: list[dict[str, Any]]) -> None:
        todo = [a for a in answers if a["qtype"] == "SA" and a["status"] != "error"]
        if not todo:
            return
        questions = self._questions_by_id()
        inputs = []
        for a in todo:
            q = questions[a["question_id"]]
            ann = self._annotations.get(a["edit_id"], {})
            inputs.append(
                PromptInput(
                    {
                        "task": a["task"],
                        "task_note": TASKS.get(a["task"], {}).get("note", ""),
                        "question": a["text"],
                        "gold": a["gold"],
                        "answer": a["parsed"] or a["raw_response"] or "",
                        "rubric": [[k, str(v)] for k, v in sorted(rubric(q).items())],
                        "prior_terms": list(ann.get("prior_terms") or []) if a["question_set"] == "main" else [],
                    }
                )
            )
        outcomes = run_prompt(self.clients.judge, SA_JUDGE, inputs, temperature=0.0, max_tokens=256)
        for a, inp, out in zip(todo, inputs, outcomes):
            ctx = inp.context
            if out.status == "ok" and out.fields:
                verdict, judge = out.fields, ("rules" if out.backend == "rules" else "llm")
            else:
                try:
                    verdict = offline_judge(ctx["task"], ctx["gold"], ctx["answer"], dict(ctx["rubric"]), ctx["prior_terms"])
                    judge = "rules_fallback"
                except ValueError as exc:  # a malformed rubric: recorded, scored as not correct
                    verdict, judge = {"verdict": "hallucination", "fallback": False, "reason": f"cannot judge: {exc}"}, "failed"
            a["correct"] = verdict["verdict"] == "correct"
            if judge != "llm" and not a["correct"] and not verdict.get("fallback") and self._encoder is not None:
                from tasks.evaluate.embed_judge import accept_paraphrase

                refs = [ctx["gold"]] + [v for k, v in ctx["rubric"] if k in ("new_attribute", "remaining_at_location")]
                ok, sim = accept_paraphrase(self._encoder, ctx["answer"], refs, ctx["prior_terms"], self._embed_threshold)
                if ok:
                    a["correct"] = True
                    verdict = {**verdict, "verdict": "correct", "reason": f"paraphrase of the reference (cosine {sim})"}
                judge += "+embedding"
            a["judge"] = judge
            a["judge_model"] = f"{out.backend}:{out.model_id}"
            a["judge_reason"] = verdict.get("reason")
            a["judge_raw"] = out.raw
            if a["task"] in PRIOR_TASKS and a["question_set"] == "main" and ctx["prior_terms"]:
                a["prior_fallback"] = bool(verdict.get("fallback")) and not a["correct"]

    def _facts(self, a: dict[str, Any]) -> list[list[str]]:
        q = (self._questions_by_id().get(a["question_id"])) or {}
        ann = self._annotations.get(a["edit_id"], {})
        facts = {k: ann[k] for k in ("target_name", "original_attribute", "new_attribute", "attribute_type", "count") if ann.get(k) is not None}
        if "target_name" in facts and a["task"] == "relational_erasure":
            facts["removed_object"] = facts.pop("target_name")
        facts.update({k: v for k, v in rubric(q).items() if k not in ("correct_if", "wrong_if")})
        facts["correct_answer"] = _gold_text(a)
        return [[k, str(v)] for k, v in sorted(facts.items())]

    def _questions_by_id(self) -> dict[str, dict[str, Any]]:
        return self._qmap

    def _subcauses(self, wrong: list[dict[str, Any]]) -> list[dict[str, Any]]:
        inputs = []
        for a in wrong:
            tax = SUBCAUSE_TAXONOMY.get(a["task"])
            if not tax:
                continue
            inputs.append(
                (
                    a,
                    PromptInput(
                        {
                            "task": a["task"],
                            "task_label": TASKS[a["task"]]["label"],
                            "cause": TASKS[a["task"]]["cause"],
                            "question": a["text"],
                            "gold": a["gold"],
                            "facts": self._facts(a),
                            "response": a["raw_response"] or "",
                            "subcauses": [list(t) for t in tax],
                            "codes": [t[0] for t in tax],
                        }
                    ),
                )
            )
        if not inputs:
            return []
        outcomes = run_prompt(self.clients.judge, SUBCAUSE, [i for _, i in inputs], temperature=0.0, max_tokens=256)
        rows = []
        for (a, _), out in zip(inputs, outcomes):
            rows.append(
                {
                    "id": stable_id("subcause", a["id"], out.backend, out.model_id),
                    "answer_id": a["id"],
                    "task": a["task"],
                    "qid": a["qid"],
                    "qtype": a["qtype"],
                    "editor": a["editor"],
                    "status": out.status if out.status != "not_applicable" else "unparseable",
                    "label": (out.fields or {}).get("label"),
                    "rationale": (out.fields or {}).get("rationale"),
                    **out.provenance(),
                }
            )
        return sorted(rows, key=lambda r: r["id"])

    def _spans(self, wrong: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if not wrong:
            return []
        inputs = [
            PromptInput(
                {
                    "task": a["task"],
                    "question": a["text"],
                    "facts": self._facts(a),
                    "response": a["raw_response"] or "",
                    "types": [[k, v] for k, v in TYPE_DEFINITIONS.items()],
                    "prior_terms": list(self._annotations.get(a["edit_id"], {}).get("prior_terms") or []),
                }
            )
            for a in wrong
        ]
        reqs = [MLLMRequest(SPAN_DETECT.name, SPAN_DETECT.version, build_messages(SPAN_DETECT, i), i.context, 0.0, 2048) for i in inputs]
        responses = self.clients.judge.complete(reqs)
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
                    "backend": resp.backend or self.clients.judge.backend,
                    "model_id": resp.model_id or self.clients.judge.model_id,
                    "raw_response": resp.text,
                }
            )
        return sorted(rows, key=lambda r: r["id"])


def _gold_text(a: dict[str, Any]) -> str:
    """The gold answer in words: "B. a bare bun" for MC, else the gold itself."""
    options = list(a.get("options") or [])
    gold = str(a["gold"])
    i = ord(gold[:1].upper() or "@") - 65
    return f"{gold}. {options[i]}" if a["qtype"] == "MC" and 0 <= i < len(options) else gold


def _asserts(text: str, prior_terms: list[str]) -> bool:
    return any(mentions(text, t) and not negated_mention(text, t) for t in prior_terms if t)


def _prior_options(q: dict[str, Any], prior_terms: list[str]) -> set[str]:
    """Letters of the options that fall back on the prior: those asserting a prior term (the
    erased object, the original attribute); for a premise question that itself asserts it
    ("The colour of the <erased object> is:"), every wrong option that accepts the premise."""
    gold = str(q.get("gold") or "").strip().upper()
    options = list(q.get("options") or [])
    out = {chr(65 + i) for i, o in enumerate(options) if chr(65 + i) != gold and _asserts(o, prior_terms)}
    if not out and _asserts(q.get("text") or "", prior_terms):
        out = {chr(65 + i) for i, o in enumerate(options) if chr(65 + i) != gold and not is_denial(o)}
    return out


def _jsonable(ann: dict[str, Any]) -> dict[str, Any]:
    return {k: (sorted(v) if isinstance(v, set) else v) for k, v in sorted(ann.items())}
