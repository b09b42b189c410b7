"""The client protocol every MLLM backend implements (rules, openai, transformers).

A request is backend-neutral: chat messages in OpenAI form where images are given as raw
bytes (``{"type": "image", "data": b"...", "mime": "image/png"}``; each backend encodes them
its own way), plus the annotation ``context`` that the offline ``rules`` backend answers from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol, TypedDict, runtime_checkable


class ImagePart(TypedDict):
    type: Literal["image"]
    data: bytes  # the encoded image (PNG, JPEG, WebP or GIF)
    mime: str


class TextPart(TypedDict):
    type: Literal["text"]
    text: str


class ChatMessage(TypedDict):
    """One chat turn as the prompt runner builds it and every backend reads it."""

    role: Literal["system", "user", "assistant"]
    content: str | list[ImagePart | TextPart]


@dataclass
class MLLMRequest:
    prompt_name: str
    prompt_version: str
    messages: list[ChatMessage]
    context: dict[str, object] = field(default_factory=dict)  # annotations, for the rules backend
    temperature: float = 0.0
    max_tokens: int = 1024


@dataclass
class MLLMResponse:
    text: str  # raw model output ("" on transport failure)
    model_id: str
    backend: str
    error: str | None = None  # transport-level failure after retries (timeout, 5xx, ...)
    cached: bool = False


@runtime_checkable
class MLLMClient(Protocol):
    backend: str
    model_id: str

    def complete(self, requests: list[MLLMRequest]) -> list[MLLMResponse]:
        """Answer a batch of requests, in order. Concurrency/batching is the backend's business."""
        ...
