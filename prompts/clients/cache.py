"""The response cache: a wrapper around any client, stored in the run directory (``cache/mllm/``).

The key hashes backend, model, messages (images by their sha256, not their bytes) and sampling
parameters, so a rerun with the same prompts asks nothing of the network. Only successful
answers are stored; transport errors are asked again next time. One small JSON file per entry
(``<key[:2]>/<key>.json``), written atomically, so concurrent shards never race on a file.
"""

from __future__ import annotations

import json

from prompts.clients.base import ChatMessage, MLLMClient, MLLMRequest, MLLMResponse
from storage.fs import RunFS
from storage.hashing import canonical_json, sha256_hex


def _message_digest(messages: list[ChatMessage]) -> list[dict[str, object]]:
    out = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):
            parts = []
            for p in content:
                if p.get("type") == "image":
                    parts.append({"type": "image", "sha256": sha256_hex(p["data"])})
                else:
                    parts.append(p)
            content = parts
        out.append({"role": m.get("role"), "content": content})
    return out


def cache_key(backend: str, model_id: str, request: MLLMRequest) -> str:
    """Hash of what determines the answer. The rules backend also depends on the context."""
    payload: dict[str, object] = {
        "backend": backend,
        "model": model_id,
        "messages": _message_digest(request.messages),
        "temperature": request.temperature,
        "max_tokens": request.max_tokens,
    }
    if backend == "rules":
        payload["context"] = request.context
    if request.context.get("blind"):  # a language-only request never shares an entry with a sighted one
        payload["blind"] = True
    return sha256_hex(canonical_json(payload))


class CachedClient:
    """Looks every request up in ``cache_dir`` first; only misses reach ``inner``."""

    def __init__(self, inner: MLLMClient, cache_dir: RunFS):
        self.inner = inner
        self.cache_dir = cache_dir
        self.backend = inner.backend
        self.model_id = inner.model_id
        self.uses_images = getattr(inner, "uses_images", True)
        self.hits = 0
        self.misses = 0

    def _rel(self, key: str) -> str:
        return f"{key[:2]}/{key}.json"

    def _get(self, key: str) -> MLLMResponse | None:
        rel = self._rel(key)
        try:
            data = json.loads(self.cache_dir.read_text(rel))
        except FileNotFoundError:
            return None
        except (json.JSONDecodeError, UnicodeDecodeError):
            return None  # a torn or foreign file: ask again and overwrite it
        return MLLMResponse(data["text"], data["model_id"], data["backend"], cached=True)

    def complete(self, requests: list[MLLMRequest]) -> list[MLLMResponse]:
        keys = [cache_key(self.backend, self.model_id, r) for r in requests]
        out: list[MLLMResponse | None] = [self._get(k) for k in keys]
        miss = [i for i, r in enumerate(out) if r is None]
        self.hits += len(requests) - len(miss)
        self.misses += len(miss)
        if miss:
            fresh = self.inner.complete([requests[i] for i in miss])
            for i, resp in zip(miss, fresh):
                out[i] = resp
                if resp.error is None:
                    entry = {"text": resp.text, "model_id": resp.model_id, "backend": resp.backend}
                    self.cache_dir.write_text_atomic(self._rel(keys[i]), json.dumps(entry, ensure_ascii=False))
        return [r for r in out if r is not None]
