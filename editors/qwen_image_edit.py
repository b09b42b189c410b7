"""``qwen-image-edit``: diffusers' QwenImageEditPipeline (Qwen-Image-Edit) and
QwenImageEditPlusPipeline (-2509, -2511; the paper used -2511).

The pipelines resize every input to about 1024x1024 pixels before the VAE whatever size is
asked for; ``process_area`` sets that working area instead (a Visual Genome image is ~500x375,
so a smaller area costs far less for the same visible quality, and tiny test models need it).
The output is brought back to the source size. The Plus pipeline edits one prompt per call;
the Edit pipeline takes batches of images that share a working size.

Memory plans (``memory_plan``, see ``editors/memory.py``): ``single`` runs the pipeline as
published; ``split`` keeps the text encoder on another GPU and hands the prompt embeddings to
the transformer's GPU; ``two_phase`` encodes every prompt of a shard first (:meth:`encode`),
moves the encoder off the GPU and then denoises, once per shard; ``model_offload`` is diffusers'
model CPU offload. ``quantization`` loads the transformer in 8 or 4 bits (bitsandbytes, CUDA
only). ``auto`` picks the fastest plan that fits the visible GPUs when the model loads; the plan
used is recorded on every row (:meth:`resolved_params`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from PIL import Image
from pydantic import Field

from editors.base import EditFailure, Editor, EditorError, EditRequest, EditResult, missing_extra
from editors.diffusion import back_to_source, generators, load_lora, load_pipeline, stop_when_over_budget, to_uint8
from editors.weights import pick_device, resolve_model
from storage.config_base import Section

NATIVE_AREA = 1024 * 1024
_PATCH_LOCK = threading.Lock()


class QwenImageEditParams(Section):
    model: str = Field("Qwen/Qwen-Image-Edit-2511", description="hub id or local folder saved with save_pretrained")
    pipeline: Literal["auto", "edit", "plus"] = Field(
        "auto", description="auto: from model_index.json, else from the id (-2509/-2511 -> plus)"
    )
    dtype: Literal["auto", "bfloat16", "float16", "float32"] = "auto"
    device: str = "auto"
    steps: int = Field(40, ge=1)
    true_cfg_scale: float = Field(4.0, ge=0)
    negative_prompt: str = " "
    guidance_scale: float | None = None
    lora: str | None = Field(None, description="LoRA weights (hub id or local path), e.g. a few-step distillation")
    lora_weight_name: str | None = None
    lora_scale: float = 1.0
    cpu_offload: Literal["none", "model", "sequential"] = Field(
        "none", description="legacy switch: model = memory_plan model_offload"
    )
    memory_plan: Literal["auto", "single", "split", "two_phase", "model_offload"] = Field(
        "auto",
        description="where the components live (editors/memory.py); auto: the fastest that fits the visible GPUs",
    )
    quantization: Literal["auto", "none", "int8", "int4"] = Field(
        "auto", description="transformer weights in 8/4 bits (bitsandbytes, CUDA); auto: only when nothing else fits"
    )
    text_encoder_device: str = Field(
        "auto", description="split plan: the text encoder's device; auto: the next visible GPU"
    )
    process_area: int | None = Field(
        None, ge=64 * 64, description="pixel area the pipeline works at; None: its native ~1024x1024"
    )
    batch_size: int = Field(1, ge=1)
    max_sequence_length: int = Field(512, ge=8, le=1024)
    prompt_template: str = Field(
        "{instruction}", description="how the instruction becomes the prompt; fields: instruction, target_name"
    )


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
        saved = (
            edit_mod.calculate_dimensions,
            plus_mod.calculate_dimensions,
            plus_mod.CONDITION_IMAGE_SIZE,
            plus_mod.VAE_IMAGE_SIZE,
        )
        orig_edit, orig_plus = saved[0], saved[1]
        edit_mod.calculate_dimensions = lambda target, ratio: orig_edit(
            area if target == NATIVE_AREA else target, ratio
        )
        plus_mod.calculate_dimensions = lambda target, ratio: orig_plus(
            area if target == NATIVE_AREA else target, ratio
        )
        plus_mod.CONDITION_IMAGE_SIZE = min(plus_mod.CONDITION_IMAGE_SIZE, area)
        plus_mod.VAE_IMAGE_SIZE = area
        try:
            yield
        finally:
            (
                edit_mod.calculate_dimensions,
                plus_mod.calculate_dimensions,
                plus_mod.CONDITION_IMAGE_SIZE,
                plus_mod.VAE_IMAGE_SIZE,
            ) = saved


def quantization_config(quant: str) -> Any:
    """diffusers' pipeline quantization config putting the transformer in 8 or 4 bits (None: none)."""
    if quant in ("none", "auto"):
        return None
    from diffusers import PipelineQuantizationConfig

    if quant == "int8":
        return PipelineQuantizationConfig(
            quant_backend="bitsandbytes_8bit",
            quant_kwargs={"load_in_8bit": True},
            components_to_quantize=["transformer"],
        )
    return PipelineQuantizationConfig(
        quant_backend="bitsandbytes_4bit",
        quant_kwargs={"load_in_4bit": True, "bnb_4bit_quant_type": "nf4", "bnb_4bit_compute_dtype": "bfloat16"},
        components_to_quantize=["transformer"],
    )


@dataclass
class Shapes:
    """What one edit works on at the configured area: the components' configs and token counts."""

    configs: Any
    by: dict[str, Any]
    kind: str
    batch: int
    area: int
    tokens: float  # transformer sequence: 2 latent images + the text
    cond_area: float  # the text encoder's view of the image
    vision_tokens: float


def shapes(params: QwenImageEditParams, key: str) -> Shapes:
    """Component configs (local folder, hub cache or known architecture) and the sequence lengths
    one call works with; shared by the memory profile and the FLOPs estimate."""
    from editors.architectures import pipeline_configs

    configs = pipeline_configs(params.model, "Qwen-Image-Edit weights", f"editor {key!r}")
    area = params.process_area or NATIVE_AREA
    kind = pipeline_kind(params.model, params.pipeline)
    by = {c.name: c for c in configs.components}
    missing = {"text_encoder", "transformer", "vae"} - set(by)
    if missing:
        raise EditorError(
            f"editor {key!r}: {params.model!r} ({configs.source}) has no {sorted(missing)} component config"
        )
    t, v, te = by["transformer"].config, by["vae"].config, by["text_encoder"].config
    vision = te.get("vision_config") or {}
    scale = 2 ** len(v.get("temperal_downsample", [False, True, True])) * t.get("patch_size", 2)
    cond_area = area if kind == "edit" else min(384 * 384, area)
    vision_tokens = cond_area / (vision.get("patch_size", 14) * vision.get("spatial_merge_size", 2)) ** 2
    return Shapes(
        configs,
        by,
        kind,
        1 if kind == "plus" else params.batch_size,
        area,
        2 * area / scale**2 + params.max_sequence_length,
        cond_area,
        vision_tokens,
    )


PROMPT_TOKENS = 64  # an instruction and the chat template, beside the image tokens the encoder returns


def edit_flops(params: QwenImageEditParams, key: str) -> float:
    """Multiply-adds x 2 of one edit (one image): every denoising step runs the transformer once,
    twice with true CFG (2 N S for its linear layers + 4 S^2 D L for attention, S = the two latent
    images + the prompt embeddings), plus the text encoder once per prompt. The VAE (a few TFLOP
    at 1024 px, under 1% here) is left out."""
    from editors.architectures import count_params

    sh = shapes(params, key)
    t = sh.by["transformer"].config
    n_t, _ = count_params(sh.by["transformer"])
    n_te, _ = count_params(sh.by["text_encoder"])
    text = sh.vision_tokens + PROMPT_TOKENS
    seq = sh.tokens - params.max_sequence_length + text
    inner = t.get("num_attention_heads", 24) * t.get("attention_head_dim", 128)
    per_pass = 2 * n_t * seq + 4 * seq**2 * inner * t.get("num_layers", 60)
    passes = 2 if params.true_cfg_scale > 1 else 1
    return float(params.steps * passes * per_pass + passes * 2 * n_te * text)


def memory_profile(params: QwenImageEditParams, key: str, target: str) -> Any:
    """Components (sized on the meta device) and the activation peak of one batch at the
    configured working area, for the preflight and for ``memory_plan: auto``."""
    from editors.architectures import count_params
    from editors.memory import (
        DTYPE_BYTES,
        Component,
        Profile,
        text_encoder_activation,
        transformer_activation,
        vae_activation,
    )

    sh = shapes(params, key)
    configs, by, area, batch = sh.configs, sh.by, sh.area, sh.batch
    dtype = params.dtype if params.dtype != "auto" else ("bfloat16" if target == "cuda" else "float32")
    b = DTYPE_BYTES[dtype]
    t, v, te = by["transformer"].config, by["vae"].config, by["text_encoder"].config
    text, vision = te.get("text_config") or te, te.get("vision_config") or {}
    tokens, cond_area, vision_tokens = sh.tokens, sh.cond_area, sh.vision_tokens
    patch = vision.get("patch_size", 14)
    acts = {
        "text_encoder": text_encoder_activation(
            params.max_sequence_length + vision_tokens,
            text.get("hidden_size", 3584),
            text.get("num_hidden_layers", 28),
            text.get("vocab_size", te.get("vocab_size", 152064)),
            cond_area / patch**2,
            vision.get("hidden_size", 1280),
            batch,
            b,
        ),
        "transformer": transformer_activation(
            tokens, t.get("num_attention_heads", 24) * t.get("attention_head_dim", 128), batch, b
        ),
        "vae": vae_activation(area, v.get("base_dim", 96), batch, b, cpu=target == "cpu"),
    }
    roles = {"text_encoder": "text_encoder", "transformer": "denoiser", "vae": "vae"}
    comps = []
    for name in ("text_encoder", "transformer", "vae"):
        n, lin = count_params(by[name])
        comps.append(Component(f"{key}/{name}", roles[name], n, lin, b, acts[name], quantizable=name == "transformer"))
    layouts = ("single", "split", "two_phase", "model_offload")
    quants = ("none", "int8", "int4")
    fixed_layout = None if params.memory_plan == "auto" else params.memory_plan
    if params.cpu_offload == "model" and fixed_layout is None:
        fixed_layout = "model_offload"
    return Profile(
        key,
        comps,
        f"{params.model} ({configs.source})",
        layouts if fixed_layout is None else (fixed_layout,),
        quants if params.quantization == "auto" else (params.quantization,),
        fixed_layout,
        None if params.quantization == "auto" else params.quantization,
    )


class QwenImageEditEditor(Editor):
    name = "qwen-image-edit"
    Params = QwenImageEditParams
    uses_model = True

    @classmethod
    def memory_profile(cls, params: Any, key: str, target: str) -> Any:
        return memory_profile(params, key, target)

    @classmethod
    def edit_flops(cls, params: Any, key: str) -> float | None:
        return edit_flops(params, key)

    @staticmethod
    def plan_params(layout: str, quant: str) -> dict[str, Any]:
        return {"memory_plan": layout, "quantization": quant}

    def _resolve_plan(self, dev: str) -> tuple[str, str]:
        """(layout, quantization) for this load: as configured, or the fastest that fits the GPUs."""
        p = self.params
        layout = "model_offload" if p.cpu_offload == "model" and p.memory_plan == "auto" else p.memory_plan
        quant = p.quantization
        if not dev.startswith("cuda"):
            if quant in ("int8", "int4"):
                raise EditorError(
                    f"editor {self.name!r}: quantization={quant!r} needs a CUDA device (bitsandbytes); device is {dev!r}"
                )
            return ("single" if layout == "auto" else layout), "none"
        if layout != "auto" and quant != "auto":
            return layout, quant
        import torch

        from editors.memory import choose

        index = torch.device(dev).index or 0
        # A placed device (one leased GPU per shard) means one GPU, unless split was asked for
        # (e.g. Ray with two GPUs per edit task: both visible, the shard placed on cuda:0).
        gpus = torch.cuda.device_count() if p.device == "auto" or layout == "split" else 1
        memory = torch.cuda.get_device_properties(index).total_memory / 1e9
        profile = memory_profile(p, self.name, "cuda")
        best, tried = choose(profile.components, gpus, memory, profile.layouts, profile.quants)
        if best is None:
            smallest = min(tried, key=lambda f: f.peak_gb)
            raise EditorError(
                f"editor {self.name!r}: no memory plan fits {gpus} GPU(s) of {memory:.1f} GB; the smallest, {smallest.name}, "
                f"needs {smallest.peak_gb} GB per GPU. Run `reactbench preflight` for the table; lower process_area or batch_size."
            )
        return best.layout, best.quant

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
        dev = pick_device(p.device)
        self.layout, self.quant = self._resolve_plan(dev)
        offload = (
            "model" if self.layout == "model_offload" else ("sequential" if p.cpu_offload == "sequential" else "none")
        )
        extra: dict[str, Any] = {}
        if self.quant != "none":
            extra["quantization_config"] = quantization_config(self.quant)
        pipe, device = load_pipeline(
            cls,
            ref,
            self.name,
            "Qwen-Image-Edit weights",
            p.dtype,
            dev,
            offload,
            place=self.layout not in ("split", "two_phase"),
            **extra,
        )
        self.attach(pipe, device)
        if p.lora:
            load_lora(pipe, p.lora, self.name, p.lora_weight_name, p.lora_scale)

    def attach(self, pipe: Any, device: str) -> None:
        """Place a loaded pipeline's components for ``self.layout`` on ``device`` and make it this
        editor's model. ``load`` calls it; benchmarks/gpu_validate.py calls it (after setting
        ``kind``, ``layout`` and ``quant``) with a pipeline built from configs with random weights."""
        self.device = device
        self.encoder_device = self.device
        if self.layout == "split":
            self.encoder_device = self._text_encoder_device(self.device)
            pipe.text_encoder.to(self.encoder_device)
            pipe.transformer.to(self.device)
            pipe.vae.to(self.device)
        elif self.layout == "two_phase":
            pipe.text_encoder.to("cpu")  # phase 1 brings it in
            pipe.vae.to(self.device)
            pipe.transformer.to(self.device)
        self._phase = "denoise"
        self.phase_swaps = 0  # two-phase plan: encoder <-> transformer moves (two per shard)
        self._encoded: dict[tuple[str, ...], tuple[Any, ...]] = {}
        self.pipe = pipe
        self._loaded = True

    def _text_encoder_device(self, dev: str) -> str:
        if self.params.text_encoder_device != "auto":
            return self.params.text_encoder_device
        if not dev.startswith("cuda"):
            return dev
        import torch

        index = torch.device(dev).index or 0
        return f"cuda:{(index + 1) % max(1, torch.cuda.device_count())}"

    def resolved_params(self) -> dict[str, Any]:
        """The plan this load uses (recorded on every row, so runs on other hardware are told apart)."""
        self.ensure_loaded()
        return self.plan_params(self.layout, self.quant)

    @property
    def encodes_first(self) -> bool:
        """Two-phase plan: the stage calls :meth:`encode` on a whole shard before any edit."""
        return getattr(self, "layout", None) == "two_phase"

    @property
    def max_batch(self) -> int:
        return 1 if getattr(self, "kind", self.params.pipeline) == "plus" else self.params.batch_size

    def _prompt(self, req: EditRequest) -> str:
        return self.params.prompt_template.format(instruction=req.instruction, target_name=req.target_name or "")

    def _groups(self, requests: Sequence[EditRequest]) -> list[tuple[tuple[int, int], list[int]]]:
        """Model calls: requests of one working size (the pipeline resizes a batch to its first
        image), in chunks of ``max_batch``."""
        area = self.params.process_area or NATIVE_AREA
        groups: dict[tuple[int, int], list[int]] = {}
        for i, r in enumerate(requests):
            h, w = r.image.shape[:2]
            groups.setdefault(working_size(w, h, area), []).append(i)
        step = self.max_batch
        return [(size, idx[k : k + step]) for size, idx in groups.items() for k in range(0, len(idx), step)]

    def _set_phase(self, phase: str) -> None:
        """Two-phase plan: only the encoder (phase ``encode``) or the transformer is on the GPU."""
        if self.layout != "two_phase" or self._phase == phase:
            return
        from storage.oom import free_memory

        if phase == "encode":
            self.pipe.transformer.to("cpu")
            free_memory()
            self.pipe.text_encoder.to(self.device)
        else:
            self.pipe.text_encoder.to("cpu")
            free_memory()
            self.pipe.transformer.to(self.device)
        self._phase = phase
        self.phase_swaps += 1

    def _embed(self, reqs: Sequence[EditRequest]) -> tuple[Any, ...]:
        """Prompt (and negative prompt) embeddings computed exactly as the pipeline would, on the
        text encoder's device; returned on the CPU."""
        from diffusers.pipelines.qwenimage import pipeline_qwenimage_edit as edit_mod
        from diffusers.pipelines.qwenimage import pipeline_qwenimage_edit_plus as plus_mod

        p = self.params
        images = [Image.fromarray(r.image, "RGB") for r in reqs]
        prompts = [self._prompt(r) for r in reqs]
        with working_area(p.process_area):
            if self.kind == "plus":
                conds = []
                for img in images:
                    w, h = img.size
                    cw, ch = plus_mod.calculate_dimensions(plus_mod.CONDITION_IMAGE_SIZE, w / h)[
                        :2
                    ]  # 2 values since diffusers 0.36
                    conds.append(self.pipe.image_processor.resize(img, ch, cw))
                prompts, prompt_image = prompts[:1], conds
            else:
                w, h = images[0].size
                cw, ch = edit_mod.calculate_dimensions(NATIVE_AREA, w / h)[:2]
                prompt_image = self.pipe.image_processor.resize(images, ch, cw)
            out = list(self.pipe._get_qwen_prompt_embeds(prompts, prompt_image, self.encoder_device))
            if p.true_cfg_scale > 1:
                out += list(
                    self.pipe._get_qwen_prompt_embeds(
                        [p.negative_prompt] * len(prompts), prompt_image, self.encoder_device
                    )
                )
        return tuple(t.to("cpu") for t in out)

    def encode(self, requests: Sequence[EditRequest]) -> None:
        """Two-phase plan, phase 1: embed every prompt of ``requests`` (grouped as :meth:`edit_batch`
        will group them) with only the text encoder on the GPU; kept on the CPU until used."""
        self.ensure_loaded()
        self._set_phase("encode")
        for _, part in self._groups(requests):
            reqs = [requests[i] for i in part]
            self._encoded[tuple(r.id for r in reqs)] = self._embed(reqs)

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
            "callback_on_step_end": stop_when_over_budget,  # a call over its time budget stops at the next step
        }
        if p.true_cfg_scale > 1:
            kwargs["negative_prompt"] = [p.negative_prompt] * len(reqs)
        if p.guidance_scale is not None:
            kwargs["guidance_scale"] = p.guidance_scale
        if self.kind == "plus":  # one prompt per call; a list of images means several references
            kwargs["generator"] = kwargs["generator"][0]
            prompts = prompts[0]  # type: ignore[assignment]
            if "negative_prompt" in kwargs:
                kwargs["negative_prompt"] = kwargs["negative_prompt"][0]
        if self.layout in ("split", "two_phase"):  # embeddings from the encoder's device / phase 1
            embeds = self._encoded.pop(tuple(r.id for r in reqs), None)
            if embeds is None:
                self._set_phase("encode")
                embeds = self._embed(reqs)
            self._set_phase("denoise")
            on = [t.to(self.device) for t in embeds]
            kwargs.update(prompt_embeds=on[0], prompt_embeds_mask=on[1])
            if len(on) == 4:
                kwargs.update(negative_prompt_embeds=on[2], negative_prompt_embeds_mask=on[3])
            kwargs.pop("negative_prompt", None)
            prompts = None  # type: ignore[assignment]
        with working_area(p.process_area):
            out = self.pipe(image=images, prompt=prompts, **kwargs).images
        return [to_uint8(o) for o in out]

    def edit_batch(self, requests: Sequence[EditRequest]) -> list[EditResult | EditFailure]:
        self.ensure_loaded()
        results: list[EditResult | EditFailure | None] = [None] * len(requests)
        for size, part in self._groups(requests):
            for i, img in zip(part, self._call([requests[i] for i in part])):
                h, w = requests[i].image.shape[:2]
                out, raw = back_to_source(img, w, h)
                results[i] = EditResult(
                    out, None, {"raw_size": raw, "working_size": list(size), "pipeline": self.kind}
                )
        return results  # type: ignore[return-value]
