"""MLLM backend settings (SPEC section 4). API keys are never here: only the name of the env variable."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from storage.config_base import Section


class MLLMConfig(Section):
    backend: Literal["rules", "openai", "transformers"] = "rules"
    model: str = "rules-v1"
    base_url: str | None = None  # OpenAI-compatible endpoint, e.g. http://gpu-node:8000/v1
    api_key_env: str = "OPENAI_API_KEY"
    concurrency: int = Field(32, ge=1)
    timeout_s: float = Field(120.0, gt=0)
    max_retries: int = Field(5, ge=0, description="transport retries (429, 5xx, timeouts, connection errors)")
    retry_base_s: float = Field(1.0, ge=0, description="first backoff delay; doubles per retry, with 0.5x-1.5x jitter")
    retry_max_s: float = Field(30.0, ge=0, description="cap of one backoff delay")
    parse_retries: int = Field(2, ge=0, description="re-asks with the validation error before llm_unparseable")
    temperature: float = Field(0.0, ge=0.0)
    max_tokens: int = Field(1024, ge=1)
    cache: bool = True
    device: str = "cpu"  # transformers backend
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    batch_size: int = Field(8, ge=1)
