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
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Literal

import numpy as np
from PIL import Image
from pydantic import Field

from editors.architectures import ComponentSpec, ModelConfigs, count_params, sized_component
from editors.base import EditorError, EditRequest
from editors.diffusion import NATIVE_AREA, DiffusionEditor, patched_area
from editors.diffusion import working_size as _working_size
from editors.memory import Profile, element_bytes, inner_dim, plan_profile
from storage.config_base import Section

if TYPE_CHECKING:
    import torch
    from diffusers import DiffusionPipeline

_MODULES = (
    "diffusers.pipelines.qwenimage.pipeline_qwenimage_edit",
    "diffusers.pipelines.qwenimage.pipeline_qwenimage_edit_plus",
)


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
    return _working_size(width, height, area, 32, 32)


@contextmanager
def working_area(area: int | None) -> Iterator[None]:
    """Make both pipelines work at ``area`` pixels instead of their hard-coded 1024x1024 (the Plus
    pipeline's VAE size set to ``area`` too), for one call."""
    with patched_area(_MODULES, area, vae_at_area=True):
        yield


@dataclass
class Shapes:
    """What one edit works on at the configured area: the components' configs and token counts."""

    configs: ModelConfigs
    by: dict[str, ComponentSpec]
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
    sh = shapes(params, key)
    t = sh.by["transformer"].config
    n_t, _ = count_params(sh.by["transformer"])
    n_te, _ = count_params(sh.by["text_encoder"])
    text = sh.vision_tokens + PROMPT_TOKENS
    seq = sh.tokens - params.max_sequence_length + text
    inner = inner_dim(t)
    per_pass = 2 * n_t * seq + 4 * seq**2 * inner * t.get("num_layers", 60)
    passes = 2 if params.true_cfg_scale > 1 else 1
    return float(params.steps * passes * per_pass + passes * 2 * n_te * text)


def configured_layout(params: QwenImageEditParams) -> str:
    """``memory_plan``, with the legacy ``cpu_offload: model`` meaning model_offload under auto."""
    return "model_offload" if params.cpu_offload == "model" and params.memory_plan == "auto" else params.memory_plan


def memory_profile(params: QwenImageEditParams, key: str, target: str) -> Profile:
    """Components (sized on the meta device) and the activation peak of one batch at the
    configured working area, for the preflight and for ``memory_plan: auto``."""
    from editors.memory import text_encoder_activation, transformer_activation, vae_activation

    sh = shapes(params, key)
    configs, by, area, batch = sh.configs, sh.by, sh.area, sh.batch
    b = element_bytes(params.dtype, target)
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
        "transformer": transformer_activation(tokens, inner_dim(t), batch, b),
        "vae": vae_activation(area, v.get("base_dim", 96), batch, b, cpu=target == "cpu"),
    }
    roles = {"text_encoder": "text_encoder", "transformer": "denoiser", "vae": "vae"}
    comps = [sized_component(key, by[name], role, b, acts[name]) for name, role in roles.items()]
    return plan_profile(
        key,
        comps,
        f"{params.model} ({configs.source})",
        ("single", "split", "two_phase", "model_offload"),
        configured_layout(params),
        params.quantization,
    )


class QwenImageEditEditor(DiffusionEditor[QwenImageEditParams]):
    """Qwen-Image-Edit with every memory plan: split and two-phase place the text encoder apart
    and hand its prompt embeddings to the transformer (:meth:`attach`, :meth:`encode`)."""

    name = "qwen-image-edit"
    Params = QwenImageEditParams
    weights = "Qwen-Image-Edit weights"
    profile_of = staticmethod(memory_profile)
    flops_of = staticmethod(edit_flops)

    def _configured_plan(self) -> tuple[str, str]:
        return configured_layout(self.params), self.params.quantization

    def _plan_setting(self) -> str:
        return "cpu_offload='model'" if self.params.cpu_offload == "model" else super()._plan_setting()

    def _plan_gpus(self, layout: str) -> int:
        # A placed device (one leased GPU per shard) means one GPU, unless split was asked for
        # (e.g. Ray with two GPUs per edit task: both visible, the shard placed on cuda:0).
        import torch

        return torch.cuda.device_count() if self.params.device == "auto" or layout == "split" else 1

    def pipeline_class(self, diffusers: ModuleType, ref: str) -> type[DiffusionPipeline]:
        self.kind = pipeline_kind(ref, self.params.pipeline)
        return diffusers.QwenImageEditPlusPipeline if self.kind == "plus" else diffusers.QwenImageEditPipeline

    def _offload(self) -> str:
        if self.layout == "model_offload":
            return "model"
        return "sequential" if self.params.cpu_offload == "sequential" else "none"

    def attach(self, pipe: DiffusionPipeline, device: str) -> None:
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
        self._encoded: dict[tuple[str, ...], tuple[torch.Tensor, ...]] = {}
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

    @property
    def encodes_first(self) -> bool:
        """Two-phase plan: the stage calls :meth:`encode` on a whole shard before any edit."""
        return getattr(self, "layout", None) == "two_phase"

    @property
    def max_batch(self) -> int:
        return 1 if getattr(self, "kind", self.params.pipeline) == "plus" else self.params.batch_size

    def _size(self, req: EditRequest) -> tuple[int, int]:
        h, w = req.image.shape[:2]
        return working_size(w, h, self.params.process_area or NATIVE_AREA)

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

    def _embed(self, reqs: Sequence[EditRequest]) -> tuple[torch.Tensor, ...]:
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

    @property
    def pipeline_label(self) -> str:
        return self.kind

    def _call(
        self, reqs: Sequence[EditRequest], size: tuple[int, int]
    ) -> tuple[list[np.ndarray], list[np.ndarray | None]]:
        p = self.params
        images = [Image.fromarray(r.image, "RGB") for r in reqs]
        texts = [self._prompt(r) for r in reqs]
        prompts: str | list[str] | None = texts
        kwargs = self._step_kwargs(reqs, p.steps)
        kwargs.update(true_cfg_scale=p.true_cfg_scale, max_sequence_length=p.max_sequence_length)
        if p.true_cfg_scale > 1:
            kwargs["negative_prompt"] = [p.negative_prompt] * len(reqs)
        if p.guidance_scale is not None:
            kwargs["guidance_scale"] = p.guidance_scale
        if self.kind == "plus":  # one prompt per call; a list of images means several references
            self._one_prompt(kwargs)
            prompts = texts[0]
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
            prompts = None
        return self._run(images, prompts, kwargs, _MODULES, vae_at_area=True), [None] * len(reqs)
