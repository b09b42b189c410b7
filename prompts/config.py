"""MLLM backend settings (SPEC section 4). API keys are never here: only the name of the env variable."""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import Field, field_validator, model_validator

from storage.config_base import NOT_IN_STAGE_KEY, Section

Backend = Literal["rules", "openai", "transformers", "prior"]
BACKENDS: tuple[str, ...] = get_args(Backend)
# What to do with a serving engine's name given as a backend: they all speak the OpenAI API.
SERVER_HINT = "vLLM, SGLang, TGI, llama.cpp and other model servers are used through their OpenAI-compatible API: backend openai with the server's URL"


class MLLMConfig(Section):
    backend: Backend = Field(
        "rules",
        description="rules (offline, from annotations) | openai (any OpenAI-compatible server) | transformers (local model) | prior (evaluation only: the blind prior baseline, from the question text and the mined statistics)",
    )
    model: str = Field(
        "rules-v1", description="model id sent to the server, or a local path / hub id for transformers"
    )
    base_url: str | None = Field(None, description="OpenAI-compatible endpoint, e.g. http://gpu-node:8000/v1")
    api_key_env: str = Field(
        "OPENAI_API_KEY",
        description="name of the environment variable holding the API key (the key itself is never stored)",
        json_schema_extra=NOT_IN_STAGE_KEY,
    )
    concurrency: int = Field(
        32, ge=1, description="requests in flight at once (openai backend)", json_schema_extra=NOT_IN_STAGE_KEY
    )
    timeout_s: float = Field(
        120.0,
        gt=0,
        description="per-request timeout (one attempt; a call takes at most max_retries + 1 attempts plus their backoff, and never more than call_budget_s)",
        json_schema_extra=NOT_IN_STAGE_KEY,
    )
    connect_timeout_s: float = Field(
        10.0,
        gt=0,
        description="seconds to open a connection to the server (the endpoint check and every request)",
        json_schema_extra=NOT_IN_STAGE_KEY,
    )
    max_retries: int = Field(
        5,
        ge=0,
        description="transport retries (429, 5xx, timeouts, connection errors)",
        json_schema_extra=NOT_IN_STAGE_KEY,
    )
    retry_base_s: float = Field(
        1.0,
        ge=0,
        description="first backoff delay; doubles per retry, with 0.5x-1.5x jitter",
        json_schema_extra=NOT_IN_STAGE_KEY,
    )
    retry_max_s: float = Field(30.0, ge=0, description="cap of one backoff delay", json_schema_extra=NOT_IN_STAGE_KEY)
    probe: bool = Field(
        True,
        description="check the server before a stage or an evaluation starts: reachable, the model listed by /v1/models (when it lists any), one one-token request answered",
        json_schema_extra=NOT_IN_STAGE_KEY,
    )
    probe_timeout_s: float = Field(
        30.0,
        gt=0,
        description="the endpoint check gives up on an answer after this long (each of its two requests)",
        json_schema_extra=NOT_IN_STAGE_KEY,
    )
    breaker_window: int = Field(
        50,
        ge=1,
        description="circuit breaker: the last this many requests (each failed attempt counts, retried or not) are watched ...",
        json_schema_extra=NOT_IN_STAGE_KEY,
    )
    breaker_failure_rate: float = Field(
        0.2,
        gt=0,
        le=1,
        description="... and the stage stops when more than this share of them failed (1: never stops)",
        json_schema_extra=NOT_IN_STAGE_KEY,
    )
    call_budget_s: float = Field(
        300.0,
        gt=0,
        description="the most one call may take, all its attempts and backoff together; a call out of time fails (and counts toward the breaker)",
        json_schema_extra=NOT_IN_STAGE_KEY,
    )
    stall_s: float = Field(
        30.0,
        ge=0,
        description="stall detector: when requests are in flight and none has been answered for this long, the stage stops naming the server (0: off)",
        json_schema_extra=NOT_IN_STAGE_KEY,
    )
    max_error_rate: float = Field(
        0.05,
        ge=0,
        le=1,
        description="a command that finished although more than this share of its requests failed (answered only through retries) says so and exits 7",
        json_schema_extra=NOT_IN_STAGE_KEY,
    )
    parse_retries: int = Field(2, ge=0, description="re-asks with the validation error before llm_unparseable")
    temperature: float = Field(0.0, ge=0.0, description="sampling temperature of instruct/qa calls")
    max_tokens: int = Field(1024, ge=1, description="maximum tokens per answer")
    cache: bool = Field(
        True, description="response cache in <run>/cache/mllm (not used for rules)", json_schema_extra=NOT_IN_STAGE_KEY
    )
    device: str = Field(
        "cpu", description="transformers backend: cpu, cuda, cuda:1, ...", json_schema_extra=NOT_IN_STAGE_KEY
    )
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = Field(
        "auto", description="transformers backend weights dtype", json_schema_extra=NOT_IN_STAGE_KEY
    )
    batch_size: int = Field(8, ge=1, description="transformers backend batch size", json_schema_extra=NOT_IN_STAGE_KEY)

    @field_validator("backend", mode="before")
    @classmethod
    def _known_backend(cls, value: object) -> object:
        """A server's name (``vllm``) is not a backend: say which backend serves it."""
        if isinstance(value, str) and value not in BACKENDS:
            raise ValueError(
                f"unknown backend {value!r}; the backends are {', '.join(BACKENDS)} ({SERVER_HINT}, base_url e.g. http://localhost:8000/v1)"
            )
        return value

    @model_validator(mode="after")
    def _model_named_for_real_backends(self) -> MLLMConfig:
        if self.backend != "rules" and self.model == "rules-v1":
            raise ValueError(
                f"mllm.model must name the {self.backend} model (e.g. --mllm-model Qwen/Qwen2.5-VL-7B-Instruct)"
            )
        return self
