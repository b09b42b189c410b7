"""Config -> client: one name -> constructor registry, with the response cache around any backend."""

from __future__ import annotations

from collections.abc import Callable

from prompts.clients.base import MLLMClient
from prompts.config import MLLMConfig
from storage.fs import RunFS

BackendFactory = Callable[[MLLMConfig], MLLMClient]


def _rules(cfg: MLLMConfig) -> MLLMClient:
    from prompts.clients.rules import RulesClient

    return RulesClient(cfg.model)


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
    "rules": _rules,
    "openai": _openai,
    "transformers": _transformers,
    "prior": _prior,
}


def register_backend(name: str, factory: BackendFactory) -> None:
    """Add a backend (e.g. from a plugin); ``mllm.backend: <name>`` then selects it."""
    BACKENDS[name] = factory


def make_client(cfg: MLLMConfig, cache_dir: RunFS | None, *, no_cache: bool = False) -> MLLMClient:
    """Build the configured backend; wrap it in the response cache unless disabled.

    ``cache_dir`` is the cache folder itself (stages pass ``ctx.run.sub("cache", "mllm")``).
    """
    try:
        factory = BACKENDS[cfg.backend]
    except KeyError:
        raise ValueError(f"mllm.backend: unknown backend {cfg.backend!r}; known: {sorted(BACKENDS)}") from None
    client = factory(cfg)
    # The rules backend is deterministic and costs microseconds; caching it would only serve
    # stale answers after its rule functions change.
    if (
        cache_dir is None
        or no_cache
        or not cfg.cache
        or cfg.backend == "rules"
        or not getattr(client, "cacheable", True)
    ):
        return client
    from prompts.clients.cache import CachedClient

    return CachedClient(client, cache_dir)
