"""The ``prior`` backend: the blind prior model (:mod:`prompts.blind_prior`) as an evaluation model.

It reads no image and no annotation: each answer comes from the question's text and the run's
mined statistics, so ``reactbench eval --model prior:blind-v1`` gives the offline *baseline*
(what a model that trusts the prior and ignores the pixels scores). The evaluation binds it to
the run (:meth:`PriorClient.bind_run`) before asking; it answers only the answering prompts.
"""

from __future__ import annotations

from prompts.blind_prior import PriorStats, blind_answer, load_prior_stats
from prompts.clients.base import MLLMRequest, MLLMResponse
from prompts.clients.rules import serialise_fields
from storage.fs import RunFS


class PriorClient:
    """Answers evaluation questions from their text and the run's mined statistics."""

    backend = "prior"
    uses_images = False
    cacheable = False  # deterministic and cheap: a cache would only keep stale answers

    def __init__(self, model_id: str = "blind-v1", stats: PriorStats | None = None):
        self.model_id = model_id
        self.stats = stats

    def bind_run(self, run: RunFS) -> None:
        """Read the run's mined statistics (once)."""
        if self.stats is None:
            self.stats = load_prior_stats(run)

    def complete(self, requests: list[MLLMRequest]) -> list[MLLMResponse]:
        return [self._one(r) for r in requests]

    def _one(self, req: MLLMRequest) -> MLLMResponse:
        ctx = req.context
        if self.stats is None or "question" not in ctx or "qtype" not in ctx:
            why = "not bound to a run" if self.stats is None else f"prompt {req.prompt_name!r} is not a question"
            return MLLMResponse("", self.model_id, self.backend, error=f"prior backend: {why}")
        answer = blind_answer(str(ctx["qtype"]), str(ctx["question"]), list(ctx.get("options_list") or []), self.stats)
        fields = {"reasoning": "Answered from what such scenes usually hold, without the image.", "answer": answer}
        if not ctx.get("cot"):
            fields.pop("reasoning")
        return MLLMResponse(serialise_fields(fields), self.model_id, self.backend)
