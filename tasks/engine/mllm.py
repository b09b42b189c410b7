"""The MLLM client the stages share: one per (config, run, no_cache) in a process; and the check
of the model servers a stage is about to call.

It lives below the stages because instruct, model verification (edit) and QA analysis all
call the same model through the same cache and concurrency limit.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable

from prompts.clients.base import MLLMClient
from prompts.config import MLLMConfig
from storage.fs import RunFS
from storage.hashing import canonical_json

SERVER_BACKENDS = ("openai",)  # backends that call a model server (checked before work)
PROBE_FRESH_S = 60.0  # a server that passed its check is not checked again for this long

_CLIENTS: dict[str, MLLMClient] = {}
_CLIENTS_LOCK = threading.Lock()
_PASSED: dict[str, float] = {}  # endpoint key -> when it last passed its check


def shared_client(cfg: MLLMConfig, run: RunFS, *, no_cache: bool = False) -> MLLMClient:
    """One client per (config, run, no_cache) in this process, so every shard shares one
    concurrency limit (openai) or one loaded model (transformers). A client that stopped (its
    circuit breaker tripped, or a signal aborted its calls) is replaced: a later stage run in
    the same process starts with a fresh breaker. The rules backend answers from the registered
    tasks' tables, handed to it when it is made: a task registered since (a notebook, a test)
    gets a new client."""
    from tasks.engine.prompt_hooks import client_for
    from tasks.engine.registry import all_specs

    tasks = [[t, id(spec)] for t, spec in all_specs().items()] if cfg.backend == "rules" else []
    key = canonical_json([cfg.model_dump(mode="json"), run.url, no_cache, tasks])
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(key)
        if client is not None and getattr(getattr(client, "inner", client), "stopped", False):
            close = getattr(getattr(client, "inner", client), "close", None)
            if close is not None:
                close()
            client = None
        if client is None:
            client = _CLIENTS[key] = client_for(cfg, run.sub("cache", "mllm"), no_cache=no_cache)
        return client


def server_configs(configs: Iterable[MLLMConfig]) -> list[MLLMConfig]:
    """The configs among ``configs`` whose model server is checked (``openai``, ``mllm.probe`` on)."""
    return [c for c in configs if c.backend in SERVER_BACKENDS and c.probe]


def require_endpoints(configs: Iterable[MLLMConfig]) -> None:
    """Check every distinct model server of ``configs`` (``openai`` backend, ``mllm.probe`` on):
    reachable, the model listed, one tiny request answered. Raises
    ``prompts.clients.endpoint.EndpointDown`` naming the first that fails. A server that passed
    within the last minute is not asked again (a build checks before its first stage and each
    stage before its shards)."""
    from prompts.clients.endpoint import probe_endpoint

    for cfg in server_configs(configs):
        key = canonical_json([cfg.base_url, cfg.model, cfg.api_key_env])
        passed = _PASSED.get(key)
        if passed is not None and time.monotonic() - passed < PROBE_FRESH_S:
            continue
        probe_endpoint(cfg)
        _PASSED[key] = time.monotonic()
