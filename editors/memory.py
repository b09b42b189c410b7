"""Memory plans: what a model editor's components weigh, what one batch needs at run time, and
which placement of the components fits the GPUs, fastest plan first.

Sizes come from building each component on the meta device (``editors.architectures``), so no
weights are read. The plans, fastest first:

* ``single``: every component on one GPU; the pipeline runs as published.
* ``split``: the text encoder on one GPU, the denoiser (transformer / UNet) and the VAE on
  another; prompt embeddings cross once per batch (two GPUs per replica).
* ``two_phase``: one GPU; per shard, every instruction is encoded with the text encoder, the
  encoder leaves the GPU, then the denoiser runs. Peak = the larger phase, one swap per shard.
* ``model_offload``: diffusers' model CPU offload; peak = the largest component, but every item
  moves every component over PCIe.

Each of them is tried with the transformer in the configured precision, then 8-bit, then 4-bit
(bitsandbytes through diffusers' quantization configs).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

PlanName = Literal["single", "split", "two_phase", "model_offload"]
Quant = Literal["none", "int8", "int4"]
LAYOUTS: tuple[str, ...] = ("single", "split", "two_phase", "model_offload")
QUANTS: tuple[str, ...] = ("none", "int8", "int4")
GPUS_PER_REPLICA = {"single": 1, "split": 2, "two_phase": 1, "model_offload": 1}
RESERVE_GB = 1.5  # per GPU: CUDA context, cuBLAS/cuDNN workspaces, allocator fragmentation
# Bytes per quantized nn.Linear weight: int8 (LLM.int8, per-row scales negligible); nf4 is half
# a byte plus one fp32 absmax per block of 64 weights.
QUANT_BYTES = {"int8": 1.0, "int4": 0.5 + 4 / 64}
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}

# Activation formulas (bytes, per image in the batch; b = bytes per element of the compute dtype):
#   transformer  S * D * 12 * b         S = tokens (2 latent images + text), D = heads * head_dim;
#                                       12 = hidden, normed copy, q, k, v, attention out, 4D MLP, residual
#   VAE          A * C0 * (8 + 27*cpu) * b
#                                       A = working area (pixels), C0 = channels at full resolution;
#                                       8 live full-resolution maps; on the CPU, conv3d unfolds its
#                                       input (C0 * 3^3 per pixel), which dominates the tiny models
#   text encoder T * (H * (12 + L) + V) * b + P * Hv * 12 * b
#                                       T = text + vision tokens, H hidden, L layers (all hidden states
#                                       are returned), V vocabulary (logits), P vision patches, Hv their width
VAE_LIVE_MAPS = 8
CPU_CONV_UNFOLD = 27


def gb(n_bytes: float) -> float:
    return n_bytes / 1e9


@dataclass
class Component:
    """One model of an editor (or the MLLM): parameter counts from the meta build, the bytes per
    parameter it is loaded with, and the activation peak of one batch."""

    name: str
    role: str  # text_encoder | denoiser | vae | model
    params: int
    linear_params: int = 0  # nn.Linear weights: what bitsandbytes quantizes
    bytes_per_param: float = 2.0
    activation_bytes: float = 0.0
    quantizable: bool = False

    def weight_bytes(self, quant: str = "none") -> float:
        if quant == "none" or not self.quantizable:
            return self.params * self.bytes_per_param
        return self.linear_params * QUANT_BYTES[quant] + (self.params - self.linear_params) * self.bytes_per_param

    def need(self, quant: str = "none") -> float:
        return self.weight_bytes(quant) + self.activation_bytes


@dataclass
class PlanFit:
    """One candidate plan: per-GPU peak, where each component sits, whether it fits."""

    layout: str
    quant: str
    peak_gb: float
    per_gpu_gb: list[float]
    placement: dict[str, str]
    fits: bool
    replicas: int = 1

    @property
    def name(self) -> str:
        return self.layout if self.quant == "none" else f"{self.layout}+{self.quant}"


def _group(components: Iterable[Component], roles: tuple[str, ...]) -> list[Component]:
    return [c for c in components if c.role in roles]


def evaluate(components: list[Component], layout: str, quant: str, gpus: int, gpu_gb: float) -> PlanFit:
    """Peak memory of ``layout`` with the denoiser in ``quant`` on ``gpus`` GPUs of ``gpu_gb`` each."""
    usable = gpu_gb - RESERVE_GB
    enc = _group(components, ("text_encoder",))
    den = _group(components, ("denoiser", "vae", "model"))
    w = lambda cs: sum(c.weight_bytes(quant) for c in cs)  # noqa: E731
    act = lambda cs: max((c.activation_bytes for c in cs), default=0.0)  # noqa: E731
    placement: dict[str, str] = {}
    if layout == "single" or not enc:
        per = [gb(w(components) + act(components))]
        placement = {c.name: "gpu0" for c in components}
    elif layout == "split":
        per = [gb(w(enc) + act(enc)), gb(w(den) + act(den))]
        placement = {c.name: "gpu0" for c in enc} | {c.name: "gpu1" for c in den}
    elif layout == "two_phase":
        per = [max(gb(w(enc) + act(enc)), gb(w(den) + act(den)))]
        placement = {c.name: "gpu0 (phase 1)" for c in enc} | {c.name: "gpu0 (phase 2)" for c in den}
    elif layout == "model_offload":
        per = [max(gb(c.need(quant)) for c in components)]
        placement = {c.name: "gpu0 when running, else CPU" for c in components}
    else:
        raise ValueError(f"unknown memory plan {layout!r}; one of {LAYOUTS}")
    need_gpus = GPUS_PER_REPLICA[layout] if enc else 1
    fits = gpus >= need_gpus and all(p <= usable for p in per)
    return PlanFit(
        layout, quant, round(max(per), 2), [round(p, 2) for p in per], placement, fits, max(1, gpus // need_gpus)
    )


def choose(
    components: list[Component],
    gpus: int,
    gpu_gb: float,
    layouts: Iterable[str] = LAYOUTS,
    quants: Iterable[str] = QUANTS,
) -> tuple[PlanFit | None, list[PlanFit]]:
    """The fastest plan that fits (precision before layout: a quantized transformer changes the
    images, a layout does not), and every candidate tried, in order."""
    tried = [evaluate(components, lay, q, gpus, gpu_gb) for q in quants for lay in layouts]
    return next((p for p in tried if p.fits), None), tried


# ----------------------------------------------------------------------------- activations
def transformer_activation(tokens: float, inner_dim: int, batch: int, elem_bytes: float) -> float:
    return batch * tokens * inner_dim * 12 * elem_bytes


def vae_activation(area: float, channels: int, batch: int, elem_bytes: float, cpu: bool) -> float:
    return batch * area * channels * (VAE_LIVE_MAPS + (CPU_CONV_UNFOLD if cpu else 0)) * elem_bytes


def text_encoder_activation(
    tokens: float,
    hidden: int,
    layers: int,
    vocab: int,
    patches: float,
    vision_hidden: int,
    batch: int,
    elem_bytes: float,
) -> float:
    return batch * (tokens * (hidden * (12 + layers) + vocab) + patches * vision_hidden * 12) * elem_bytes


def mllm_activation(
    tokens: float, hidden: int, layers: int, kv_heads_dim: int, vocab: int, batch: int, elem_bytes: float
) -> float:
    """Generation with a KV cache: keys and values of every layer, plus one layer's work and the logits."""
    return batch * tokens * (2 * layers * kv_heads_dim + hidden * 12 + vocab) * elem_bytes


@dataclass
class Profile:
    """What the preflight knows about one editor (or the MLLM): its components, where their
    configs came from, and the plans the editor implements."""

    key: str
    components: list[Component] = field(default_factory=list)
    source: str = ""
    layouts: tuple[str, ...] = ("single",)
    quants: tuple[str, ...] = ("none",)
    fixed_layout: str | None = None  # the config names a plan instead of auto
    fixed_quant: str | None = None


# ----------------------------------------------------------------------------- building profiles
def element_bytes(dtype: str, target: str) -> int:
    """Bytes per weight of a ``dtype`` param on ``target`` (``auto``: bf16 on CUDA, fp32 on the CPU)."""
    return DTYPE_BYTES[dtype if dtype != "auto" else ("bfloat16" if target == "cuda" else "float32")]


def inner_dim(config: dict[str, Any]) -> int:
    """A transformer's attention width (heads x head dim), with the Qwen-Image / FLUX defaults."""
    return int(config.get("num_attention_heads", 24) * config.get("attention_head_dim", 128))


def plan_profile(
    key: str, components: list[Component], source: str, layouts: tuple[str, ...], layout: str, quant: str
) -> Profile:
    """A diffusion editor's profile: ``layouts`` and every precision, unless the configured
    ``layout`` / ``quant`` (``auto``: choose) fix them."""
    fixed_layout = None if layout == "auto" else layout
    fixed_quant = None if quant == "auto" else quant
    return Profile(
        key,
        components,
        source,
        layouts if fixed_layout is None else (fixed_layout,),
        QUANTS if fixed_quant is None else (fixed_quant,),
        fixed_layout,
        fixed_quant,
    )
