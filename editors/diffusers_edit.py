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

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from PIL import Image
from pydantic import Field

from editors.architectures import count_params, pipeline_configs, sized_component
from editors.base import EDIT_TYPES, EditFailure, EditorError, EditRequest
from editors.diffusion import NATIVE_AREA, DiffusionEditor, working_size
from editors.memory import Profile, element_bytes, inner_dim, plan_profile
from editors.weights import cached_file
from storage.config_base import Section

if TYPE_CHECKING:
    from diffusers import DiffusionPipeline


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
            cached = None if Path(ref).expanduser().exists() else cached_file(ref, "model_index.json")
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


def memory_profile(params: DiffusersEditParams, key: str, target: str) -> Profile:
    """Components sized on the meta device (local folder, hub cache or published configs) and the
    activation peak of one call at the working area: the transformer's sequence is the latent
    image, the reference image and the text (the latents are 1/16 of the side: VAE x8, 2x2 patches)."""
    from editors.memory import text_encoder_activation, transformer_activation, vae_activation

    configs = pipeline_configs(params.model, "instruction-editing weights", f"editor {key!r}")
    fam = FAMILIES[pipeline_name(params.model, params.pipeline, f"editor {key!r}")]
    by = {c.name: c for c in configs.components}
    if "transformer" not in by:
        raise EditorError(f"editor {key!r}: {params.model!r} ({configs.source}) has no transformer component config")
    b = element_bytes(params.dtype, target)
    area = params.process_area or NATIVE_AREA
    batch = 1 if fam.one_prompt else params.batch_size
    passes = 2 if (fam.true_cfg_scale or 0) > 1 else 1
    t = by["transformer"].config
    tokens = 2 * area / 16**2 + params.max_sequence_length
    comps = []
    for name, spec in sorted(by.items()):
        role = _role(name)
        cfg = spec.config
        if role == "denoiser":
            act = transformer_activation(tokens, inner_dim(t), batch * passes, b)
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
        comps.append(sized_component(key, spec, role, b, act))
    return plan_profile(
        key,
        comps,
        f"{params.model} ({configs.source})",
        ("single", "model_offload"),
        params.memory_plan,
        params.quantization,
    )


PROMPT_TOKENS = 64  # an instruction in its template, beside the padded text the encoders see


def edit_flops(params: DiffusersEditParams, key: str) -> float:
    """Multiply-adds x 2 of one edit: every step runs the transformer once (twice with true CFG,
    or real CFG above 1 on an undistilled model) over the latent image, the reference image and
    the text (2 N S for its linear layers + 4 S^2 D L for attention), plus each text encoder once
    per prompt. The VAE (under 1% at 1024 px) is left out."""
    configs = pipeline_configs(params.model, "instruction-editing weights", f"editor {key!r}")
    fam = FAMILIES[pipeline_name(params.model, params.pipeline, f"editor {key!r}")]
    by = {c.name: c for c in configs.components}
    t = by["transformer"].config
    n_t, _ = count_params(by["transformer"])
    area = params.process_area or NATIVE_AREA
    seq = 2 * area / 16**2 + params.max_sequence_length
    inner = inner_dim(t)
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


# ----------------------------------------------------------------------------- the editor
class DiffusersEditEditor(DiffusionEditor[DiffusersEditParams]):
    """Any pipeline of :data:`FAMILIES`, called as its row says; single or model-offload plans."""

    name = "diffusers-edit"
    Params = DiffusersEditParams
    weights = "instruction-editing weights"
    profile_of = staticmethod(memory_profile)
    flops_of = staticmethod(edit_flops)

    @classmethod
    def edit_steps(cls, params: DiffusersEditParams) -> int | None:
        if params.steps is not None:
            return params.steps
        try:
            return FAMILIES[pipeline_name(params.model, params.pipeline, cls.name)].steps
        except EditorError:
            return None

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

    def pipeline_class(self, diffusers: ModuleType, ref: str) -> type[DiffusionPipeline]:
        fam = FAMILIES[pipeline_name(ref, self.params.pipeline, f"editor {self.name!r}")]
        self._family = fam
        cls = getattr(diffusers, fam.pipeline, None)
        if cls is None:
            raise EditorError(
                f"editor {self.name!r}: diffusers {diffusers.__version__} has no {fam.pipeline}; upgrade diffusers"
            )
        return cls

    def resolved_params(self) -> dict[str, str]:
        """The pipeline class and plan this load uses (recorded on every row)."""
        self.ensure_loaded()
        return {"pipeline": self.family.pipeline} | super().resolved_params()

    @property
    def pipeline_label(self) -> str:
        return self.family.pipeline

    @property
    def max_batch(self) -> int:
        return 1 if self.family.one_prompt else self.params.batch_size

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
        kw.update(self._step_kwargs(reqs, p.steps or fam.steps, budget=fam.step_callback))
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
            self._one_prompt(kw)
        return kw

    def _call(
        self, reqs: Sequence[EditRequest], size: tuple[int, int]
    ) -> tuple[list[np.ndarray], list[np.ndarray | None]]:
        fam = self.family
        w, h = size
        images = [Image.fromarray(r.image, "RGB").resize((w, h), Image.Resampling.LANCZOS) for r in reqs]
        texts = [self._prompt(r) for r in reqs]
        prompts: str | list[str] = texts
        kw = self._kwargs(reqs, size)
        masks: list[np.ndarray | None] = [None] * len(reqs)
        if fam.mask:
            masks = [self._mask(r) for r in reqs]
            small = [
                Image.fromarray(m.astype(np.uint8) * 255, "L").resize((w, h), Image.Resampling.NEAREST) for m in masks
            ]
            kw["mask_image"] = small[0] if fam.one_prompt else small
        image: Image.Image | list[Image.Image] = images
        if fam.one_prompt:
            prompts = texts[0]
            image = images[0] if fam.mask or fam.pipeline.startswith("LongCat") else images[:1]
        return self._run(image, prompts, kw, fam.patched), masks


def _call_params(pipe: DiffusionPipeline) -> set[str]:
    import inspect

    return set(inspect.signature(type(pipe).__call__).parameters)


def _encoder_layers(pipe: DiffusionPipeline) -> tuple[int, ...] | None:
    """FLUX.2 klein stacks hidden states 9, 18 and 27 of its Qwen3 encoder; a smaller encoder
    (a test model) uses its layers spread the same way."""
    n = int(getattr(pipe.text_encoder.config, "num_hidden_layers", 36))
    if n >= 28:
        return None
    return tuple(sorted({max(1, round(n * k / 4)) for k in (1, 2, 3)}))


__all__ = ["EDIT_TYPES", "FAMILIES", "DiffusersEditEditor", "DiffusersEditParams", "Family"]
