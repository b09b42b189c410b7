"""Config -> client: one name -> constructor registry, with the response cache around any backend."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from prompts.clients.base import MLLMClient
from prompts.config import MLLMConfig
from prompts.rules_api import RulesFn
from storage.fs import RunFS

BackendFactory = Callable[[MLLMConfig], MLLMClient]


RULES_BACKEND = "rules"  # the backend that answers from the rules table its caller hands down


def _rules(cfg: MLLMConfig, rules: Mapping[str, RulesFn] | None = None) -> MLLMClient:
    from prompts.clients.rules import RulesClient

    if rules is None:
        raise ValueError(
            "mllm.backend rules answers from the rules table its caller hands down: "
            "make_client(..., rules=tasks.engine.prompt_hooks.rules_table())"
        )
    return RulesClient(cfg.model, rules=rules)


def _openai(cfg: MLLMConfig) -> MLLMClient:
    from prompts.clients.openai_client import OpenAIClient

    return OpenAIClient.from_config(cfg)


def _transformers(cfg: MLLMConfig) -> MLLMClient:
    from prompts.clients.transformers_client import TransformersClient

    return TransformersClient.from_config(cfg)


def _prior(cfg: MLLMConfig) -> MLLMClient:
    from prompts.clients.prior import PriorClient

    return PriorClient(cfg.model)


BACKENDS: dict[str, BackendFactory] = {
    RULES_BACKEND: _rules,
    "openai": _openai,
    "transformers": _transformers,
    "prior": _prior,
}


def register_backend(name: str, factory: BackendFactory) -> None:
    """Add a backend (e.g. from a plugin); ``mllm.backend: <name>`` then selects it."""
    BACKENDS[name] = factory


def make_client(
    cfg: MLLMConfig,
    cache_dir: RunFS | None,
    *,
    no_cache: bool = False,
    rules: Mapping[str, RulesFn] | None = None,
) -> MLLMClient:
    """Build the configured backend; wrap it in the response cache unless disabled.

    ``cache_dir`` is the cache folder itself (stages pass ``ctx.run.sub("cache", "mllm")``).
    ``rules``: the rules backend's table (prompt name -> answer), which the task room resolves from
    the tasks' hooks (``tasks.engine.prompt_hooks.rules_table``); required by that backend only.
    """
    try:
        factory = BACKENDS[cfg.backend]
    except KeyError:
        raise ValueError(f"mllm.backend: unknown backend {cfg.backend!r}; known: {sorted(BACKENDS)}") from None
    client = _rules(cfg, rules) if factory is _rules else factory(cfg)
    # The rules backend is deterministic and costs microseconds; caching it would only serve
    # stale answers after its rule functions change.
    if (
        cache_dir is None
        or no_cache
        or not cfg.cache
        or cfg.backend == RULES_BACKEND
        or not getattr(client, "cacheable", True)
    ):
        return client
    from prompts.clients.cache import CachedClient

    return CachedClient(client, cache_dir)
