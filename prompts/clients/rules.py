"""The ``rules`` backend: deterministic, offline answers computed from the annotations alone.

It serves the embedded demo, the tests and a cheap no-vision baseline. Answers are written as
``field: value`` lines (lists as JSON), exactly like a well-behaved model, and then go through
the normal parser. Which function answers which prompt is the table the client is given
(``prompts.rules.rules_table``, built by the task room from the tasks' hooks:
``tasks.engine.prompt_hooks.rules_table``), plus the answers registered with ``register_rules``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from prompts.clients.base import MLLMRequest, MLLMResponse
from prompts.rules import get_rules_answer
from prompts.rules_api import RulesFn

NOT_APPLICABLE_TEXT = "Current instance is not applicable."


def serialise_fields(fields: Mapping[str, object]) -> str:
    """``field: value`` lines; lists, dicts and booleans as JSON values."""
    lines = []
    for key, value in fields.items():
        if isinstance(value, (list, dict, bool)) or value is None:
            text = json.dumps(value, ensure_ascii=False)
        else:
            text = str(value).replace("\n", " ")
        lines.append(f"{key}: {text}")
    return "\n".join(lines)


class RulesClient:
    """Answers every request from ``request.context`` with the prompt's function in ``rules``
    (prompt name -> answer: ``prompts.rules.rules_table``) or a registered one."""

    backend = "rules"
    uses_images = False  # callers may skip reading images for this backend

    def __init__(self, model_id: str = "rules-v1", *, rules: Mapping[str, RulesFn]):
        self.model_id = model_id
        self.rules = rules

    def complete(self, requests: list[MLLMRequest]) -> list[MLLMResponse]:
        return [self._one(r) for r in requests]

    def _one(self, req: MLLMRequest) -> MLLMResponse:
        fn = get_rules_answer(req.prompt_name, self.rules)
        try:
            fields = fn(req.context)
        except (KeyError, TypeError, ValueError) as exc:
            return MLLMResponse(
                "",
                self.model_id,
                self.backend,
                error=f"rules answer for {req.prompt_name!r} failed: {exc.__class__.__name__}: {exc}",
            )
        text = NOT_APPLICABLE_TEXT if fields is None else serialise_fields(fields)
        return MLLMResponse(text, self.model_id, self.backend)
