"""The evaluation stage: one model answers every question in each mode; answers are scored.

It is a regular :class:`tasks.engine.base.Stage` living at ``eval/<model-slug>`` so that shards,
markers, resume and manifests work as for the build stages. Per shard it chains the small
modules of this package: answer (``answer``), read and score YN/MC replies (``score``), judge
SA answers (``judge``), then attribute CoT-hallucinated answers to sub-causes
(``attribute``) and mark their spans (``spans``).
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from prompts.clients.base import MLLMClient
from prompts.config import MLLMConfig
from storage import addresses
from storage.rejects import reject
from tasks.engine.base import RunContext, ShardResult, Stage
from tasks.engine.build_config import BuildConfig
from tasks.engine.reuse import ItemReuse
from tasks.release.evaluate.answer import AskSettings, ask, load_images
from tasks.release.evaluate.attribute import attribute_subcauses, item_facts
from tasks.release.evaluate.extract_judge import extract_with_judge
from tasks.release.evaluate.judge import judge_short_answers
from tasks.release.evaluate.schemas import ANSWERS, SPANS, SUBCAUSES
from tasks.release.evaluate.score import score_reply
from tasks.release.evaluate.spans import detect_spans
from tasks.release.items import edit_annotations, input_fingerprint, read_inputs

if TYPE_CHECKING:
    from tasks.release.evaluate.embed_judge import Encoder

BLIND_SUFFIX = "-blind"


def model_slug(backend: str, model: str, unverified: bool, blind: bool = False) -> str:
    """A folder name for one evaluated model (``rules-rules-v1``, ``openai-Qwen-Qwen2.5-VL-7B``);
    a language-only run (``--blind``) ends in ``-blind``."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", f"{backend}-{model}").strip("-")
    return slug + ("-unverified" if unverified else "") + (BLIND_SUFFIX if blind else "")


def item_shards(questions: list[dict[str, Any]], shard_size: int) -> list[list[str]]:
    """Question ids in shards of about ``shard_size`` that never split an item: the presentations
    of a cyclic question must meet in one shard to be attributed once."""
    by_item: dict[str, list[str]] = defaultdict(list)
    for q in sorted(questions, key=lambda q: q["id"]):
        by_item[q["edit_id"]].append(q["id"])
    shards: list[list[str]] = []
    for edit_id in sorted(by_item):
        if not shards or len(shards[-1]) + len(by_item[edit_id]) > max(1, shard_size) and shards[-1]:
            shards.append([])
        shards[-1].extend(by_item[edit_id])
    return shards


@dataclass
class EvalClients:
    """The model under test and the judge (also used for sub-causes and spans)."""

    model: MLLMClient
    judge: MLLMClient
    configs: tuple[MLLMConfig, ...] = ()  # whose servers are checked before the stage runs


class EvalStage(Stage):
    outputs = {"answers": ANSWERS, "subcauses": SUBCAUSES, "spans": SPANS}
    upstream = ()

    def __init__(self, backend: str, model: str, unverified: bool, clients: EvalClients, blind: bool = False):
        self.backend = backend
        self.model = model
        self.unverified = unverified
        self.blind = blind  # the language-only run: questions asked without their images
        self.clients = clients
        self.name = addresses.evaluation(model_slug(backend, model, unverified, blind))  # type: ignore[misc]
        self._questions: list[dict[str, Any]] | None = None
        self._qmap: dict[str, dict[str, Any]] = {}
        self._by_item: dict[str, list[dict[str, Any]]] = {}
        self._encoder: Encoder | None = None  # set when eval.embedding_model is
        self._annotations: dict[str, dict[str, Any]] = {}

    # -- contract ----------------------------------------------------------------------
    def config_section(self, ctx: RunContext) -> Any:
        return {
            "backend": self.backend,
            "model": self.model,
            "unverified": self.unverified,
            "eval": ctx.config.eval.model_dump(mode="json"),
            "judge": [self.clients.judge.backend, self.clients.judge.model_id],
            **({"blind": True} if self.blind else {}),
        }

    def input_fingerprints(self, ctx: RunContext) -> dict[str, str]:
        return {"questions": input_fingerprint(ctx.source, self.unverified)}

    def model_endpoints(self, config: BuildConfig) -> list[MLLMConfig]:
        return list(self.clients.configs)

    def plan(self, ctx: RunContext) -> list[Any]:
        questions, edits = read_inputs(ctx.source, self.unverified)
        self._questions = questions
        self._qmap = {q["id"]: q for q in questions}
        self._by_item = defaultdict(list)
        for q in questions:
            self._by_item[q["edit_id"]].append(q)
        self._annotations = edit_annotations(questions, edits)
        return item_shards(questions, ctx.shard_size)

    def _ensure_loaded(self, ctx: RunContext) -> None:
        """Load questions when a worker runs a shard without having planned (another process)."""
        if self._questions is None:
            self.plan(ctx)

    def process_shard(self, ctx: RunContext, index: int, work: Any) -> ShardResult:
        self._ensure_loaded(ctx)
        cfg = ctx.config.eval
        if cfg.embedding_model and self._encoder is None:
            from tasks.release.evaluate.embed_judge import load_encoder

            self._encoder = load_encoder(cfg.embedding_model)
        questions = [self._qmap[i] for i in work]
        result = ShardResult(rows_in=len(questions))
        images, ready, rejects = load_images(ctx.images, self.name, questions)
        result.rejects += rejects
        answers: list[dict[str, Any]] = []
        reuse = ItemReuse.for_shard(ctx, self.name, "eval-answer")  # answers already given are not asked again
        asking = AskSettings(cfg.temperature, cfg.max_tokens, blind=self.blind)
        for mode in cfg.modes:
            for q, spec, resp in ask(self.clients.model, ready, images, mode, self._annotations, asking, reuse):
                row = score_reply(
                    q,
                    mode,
                    resp.text,
                    resp.error,
                    self._annotations.get(q["edit_id"], {}),
                    backend=self.backend,
                    model=self.model,
                    unverified=self.unverified,
                )
                row.update(
                    prompt_name=spec.name,
                    prompt_version=spec.version,
                    backend=resp.backend or self.clients.model.backend,
                    model_id=resp.model_id or self.clients.model.model_id,
                )
                answers.append(row)
        result.items = reuse.counts.as_dict()
        # A reply lost to the transport is a transient reject too (orchestration.rerun_reject_reasons):
        # a rerun asks this shard again, its other answers coming from the reuse store.
        result.rejects += [
            reject(
                a["id"], self.name, "llm_error", a["error"] or "", {"question_id": a["question_id"], "mode": a["mode"]}
            )
            for a in answers
            if a["status"] == "error"
        ]
        if cfg.extract_with_judge:
            extract_with_judge(self.clients.judge, answers)
        judge_short_answers(
            self.clients.judge, answers, self._qmap, self._annotations, self._encoder, cfg.embedding_threshold
        )
        result.outputs["answers"] = sorted(answers, key=lambda a: a["id"])
        wrong_cot = [
            a
            for a in answers
            if a["mode"] == "cot" and a["question_set"] == "main" and not a["correct"] and a["status"] != "error"
        ]
        facts = {
            a["id"]: item_facts(a, self._by_item.get(a["edit_id"], []), self._annotations.get(a["edit_id"], {}))
            for a in wrong_cot
        }
        if cfg.subcauses:
            pictures = {a["id"]: [images[r] for r in self._qmap[a["question_id"]]["images"]] for a in wrong_cot}
            result.outputs["subcauses"] = attribute_subcauses(self.clients.judge, wrong_cot, facts, pictures)
        else:
            result.outputs["subcauses"] = []
        priors = {a["id"]: list(self._annotations.get(a["edit_id"], {}).get("prior_terms") or []) for a in wrong_cot}
        result.outputs["spans"] = detect_spans(self.clients.judge, wrong_cot, facts, priors) if cfg.spans else []
        return result
