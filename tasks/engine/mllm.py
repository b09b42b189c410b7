"""The MLLM client the stages share: one per (config, run, no_cache) in a process.

It lives below the stages because instruct, model verification (edit) and QA analysis all
call the same model through the same cache and concurrency limit.
"""

from __future__ import annotations

import threading

from prompts.clients.base import MLLMClient
from prompts.config import MLLMConfig
from storage.fs import RunFS
from storage.hashing import canonical_json

_CLIENTS: dict[str, MLLMClient] = {}
_CLIENTS_LOCK = threading.Lock()


def shared_client(cfg: MLLMConfig, run: RunFS, *, no_cache: bool = False) -> MLLMClient:
    """One client per (config, run, no_cache) in this process, so every shard shares one
    concurrency limit (openai) or one loaded model (transformers)."""
    from prompts.clients.factory import make_client

    key = canonical_json([cfg.model_dump(mode="json"), run.url, no_cache])
    with _CLIENTS_LOCK:
        if key not in _CLIENTS:
            _CLIENTS[key] = make_client(cfg, run.sub("cache", "mllm"), no_cache=no_cache)
        return _CLIENTS[key]
