"""Running a prompt over many inputs: render, ask, parse, re-ask on bad answers, report outcomes.

All first attempts go to the client in one batch (so an OpenAI-compatible server sees full
concurrency); answers that fail validation are re-asked together, with the validation error
appended to the conversation, up to ``parse_retries`` times.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypedDict

from prompts.clients.base import ChatMessage, ImagePart, MLLMClient, MLLMRequest, MLLMResponse, TextPart
from prompts.parsing import ParseError, parse_answer
from prompts.spec import PromptSpec, render

Status = Literal["ok", "not_applicable", "unparseable", "error"]

REASK = (
    "Your previous answer could not be used:\n{error}\n"
    "Answer again. Follow the required output format exactly, fill every field, write in English, "
    "and add nothing else."
)


class Provenance(TypedDict):
    """The provenance columns every output row carries (``storage.schemas.PROVENANCE_FIELDS``)."""

    prompt_name: str
    prompt_version: str
    backend: str
    model_id: str
    raw_response: str


class Sampling(TypedDict):
    temperature: float
    max_tokens: int


@dataclass
class PromptInput:
    context: dict[str, object]
    images: list[bytes] = field(default_factory=list)


@dataclass
class PromptOutcome:
    status: Status
    fields: dict[str, object] | None
    raw: str
    attempts: int
    error: str | None
    prompt_name: str
    prompt_version: str
    backend: str
    model_id: str

    def provenance(self) -> Provenance:
        """The provenance columns of the row this outcome fills."""
        return {
            "prompt_name": self.prompt_name,
            "prompt_version": self.prompt_version,
            "backend": self.backend,
            "model_id": self.model_id,
            "raw_response": self.raw,
        }


def image_mime(data: bytes) -> str:
    """The MIME type from the file signature (PNG, JPEG, WebP, GIF)."""
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return "image/png"
    if data[:3] == b"\xff\xd8\xff":
        return "image/jpeg"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    raise ValueError("unsupported image format (expected PNG, JPEG, WebP or GIF bytes)")


def build_messages(spec: PromptSpec, inp: PromptInput, *, require_images: bool = True) -> list[ChatMessage]:
    """One user turn: the images first (in order), then the rendered prompt text.

    ``require_images=False`` (clients that answer from annotations) also accepts no images.
    """
    if len(inp.images) != spec.n_images and (require_images or inp.images):
        raise ValueError(f"prompt {spec.name!r} takes {spec.n_images} image(s), got {len(inp.images)}")
    parts: list[ImagePart | TextPart] = [{"type": "image", "data": img, "mime": image_mime(img)} for img in inp.images]
    parts.append({"type": "text", "text": render(spec, inp.context)})
    return [{"role": "user", "content": parts}]


def _request(spec: PromptSpec, messages: list[ChatMessage], context: dict[str, object], cfg: Sampling) -> MLLMRequest:
    return MLLMRequest(spec.name, spec.version, messages, context, **cfg)


def run_prompt(
    client: MLLMClient,
    spec: PromptSpec,
    inputs: list[PromptInput],
    *,
    parse_retries: int = 2,
    progress: bool = False,
    temperature: float = 0.0,
    max_tokens: int = 1024,
) -> list[PromptOutcome]:
    """Ask ``spec`` for every input; outcomes come back in input order, one per input."""
    sampling: Sampling = {"temperature": temperature, "max_tokens": max_tokens}
    needs_images = bool(getattr(client, "uses_images", True))
    convs = [build_messages(spec, inp, require_images=needs_images) for inp in inputs]
    outcomes: list[PromptOutcome | None] = [None] * len(inputs)
    last_raw = [""] * len(inputs)
    last_err: list[str | None] = [None] * len(inputs)
    pending = list(range(len(inputs)))
    attempt = 0
    while pending and attempt <= parse_retries:
        attempt += 1
        reqs = [_request(spec, convs[i], inputs[i].context, sampling) for i in pending]
        responses = _complete(client, reqs, progress, f"{spec.name} (attempt {attempt})")
        retry: list[int] = []
        for i, resp in zip(pending, responses):
            last_raw[i] = resp.text
            if resp.error is not None:
                outcomes[i] = _outcome(spec, resp, "error", None, attempt, resp.error, client)
                continue
            try:
                parsed = parse_answer(resp.text, spec.output, inputs[i].context)
            except ParseError as exc:
                last_err[i] = str(exc)
                convs[i] = convs[i] + [
                    {"role": "assistant", "content": resp.text},
                    {"role": "user", "content": REASK.format(error=str(exc))},
                ]
                retry.append(i)
                continue
            outcomes[i] = _outcome(spec, resp, parsed.status, parsed.fields, attempt, None, client)
        pending = retry
    for i in pending:
        outcomes[i] = PromptOutcome(
            "unparseable",
            None,
            last_raw[i],
            attempt,
            last_err[i],
            spec.name,
            spec.version,
            client.backend,
            client.model_id,
        )
    return [o for o in outcomes if o is not None]


def _outcome(
    spec: PromptSpec,
    resp: MLLMResponse,
    status: Status,
    fields: dict[str, object] | None,
    attempts: int,
    error: str | None,
    client: MLLMClient,
) -> PromptOutcome:
    return PromptOutcome(
        status,
        fields,
        resp.text,
        attempts,
        error,
        spec.name,
        spec.version,
        resp.backend or client.backend,
        resp.model_id or client.model_id,
    )


def _complete(client: MLLMClient, reqs: list[MLLMRequest], progress: bool, label: str) -> list[MLLMResponse]:
    """Send the batch; with ``progress`` in slices so a bar can move (slices stay large enough to keep a server busy)."""
    if not progress or len(reqs) <= 256:
        out = client.complete(reqs)
    else:
        from rich.progress import Progress

        out = []
        with Progress(transient=True) as bar:
            task = bar.add_task(label, total=len(reqs))
            for s in range(0, len(reqs), 256):
                out.extend(client.complete(reqs[s : s + 256]))
                bar.advance(task, len(reqs[s : s + 256]))
    if len(out) != len(reqs):
        raise RuntimeError(f"{client.backend} client returned {len(out)} responses for {len(reqs)} requests")
    return out
