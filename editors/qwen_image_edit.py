"""``qwen-image-edit``: diffusers' QwenImageEditPipeline (Qwen-Image-Edit) and
QwenImageEditPlusPipeline (-2509, -2511; the paper used -2511).

The pipelines resize every input to about 1024x1024 pixels before the VAE whatever size is
asked for; ``process_area`` sets that working area instead (a Visual Genome image is ~500x375,
so a smaller area costs far less for the same visible quality, and tiny test models need it).
The output is brought back to the source size. The Plus pipeline edits one prompt per call;
the Edit pipeline takes batches of images that share a working size.
"""

from __future__ import annotations

import json
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Literal, Sequence

import numpy as np
from PIL import Image
from pydantic import Field

from editors.base import EditFailure, Editor, EditRequest, EditResult, missing_extra
from editors.diffusion import back_to_source, generators, load_lora, load_pipeline, to_uint8
from editors.weights import resolve_model
from storage.config_base import Section

NATIVE_AREA = 1024 * 1024
_PATCH_LOCK = threading.Lock()


class QwenImageEditParams(Section):
    model: str = Field("Qwen/Qwen-Image-Edit-2511", description="hub id or local folder saved with save_pretrained")
    pipeline: Literal["auto", "edit", "plus"] = Field("auto", description="auto: from model_index.json, else from the id (-2509/-2511 -> plus)")
    dtype: Literal["auto", "bfloat16", "float16", "float32"] = "auto"
    device: str = "auto"
    steps: int = Field(40, ge=1)
    true_cfg_scale: float = Field(4.0, ge=0)
    negative_prompt: str = " "
    guidance_scale: float | None = None
    lora: str | None = Field(None, description="LoRA weights (hub id or local path), e.g. a few-step distillation")
    lora_weight_name: str | None = None
    lora_scale: float = 1.0
    cpu_offload: Literal["none", "model", "sequential"] = "none"
    process_area: int | None = Field(None, ge=64 * 64, description="pixel area the pipeline works at; None: its native ~1024x1024")
    batch_size: int = Field(1, ge=1)
    max_sequence_length: int = Field(512, ge=8, le=1024)
    prompt_template: str = Field("{instruction}", description="how the instruction becomes the prompt; fields: instruction, target_name")


def pipeline_kind(ref: str, requested: str) -> str:
    if requested != "auto":
        return requested
    index = Path(ref) / "model_index.json"
    if index.is_file():
        name = json.loads(index.read_text(encoding="utf-8")).get("_class_name", "")
        return "plus" if "Plus" in name else "edit"
    return "plus" if any(tag in ref for tag in ("2509", "2511")) else "edit"


def working_size(width: int, height: int, area: int) -> tuple[int, int]:
    """The (width, height) the pipelines compute for an image at ``area`` pixels (multiples of 32)."""
    ratio = width / height
    w = (area * ratio) ** 0.5
    return max(32, int(round(w / 32) * 32)), max(32, int(round(w / ratio / 32) * 32))


@contextmanager
def working_area(area: int | None) -> Iterator[None]:
    """Make the pipelines work at ``area`` pixels instead of their hard-coded 1024x1024.

    diffusers computes the size with module-level helpers; they are swapped for the duration of
    one call under a process-wide lock (model calls are serialised anyway)."""
    if area is None or area == NATIVE_AREA:
        yield
        return
    from diffusers.pipelines.qwenimage import pipeline_qwenimage_edit as edit_mod
    from diffusers.pipelines.qwenimage import pipeline_qwenimage_edit_plus as plus_mod

    with _PATCH_LOCK:
        saved = (edit_mod.calculate_dimensions, plus_mod.calculate_dimensions, plus_mod.CONDITION_IMAGE_SIZE, plus_mod.VAE_IMAGE_SIZE)
        orig_edit, orig_plus = saved[0], saved[1]
        edit_mod.calculate_dimensions = lambda target, ratio: orig_edit(area if target == NATIVE_AREA else target, ratio)
        plus_mod.calculate_dimensions = lambda target, ratio: orig_plus(area if target == NATIVE_AREA else target, ratio)
        plus_mod.CONDITION_IMAGE_SIZE = min(plus_mod.CONDITION_IMAGE_SIZE, area)
        plus_mod.VAE_IMAGE_SIZE = area
        try:
            yield
        finally:
            edit_mod.calculate_dimensions, plus_mod.calculate_dimensions, plus_mod.CONDITION_IMAGE_SIZE, plus_mod.VAE_IMAGE_SIZE = saved


class QwenImageEditEditor(Editor):
    name = "qwen-image-edit"
    Params = QwenImageEditParams
    uses_model = True

    def load(self) -> None:
        try:
            import torch  # noqa: F401
            from diffusers import QwenImageEditPipeline, QwenImageEditPlusPipeline
        except ImportError as exc:
            raise missing_extra(self.name, exc) from exc
        p = self.params
        ref = resolve_model(p.model, "Qwen-Image-Edit weights", self.name)
        self.kind = pipeline_kind(ref, p.pipeline)
        cls = QwenImageEditPlusPipeline if self.kind == "plus" else QwenImageEditPipeline
        pipe, self.device = load_pipeline(cls, ref, self.name, "Qwen-Image-Edit weights", p.dtype, p.device, p.cpu_offload)
        if p.lora:
            load_lora(pipe, p.lora, self.name, p.lora_weight_name, p.lora_scale)
        self.pipe = pipe

    @property
    def max_batch(self) -> int:
        return 1 if getattr(self, "kind", self.params.pipeline) == "plus" else self.params.batch_size

    def _prompt(self, req: EditRequest) -> str:
        return self.params.prompt_template.format(instruction=req.instruction, target_name=req.target_name or "")

    def _call(self, reqs: Sequence[EditRequest]) -> list[np.ndarray]:
        p = self.params
        images = [Image.fromarray(r.image, "RGB") for r in reqs]
        prompts = [self._prompt(r) for r in reqs]
        kwargs: dict[str, Any] = {
            "num_inference_steps": p.steps,
            "true_cfg_scale": p.true_cfg_scale,
            "generator": generators([r.seed for r in reqs]),
            "output_type": "np",
            "max_sequence_length": p.max_sequence_length,
        }
        if p.true_cfg_scale > 1:
            kwargs["negative_prompt"] = [p.negative_prompt] * len(reqs)
        if p.guidance_scale is not None:
            kwargs["guidance_scale"] = p.guidance_scale
        with working_area(p.process_area):
            if self.kind == "plus":  # one prompt per call; a list of images means several references
                kwargs["generator"] = kwargs["generator"][0]
                if "negative_prompt" in kwargs:
                    kwargs["negative_prompt"] = kwargs["negative_prompt"][0]
                out = self.pipe(image=images, prompt=prompts[0], **kwargs).images
            else:
                out = self.pipe(image=images, prompt=prompts, **kwargs).images
        return [to_uint8(o) for o in out]

    def edit_batch(self, requests: Sequence[EditRequest]) -> list[EditResult | EditFailure]:
        self.ensure_loaded()
        area = self.params.process_area or NATIVE_AREA
        groups: dict[tuple[int, int], list[int]] = {}
        for i, r in enumerate(requests):  # one call per working size: the pipeline resizes a batch to its first image
            h, w = r.image.shape[:2]
            groups.setdefault(working_size(w, h, area), []).append(i)
        results: list[EditResult | EditFailure | None] = [None] * len(requests)
        step = self.max_batch
        for size, idx in groups.items():
            for k in range(0, len(idx), step):
                part = idx[k : k + step]
                for i, img in zip(part, self._call([requests[i] for i in part])):
                    h, w = requests[i].image.shape[:2]
                    out, raw = back_to_source(img, w, h)
                    results[i] = EditResult(out, None, {"raw_size": raw, "working_size": list(size), "pipeline": self.kind})
        return results  # type: ignore[return-value]
