"""The ``transformers`` backend: a local image-text-to-text model (Qwen2.5-VL, Qwen3-VL, ...).

Loads ``AutoModelForImageTextToText`` + ``AutoProcessor`` from ``mllm.model`` (a local folder
or a hub id; ``HF_HUB_OFFLINE`` is respected), renders each conversation with the
processor's chat template and generates in batches of ``mllm.batch_size`` with left padding.
torch and transformers are imported only when this backend is built.
"""

from __future__ import annotations

import io
import threading
from typing import TYPE_CHECKING

from prompts.clients.base import ChatMessage, MLLMRequest, MLLMResponse
from prompts.config import MLLMConfig
from storage.oom import free_memory, is_out_of_memory

if TYPE_CHECKING:  # torch and PIL are imported where a model runs
    import torch
    from PIL import Image


def _torch_dtype(name: str) -> torch.dtype | str:
    import torch

    return {"auto": "auto", "float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[name]


def to_processor_messages(messages: list[ChatMessage]) -> tuple[list[dict[str, object]], list[Image.Image]]:
    """Our messages -> chat-template messages with ``{"type": "image"}`` placeholders, plus the PIL images in order."""
    from PIL import Image

    images: list[Image.Image] = []
    out = []
    for m in messages:
        content = m["content"]
        if isinstance(content, str):
            out.append({"role": m["role"], "content": [{"type": "text", "text": content}]})
            continue
        parts = []
        for p in content:
            if p.get("type") == "image":
                images.append(Image.open(io.BytesIO(p["data"])).convert("RGB"))
                parts.append({"type": "image"})
            else:
                parts.append({"type": "text", "text": p["text"]})
        out.append({"role": m["role"], "content": parts})
    return out, images


class TransformersClient:
    backend = "transformers"
    uses_images = True

    def __init__(self, model: str, *, device: str = "cpu", dtype: str = "auto", batch_size: int = 8):
        self.model_id = model
        self.device = device
        self.batch_size = batch_size
        try:
            from transformers import AutoModelForImageTextToText, AutoProcessor
        except ImportError as exc:  # pragma: no cover - installed with the gpu extra
            raise ImportError(
                "mllm.backend 'transformers' needs torch and transformers: pip install 'reactbench-pipeline[gpu]'"
            ) from exc
        try:
            self.processor = AutoProcessor.from_pretrained(model)
            self.model = (
                AutoModelForImageTextToText.from_pretrained(model, dtype=_torch_dtype(dtype)).to(device).eval()
            )
        except OSError as exc:
            raise OSError(
                f"mllm.model: cannot load {model!r} as an image-text-to-text model ({exc}). Give a local checkpoint folder, "
                "or a hub id with network access (unset HF_HUB_OFFLINE), e.g. `huggingface-cli download Qwen/Qwen2.5-VL-7B-Instruct`."
            ) from None
        tok = getattr(self.processor, "tokenizer", None)
        if tok is not None:
            tok.padding_side = "left"  # generation continues from the right end of every row
        self._lock = threading.Lock()  # one generate at a time per loaded model

    @classmethod
    def from_config(cls, cfg: MLLMConfig) -> TransformersClient:
        return cls(cfg.model, device=cfg.device, dtype=cfg.dtype, batch_size=cfg.batch_size)

    def complete(self, requests: list[MLLMRequest]) -> list[MLLMResponse]:
        out: list[MLLMResponse] = []
        for s in range(0, len(requests), self.batch_size):
            out.extend(self._complete_batch(requests[s : s + self.batch_size]))
        return out

    def _complete_batch(self, batch: list[MLLMRequest]) -> list[MLLMResponse]:
        """Out of memory halves the batch and tries again; an item that fails even alone (or any
        other error) becomes an error response for its items, and the run goes on."""
        try:
            return [MLLMResponse(t, self.model_id, self.backend) for t in self._generate(batch)]
        except Exception as exc:
            oom = is_out_of_memory(exc)
            if oom and len(batch) > 1:
                free_memory()
                half = len(batch) // 2
                return self._complete_batch(batch[:half]) + self._complete_batch(batch[half:])
            what = "out of memory even alone: " if oom else ""
            return [
                MLLMResponse("", self.model_id, self.backend, error=f"{what}{exc.__class__.__name__}: {exc}")
                for _ in batch
            ]

    def _generate(self, batch: list[MLLMRequest]) -> list[str]:
        import torch

        convs, images = [], []
        for r in batch:
            msgs, imgs = to_processor_messages(r.messages)
            convs.append(msgs)
            images.extend(imgs)
        texts = [self.processor.apply_chat_template(c, add_generation_prompt=True, tokenize=False) for c in convs]
        enc = self.processor(text=texts, images=images or None, padding=True, return_tensors="pt").to(self.device)
        # one batch shares sampling settings: the first request's (the prompt runner sends uniform batches)
        temperature = batch[0].temperature
        gen: dict[str, int | float | bool] = {
            "max_new_tokens": max(r.max_tokens for r in batch),
            "do_sample": temperature > 0,
        }
        if temperature > 0:
            gen["temperature"] = temperature
        with self._lock, torch.inference_mode():
            ids = self.model.generate(**enc, **gen)
        new = ids[:, enc["input_ids"].shape[1] :]
        return [t.strip() for t in self.processor.batch_decode(new, skip_special_tokens=True)]
