"""``diffusers-edit``: one editor for diffusers' instruction-editing pipelines.

The pipeline class comes from the checkpoint's ``model_index.json`` (or the ``pipeline``
param, or the known hub ids); how each family is called is one row of :data:`FAMILIES`: its
default steps, whether it takes a distilled ``guidance_scale`` or real CFG, ``true_cfg_scale``
with a negative prompt, how its working area is set, whether one call edits a batch or one
prompt (an image list then means reference images), whether it takes a mask. Adding the next
family is adding a row (and, for the preflight, its published configs in
``editors/architectures.py``).

Every input is resized to the working size first (``process_area`` pixels, the family's native
~1024x1024 by default, multiples of the latent patch) and the output is brought back to the
source size. Inpaint families (``*InpaintPipeline``) edit inside a mask: the object's exact
mask when the instruction carries one, else GrabCut in its box, dilated by ``mask_dilation_px``;
they do removals and boxed changes (attribute, replace), not moves or additions.

Memory plans (``editors/memory.py``): ``single`` or ``model_offload``, each with the
transformer in the configured precision, 8 or 4 bits (bitsandbytes; never FP8, which A6000s
lack). ``qwen-image-edit`` keeps its own editor for the split and two-phase plans.
"""

from __future__ import annotations

import importlib
import json
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
from PIL import Image
from pydantic import Field

from editors.base import EDIT_TYPES, EditFailure, Editor, EditorError, EditRequest, EditResult, missing_extra
from editors.diffusion import back_to_source, generators, load_lora, load_pipeline, stop_when_over_budget, to_uint8
from editors.weights import pick_device, resolve_model
from storage.config_base import Section

NATIVE_AREA = 1024 * 1024
_PATCH_LOCK = threading.Lock()


@dataclass(frozen=True)
class Family:
    """How one diffusers pipeline class is called for an edit (one row of :data:`FAMILIES`)."""

    pipeline: str  # the diffusers class
    steps: int  # default denoising steps (the published recommendation)
    guidance_scale: float | None  # passed as guidance_scale (distilled guidance or real CFG); None: not passed
    true_cfg_scale: float | None  # true CFG with the negative prompt; None: the pipeline has none
    negative_prompt: bool  # the call takes negative_prompt
    area: Literal["max_area", "size", "patched"]  # how the working area reaches the pipeline
    one_prompt: bool = False  # one prompt per call (a list of images would be references)
    step_callback: bool = True  # takes callback_on_step_end (the per-item time budget)
    mask: bool = False  # an inpaint variant: edits inside mask_image
    strength: float | None = None  # inpaint: default strength
    min_side: int = 16  # the smallest side the pipeline accepts
    patched: tuple[str, ...] = ()  # modules whose calculate_dimensions hard-codes ~1024x1024
    extra: dict[str, Any] = field(default_factory=dict)  # fixed call arguments
    what: str = "all five kinds (instruction-driven)"  # what it can edit (docs/editors.md)


_QWEN = "diffusers.pipelines.qwenimage."
_INPAINT_KINDS = "remove, attribute, replace (inside the object's mask)"
FAMILIES: dict[str, Family] = {
    "FluxKontextPipeline": Family(
        "FluxKontextPipeline", 28, 3.5, None, False, "max_area", extra={"_auto_resize": False}
    ),
    "FluxKontextInpaintPipeline": Family(
        "FluxKontextInpaintPipeline",
        28,
        3.5,
        None,
        False,
        "max_area",
        mask=True,
        strength=1.0,
        extra={"_auto_resize": False},
        what=_INPAINT_KINDS,
    ),
    "Flux2KleinPipeline": Family("Flux2KleinPipeline", 4, 1.0, None, False, "size", one_prompt=True, min_side=64),
    "Flux2KleinInpaintPipeline": Family(
        "Flux2KleinInpaintPipeline",
        4,
        1.0,
        None,
        False,
        "size",
        one_prompt=True,
        mask=True,
        strength=1.0,
        min_side=64,
        what=_INPAINT_KINDS,
    ),
    "LongCatImageEditPipeline": Family(
        "LongCatImageEditPipeline",
        50,
        4.5,
        None,
        True,
        "patched",
        one_prompt=True,
        step_callback=False,
        patched=("diffusers.pipelines.longcat_image.pipeline_longcat_image_edit",),
    ),
    "QwenImageEditPipeline": Family(
        "QwenImageEditPipeline", 40, None, 4.0, True, "patched", patched=(_QWEN + "pipeline_qwenimage_edit",)
    ),
    "QwenImageEditPlusPipeline": Family(
        "QwenImageEditPlusPipeline",
        40,
        None,
        4.0,
        True,
        "patched",
        one_prompt=True,
        patched=(_QWEN + "pipeline_qwenimage_edit_plus",),
    ),
    "QwenImageEditInpaintPipeline": Family(
        "QwenImageEditInpaintPipeline",
        40,
        None,
        4.0,
        True,
        "patched",
        mask=True,
        strength=1.0,
        patched=(_QWEN + "pipeline_qwenimage_edit_inpaint",),
        what=_INPAINT_KINDS,
    ),
}
# Hub ids whose class is known without their model_index.json (the preflight sizes them offline).
KNOWN_PIPELINES: dict[str, str] = {
    "black-forest-labs/FLUX.1-Kontext-dev": "FluxKontextPipeline",
    "black-forest-labs/FLUX.2-klein-4B": "Flux2KleinPipeline",
    "black-forest-labs/FLUX.2-klein-9B": "Flux2KleinPipeline",
    "meituan-longcat/LongCat-Image-Edit": "LongCatImageEditPipeline",
    "Qwen/Qwen-Image-Edit": "QwenImageEditPipeline",
    "Qwen/Qwen-Image-Edit-2509": "QwenImageEditPlusPipeline",
    "Qwen/Qwen-Image-Edit-2511": "QwenImageEditPlusPipeline",
}


class DiffusersEditParams(Section):
    model: str = Field(
        "black-forest-labs/FLUX.2-klein-4B", description="hub id or local folder saved with save_pretrained"
    )
    pipeline: str = Field(
        "auto",
        description="the diffusers class, e.g. FluxKontextPipeline; auto: from model_index.json or the known hub ids",
    )
    dtype: Literal["auto", "bfloat16", "float16", "float32"] = "auto"
    device: str = "auto"
    steps: int | None = Field(None, ge=1, description="denoising steps; None: the family's default")
    guidance_scale: float | None = Field(
        None, ge=0, description="None: the family's default (distilled guidance or CFG scale)"
    )
    true_cfg_scale: float | None = Field(None, ge=0, description="families with true CFG; None: the family's default")
    negative_prompt: str = " "
    strength: float | None = Field(None, gt=0, le=1, description="inpaint families; None: the family's default")
    mask_dilation_px: int = Field(8, ge=0, description="inpaint families: the object's mask grown by this margin")
    lora: str | None = Field(None, description="LoRA weights (hub id or local path), e.g. a few-step distillation")
    lora_weight_name: str | None = None
    lora_scale: float = 1.0
    memory_plan: Literal["auto", "single", "model_offload"] = Field(
        "auto", description="auto: the fastest that fits the visible GPUs"
    )
    quantization: Literal["auto", "none", "int8", "int4"] = Field(
        "auto", description="transformer weights in 8/4 bits (bitsandbytes, CUDA); auto: only when nothing else fits"
    )
    process_area: int | None = Field(
        None, ge=32 * 32, description="pixel area the pipeline works at; None: its native ~1024x1024"
    )
    batch_size: int = Field(1, ge=1, description="prompts per call, for families that batch")
    max_sequence_length: int = Field(512, ge=8, le=1024)
    prompt_template: str = Field(
        "{instruction}", description="how the instruction becomes the prompt; fields: instruction, target_name"
    )


def pipeline_name(ref: str, requested: str, owner: str) -> str:
    """The diffusers class of ``ref``: as named, else its model_index.json, else the known hub ids."""
    if requested != "auto":
        name = requested
    else:
        name = ""
        index = Path(ref).expanduser() / "model_index.json"
        if index.is_file():
            name = json.loads(index.read_text(encoding="utf-8")).get("_class_name", "")
        else:
            from editors.architectures import _cached_file

            cached = None if Path(ref).expanduser().exists() else _cached_file(ref, "model_index.json")
            if cached is not None:
                name = json.loads(cached.read_text(encoding="utf-8")).get("_class_name", "")
            else:
                name = KNOWN_PIPELINES.get(ref, "")
        if not name:
            raise EditorError(
                f"{owner}: cannot tell the pipeline class of {ref!r} (no model_index.json); set the `pipeline` param, one of {sorted(FAMILIES)}"
            )
    if name not in FAMILIES:
        raise EditorError(
            f"{owner}: pipeline {name!r} is not an editing family this editor knows; one of {sorted(FAMILIES)}"
        )
    return name


def working_size(width: int, height: int, area: int, multiple: int = 16, min_side: int = 16) -> tuple[int, int]:
    """(width, height) near ``area`` pixels with the source's aspect, multiples of ``multiple``."""
    ratio = width / height
    w = (area * ratio) ** 0.5
    lo = max(multiple, -(-min_side // multiple) * multiple)
    return max(lo, int(round(w / multiple) * multiple)), max(lo, int(round(w / ratio / multiple) * multiple))


def _at_area(calculate: Any, area: int) -> Any:
    """``calculate_dimensions`` asked for ``area`` wherever the pipeline asks for ~1024x1024."""
    return lambda target, ratio: calculate(area if target == NATIVE_AREA else target, ratio)


@contextmanager
def patched_area(modules: Sequence[str], area: int | None) -> Iterator[None]:
    """Make pipelines whose module-level ``calculate_dimensions`` hard-codes ~1024x1024 work at
    ``area`` pixels for one call (Qwen's Plus module also keeps the condition / VAE sizes as
    constants). Swapped under a process-wide lock; model calls are serialised anyway."""
    if area is None or area == NATIVE_AREA or not modules:
        yield
        return
    mods = [importlib.import_module(m) for m in modules]
    with _PATCH_LOCK:
        saved = []
        for mod in mods:
            orig = mod.calculate_dimensions
            saved.append((mod, "calculate_dimensions", orig))
            mod.calculate_dimensions = _at_area(orig, area)
            for const in ("CONDITION_IMAGE_SIZE", "VAE_IMAGE_SIZE"):
                if hasattr(mod, const):
                    saved.append((mod, const, getattr(mod, const)))
                    setattr(mod, const, min(getattr(mod, const), area))
        try:
            yield
        finally:
            for mod, name, value in saved:
                setattr(mod, name, value)


# ----------------------------------------------------------------------------- sizing
_ROLES = {"transformer": "denoiser", "vae": "vae"}


def _role(name: str) -> str:
    return _ROLES.get(
        name,
        "text_encoder"
        if name.startswith(("text_encoder", "image_encoder"))
        else "vae"
        if name.startswith("vae")
        else "denoiser",
    )


def memory_profile(params: DiffusersEditParams, key: str, target: str) -> Any:
    """Components sized on the meta device (local folder, hub cache or published configs) and the
    activation peak of one call at the working area: the transformer's sequence is the latent
    image, the reference image and the text (the latents are 1/16 of the side: VAE x8, 2x2 patches)."""
    from editors.architectures import count_params, pipeline_configs
    from editors.memory import (
        DTYPE_BYTES,
        Component,
        Profile,
        text_encoder_activation,
        transformer_activation,
        vae_activation,
    )

    configs = pipeline_configs(params.model, "instruction-editing weights", f"editor {key!r}")
    fam = FAMILIES[pipeline_name(params.model, params.pipeline, f"editor {key!r}")]
    by = {c.name: c for c in configs.components}
    if "transformer" not in by:
        raise EditorError(f"editor {key!r}: {params.model!r} ({configs.source}) has no transformer component config")
    dtype = params.dtype if params.dtype != "auto" else ("bfloat16" if target == "cuda" else "float32")
    b = DTYPE_BYTES[dtype]
    area = params.process_area or NATIVE_AREA
    batch = 1 if fam.one_prompt else params.batch_size
    passes = 2 if (fam.true_cfg_scale or 0) > 1 else 1
    t = by["transformer"].config
    tokens = 2 * area / 16**2 + params.max_sequence_length
    comps = []
    for name, spec in sorted(by.items()):
        n, lin = count_params(spec)
        role = _role(name)
        cfg = spec.config
        if role == "denoiser":
            act = transformer_activation(
                tokens, t.get("num_attention_heads", 24) * t.get("attention_head_dim", 128), batch * passes, b
            )
        elif role == "vae":
            chans = cfg.get("base_dim") or (cfg.get("block_out_channels") or [128])[0]
            act = vae_activation(area, chans, batch, b, cpu=target == "cpu")
        else:
            text = cfg.get("text_config") or cfg
            hidden = text.get("hidden_size") or text.get("d_model") or 768
            layers = text.get("num_hidden_layers") or text.get("num_layers") or 12
            causal = any(
                a.endswith(("ForCausalLM", "ForConditionalGeneration")) for a in cfg.get("architectures") or [spec.cls]
            )
            vocab = (text.get("vocab_size") or cfg.get("vocab_size") or 0) if causal else 0
            vision = cfg.get("vision_config") or {}
            patches = area / 4 / vision.get("patch_size", 14) ** 2 if vision else 0.0
            act = text_encoder_activation(
                params.max_sequence_length + patches / 4,
                hidden,
                layers,
                vocab,
                patches,
                vision.get("hidden_size", 0),
                batch,
                b,
            )
        comps.append(Component(f"{key}/{name}", role, n, lin, b, act, quantizable=name == "transformer"))
    fixed_layout = None if params.memory_plan == "auto" else params.memory_plan
    return Profile(
        key,
        comps,
        f"{params.model} ({configs.source})",
        ("single", "model_offload") if fixed_layout is None else (fixed_layout,),
        ("none", "int8", "int4") if params.quantization == "auto" else (params.quantization,),
        fixed_layout,
        None if params.quantization == "auto" else params.quantization,
    )


PROMPT_TOKENS = 64  # an instruction in its template, beside the padded text the encoders see


def edit_flops(params: DiffusersEditParams, key: str) -> float:
    """Multiply-adds x 2 of one edit: every step runs the transformer once (twice with true CFG,
    or real CFG above 1 on an undistilled model) over the latent image, the reference image and
    the text (2 N S for its linear layers + 4 S^2 D L for attention), plus each text encoder once
    per prompt. The VAE (under 1% at 1024 px) is left out."""
    from editors.architectures import count_params, pipeline_configs

    configs = pipeline_configs(params.model, "instruction-editing weights", f"editor {key!r}")
    fam = FAMILIES[pipeline_name(params.model, params.pipeline, f"editor {key!r}")]
    by = {c.name: c for c in configs.components}
    t = by["transformer"].config
    n_t, _ = count_params(by["transformer"])
    area = params.process_area or NATIVE_AREA
    seq = 2 * area / 16**2 + params.max_sequence_length
    inner = t.get("num_attention_heads", 24) * t.get("attention_head_dim", 128)
    layers = (
        t.get("num_layers", 19) + t.get("num_single_layers", 38)
        if "num_single_layers" in t
        else t.get("num_layers", 60)
    )
    cfg = params.true_cfg_scale if params.true_cfg_scale is not None else fam.true_cfg_scale
    guidance = params.guidance_scale if params.guidance_scale is not None else fam.guidance_scale
    real_cfg = fam.negative_prompt and fam.true_cfg_scale is None and (guidance or 0) > 1
    passes = 2 if (cfg or 0) > 1 or real_cfg else 1
    per_pass = 2 * n_t * seq + 4 * seq**2 * inner * layers
    text = sum(
        2 * count_params(c)[0] * (params.max_sequence_length + PROMPT_TOKENS)
        for n, c in by.items()
        if _role(n) == "text_encoder"
    )
    return float((params.steps or fam.steps) * passes * per_pass + passes * text)


def quantization_config(quant: str) -> Any:
    from editors.qwen_image_edit import quantization_config as qc

    return qc(quant)


# ----------------------------------------------------------------------------- the editor
class DiffusersEditEditor(Editor):
    name = "diffusers-edit"
    Params = DiffusersEditParams
    uses_model = True

    @classmethod
    def memory_profile(cls, params: Any, key: str, target: str) -> Any:
        return memory_profile(params, key, target)

    @classmethod
    def edit_flops(cls, params: Any, key: str) -> float | None:
        return edit_flops(params, key)

    @classmethod
    def edit_steps(cls, params: Any) -> int | None:
        if params.steps is not None:
            return params.steps
        try:
            return FAMILIES[pipeline_name(params.model, params.pipeline, cls.name)].steps
        except EditorError:
            return None

    @staticmethod
    def plan_params(layout: str, quant: str) -> dict[str, Any]:
        return {"memory_plan": layout, "quantization": quant}

    @property
    def family(self) -> Family:
        if not hasattr(self, "_family"):
            self._family = FAMILIES[pipeline_name(self.params.model, self.params.pipeline, f"editor {self.name!r}")]
        return self._family

    def supports(self, request: EditRequest) -> EditFailure | None:
        refusal = super().supports(request)
        if refusal is None and self.family.mask:
            if request.kind in ("move", "add"):
                return EditFailure(
                    "unsupported_edit_type",
                    f"{self.family.pipeline} edits inside the object's mask: {self.family.what}; not {request.kind!r}",
                )
            if request.box is None and request.mask is None:
                return EditFailure("no_target_region", f"{self.family.pipeline} needs the object's box or mask")
        return refusal

    def _resolve_plan(self, dev: str) -> tuple[str, str]:
        p = self.params
        if not dev.startswith("cuda"):
            if p.quantization in ("int8", "int4"):
                raise EditorError(
                    f"editor {self.name!r}: quantization={p.quantization!r} needs a CUDA device (bitsandbytes); device is {dev!r}"
                )
            if p.memory_plan == "model_offload":
                raise EditorError(
                    f"editor {self.name!r}: memory_plan='model_offload' needs a CUDA device (device is {dev!r})"
                )
            return "single", "none"
        if p.memory_plan != "auto" and p.quantization != "auto":
            return p.memory_plan, p.quantization
        import torch

        from editors.memory import choose

        index = torch.device(dev).index or 0
        memory = torch.cuda.get_device_properties(index).total_memory / 1e9
        profile = memory_profile(p, self.name, "cuda")
        best, tried = choose(profile.components, 1, memory, profile.layouts, profile.quants)
        if best is None:
            smallest = min(tried, key=lambda f: f.peak_gb)
            raise EditorError(
                f"editor {self.name!r}: no memory plan fits a GPU of {memory:.1f} GB; the smallest, {smallest.name}, needs "
                f"{smallest.peak_gb} GB. Run `reactbench preflight` for the table; lower process_area."
            )
        return best.layout, best.quant

    def load(self) -> None:
        try:
            import diffusers
            import torch  # noqa: F401
        except ImportError as exc:
            raise missing_extra(self.name, exc) from exc
        p = self.params
        ref = resolve_model(p.model, "instruction-editing weights", self.name)
        fam = FAMILIES[pipeline_name(ref, p.pipeline, f"editor {self.name!r}")]
        self._family = fam
        cls = getattr(diffusers, fam.pipeline, None)
        if cls is None:
            raise EditorError(
                f"editor {self.name!r}: diffusers {diffusers.__version__} has no {fam.pipeline}; upgrade diffusers"
            )
        dev = pick_device(p.device)
        self.layout, self.quant = self._resolve_plan(dev)
        extra: dict[str, Any] = {}
        if self.quant != "none":
            extra["quantization_config"] = quantization_config(self.quant)
        offload = "model" if self.layout == "model_offload" else "none"
        self.pipe, self.device = load_pipeline(
            cls, ref, self.name, "instruction-editing weights", p.dtype, dev, offload, **extra
        )
        if p.lora:
            load_lora(self.pipe, p.lora, self.name, p.lora_weight_name, p.lora_scale)

    def resolved_params(self) -> dict[str, Any]:
        """The pipeline class and plan this load uses (recorded on every row)."""
        self.ensure_loaded()
        return {"pipeline": self.family.pipeline} | self.plan_params(self.layout, self.quant)

    @property
    def max_batch(self) -> int:
        return 1 if self.family.one_prompt else self.params.batch_size

    def _prompt(self, req: EditRequest) -> str:
        return self.params.prompt_template.format(instruction=req.instruction, target_name=req.target_name or "")

    def _size(self, req: EditRequest) -> tuple[int, int]:
        h, w = req.image.shape[:2]
        return working_size(w, h, self.params.process_area or NATIVE_AREA, 16, self.family.min_side)

    def _mask(self, req: EditRequest) -> np.ndarray:
        from editors.masks import dilate, object_mask

        h, w = req.image.shape[:2]
        box = req.box if req.box is not None else (0.0, 0.0, float(w), float(h))
        mask, _ = object_mask(req.image, box, req.seed, given=req.mask)
        return dilate(mask, self.params.mask_dilation_px)

    def _kwargs(self, reqs: Sequence[EditRequest], size: tuple[int, int]) -> dict[str, Any]:
        p, fam = self.params, self.family
        w, h = size
        kw: dict[str, Any] = dict(fam.extra)
        kw.update(
            num_inference_steps=p.steps or fam.steps, output_type="np", generator=generators([r.seed for r in reqs])
        )
        if fam.step_callback:
            kw["callback_on_step_end"] = stop_when_over_budget  # a call over its time budget stops at the next step
        if fam.area != "patched":
            kw.update(height=h, width=w)
        if fam.area == "max_area":
            kw["max_area"] = w * h
        if "max_sequence_length" in _call_params(self.pipe):
            kw["max_sequence_length"] = p.max_sequence_length
        guidance = p.guidance_scale if p.guidance_scale is not None else fam.guidance_scale
        if guidance is not None:
            kw["guidance_scale"] = guidance
        cfg = p.true_cfg_scale if p.true_cfg_scale is not None else fam.true_cfg_scale
        if fam.true_cfg_scale is not None and cfg is not None:
            kw["true_cfg_scale"] = cfg
        if fam.negative_prompt and (fam.true_cfg_scale is None or (cfg or 0) > 1):
            kw["negative_prompt"] = [p.negative_prompt] * len(reqs)
        if fam.mask:
            kw["strength"] = p.strength if p.strength is not None else fam.strength
        if fam.pipeline.startswith("Flux2Klein"):
            layers = _encoder_layers(self.pipe)
            if layers is not None:
                kw["text_encoder_out_layers"] = layers
        if fam.one_prompt:
            kw["generator"] = kw["generator"][0]
            if "negative_prompt" in kw:
                kw["negative_prompt"] = kw["negative_prompt"][0]
        return kw

    def _call(
        self, reqs: Sequence[EditRequest], size: tuple[int, int]
    ) -> tuple[list[np.ndarray], list[np.ndarray | None]]:
        fam = self.family
        w, h = size
        images = [Image.fromarray(r.image, "RGB").resize((w, h), Image.Resampling.LANCZOS) for r in reqs]
        prompts: Any = [self._prompt(r) for r in reqs]
        kw = self._kwargs(reqs, size)
        masks: list[np.ndarray | None] = [None] * len(reqs)
        if fam.mask:
            masks = [self._mask(r) for r in reqs]
            small = [
                Image.fromarray(m.astype(np.uint8) * 255, "L").resize((w, h), Image.Resampling.NEAREST) for m in masks
            ]
            kw["mask_image"] = small[0] if fam.one_prompt else small
        image: Any = images
        if fam.one_prompt:
            prompts = prompts[0]
            image = images[0] if fam.mask or fam.pipeline.startswith("LongCat") else images[:1]
        with patched_area(fam.patched, self.params.process_area):
            out = self.pipe(image=image, prompt=prompts, **kw).images
        return [to_uint8(o) for o in out], masks

    def edit_batch(self, requests: Sequence[EditRequest]) -> list[EditResult | EditFailure]:
        self.ensure_loaded()
        results: list[EditResult | EditFailure | None] = [None] * len(requests)
        groups: dict[tuple[int, int], list[int]] = {}
        for i, r in enumerate(requests):
            groups.setdefault(self._size(r), []).append(i)
        step = self.max_batch
        for size, idx in groups.items():
            for k in range(0, len(idx), step):
                part = idx[k : k + step]
                outs, masks = self._call([requests[i] for i in part], size)
                for i, img, mask in zip(part, outs, masks):
                    h, w = requests[i].image.shape[:2]
                    out, raw = back_to_source(img, w, h)
                    if mask is not None:  # inpaint: pixels outside the mask are the source's
                        out = np.where(mask[..., None], out, requests[i].image)
                    meta = {"raw_size": raw, "working_size": list(size), "pipeline": self.family.pipeline}
                    results[i] = EditResult(np.ascontiguousarray(out), mask, meta)
        return results  # type: ignore[return-value]


def _call_params(pipe: Any) -> set[str]:
    import inspect

    return set(inspect.signature(type(pipe).__call__).parameters)


def _encoder_layers(pipe: Any) -> tuple[int, ...] | None:
    """FLUX.2 klein stacks hidden states 9, 18 and 27 of its Qwen3 encoder; a smaller encoder
    (a test model) uses its layers spread the same way."""
    n = int(getattr(pipe.text_encoder.config, "num_hidden_layers", 36))
    if n >= 28:
        return None
    return tuple(sorted({max(1, round(n * k / 4)) for k in (1, 2, 3)}))


__all__ = ["EDIT_TYPES", "FAMILIES", "DiffusersEditEditor", "DiffusersEditParams", "Family"]
