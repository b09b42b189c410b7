"""Model sizes without weights: read a model's ``config.json`` files (local folder, else the local
Hugging Face cache, else the known architecture of a built-in default) and build each component
on the meta device with accelerate's ``init_empty_weights`` to count its parameters.

The known architectures are the published configs of the built-in defaults, kept here so a
preflight can size a build before anything is downloaded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from editors.base import EditorError
from editors.memory import Component
from editors.weights import cached_file, looks_like_path, offline

if TYPE_CHECKING:
    import torch

_QWEN25_VL_7B = {
    "model_type": "qwen2_5_vl",
    "architectures": ["Qwen2_5_VLForConditionalGeneration"],
    "vocab_size": 152064,
    "tie_word_embeddings": False,
    "text_config": {
        "hidden_size": 3584,
        "intermediate_size": 18944,
        "num_hidden_layers": 28,
        "num_attention_heads": 28,
        "num_key_value_heads": 4,
        "vocab_size": 152064,
        "max_position_embeddings": 128000,
        "rms_norm_eps": 1e-6,
        "tie_word_embeddings": False,
        "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0, "mrope_section": [16, 24, 24]},
    },
    "vision_config": {
        "depth": 32,
        "hidden_size": 1280,
        "intermediate_size": 3420,
        "num_heads": 16,
        "in_chans": 3,
        "out_hidden_size": 3584,
        "patch_size": 14,
        "spatial_merge_size": 2,
        "temporal_patch_size": 2,
        "window_size": 112,
        "fullatt_block_indexes": [7, 15, 23, 31],
        "hidden_act": "silu",
    },
}
_QWEN_IMAGE = {
    "text_encoder": ("transformers", "Qwen2_5_VLForConditionalGeneration", _QWEN25_VL_7B),
    "transformer": (
        "diffusers",
        "QwenImageTransformer2DModel",
        {
            "patch_size": 2,
            "in_channels": 64,
            "out_channels": 16,
            "num_layers": 60,
            "attention_head_dim": 128,
            "num_attention_heads": 24,
            "joint_attention_dim": 3584,
            "guidance_embeds": False,
            "axes_dims_rope": [16, 56, 56],
        },
    ),
    "vae": (
        "diffusers",
        "AutoencoderKLQwenImage",
        {
            "base_dim": 96,
            "z_dim": 16,
            "dim_mult": [1, 2, 4, 4],
            "num_res_blocks": 2,
            "attn_scales": [],
            "temperal_downsample": [False, True, True],
        },
    ),
}
_SD15_PIX2PIX = {
    "text_encoder": (
        "transformers",
        "CLIPTextModel",
        {
            "model_type": "clip_text_model",
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_hidden_layers": 12,
            "num_attention_heads": 12,
            "max_position_embeddings": 77,
            "vocab_size": 49408,
            "projection_dim": 768,
        },
    ),
    "unet": (
        "diffusers",
        "UNet2DConditionModel",
        {
            "in_channels": 8,
            "out_channels": 4,
            "sample_size": 64,
            "cross_attention_dim": 768,
            "attention_head_dim": 8,
            "block_out_channels": [320, 640, 1280, 1280],
            "layers_per_block": 2,
        },
    ),
    "vae": (
        "diffusers",
        "AutoencoderKL",
        {
            "in_channels": 3,
            "out_channels": 3,
            "latent_channels": 4,
            "layers_per_block": 2,
            "sample_size": 512,
            "block_out_channels": [128, 256, 512, 512],
            "down_block_types": ["DownEncoderBlock2D"] * 4,
            "up_block_types": ["UpDecoderBlock2D"] * 4,
        },
    ),
}
_CLIP_L = (
    "transformers",
    "CLIPTextModel",
    {
        "model_type": "clip_text_model",
        "hidden_size": 768,
        "intermediate_size": 3072,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "max_position_embeddings": 77,
        "vocab_size": 49408,
        "projection_dim": 768,
        "hidden_act": "quick_gelu",
    },
)
_T5_XXL = (
    "transformers",
    "T5EncoderModel",
    {
        "model_type": "t5",
        "architectures": ["T5EncoderModel"],
        "d_model": 4096,
        "d_ff": 10240,
        "d_kv": 64,
        "num_layers": 24,
        "num_heads": 64,
        "vocab_size": 32128,
        "feed_forward_proj": "gated-gelu",
        "relative_attention_num_buckets": 32,
        "is_encoder_decoder": False,
    },
)
_FLUX1_VAE = (
    "diffusers",
    "AutoencoderKL",
    {
        "in_channels": 3,
        "out_channels": 3,
        "latent_channels": 16,
        "layers_per_block": 2,
        "block_out_channels": [128, 256, 512, 512],
        "down_block_types": ["DownEncoderBlock2D"] * 4,
        "up_block_types": ["UpDecoderBlock2D"] * 4,
        "use_quant_conv": False,
        "use_post_quant_conv": False,
        "shift_factor": 0.1159,
        "scaling_factor": 0.3611,
        "sample_size": 1024,
    },
)
# FLUX.1 Kontext dev: a 12 B FLUX.1 transformer with guidance embedding, CLIP-L and T5-XXL.
_FLUX1_KONTEXT = {
    "text_encoder": _CLIP_L,
    "text_encoder_2": _T5_XXL,
    "transformer": (
        "diffusers",
        "FluxTransformer2DModel",
        {
            "patch_size": 1,
            "in_channels": 64,
            "num_layers": 19,
            "num_single_layers": 38,
            "attention_head_dim": 128,
            "num_attention_heads": 24,
            "joint_attention_dim": 4096,
            "pooled_projection_dim": 768,
            "guidance_embeds": True,
            "axes_dims_rope": [16, 56, 56],
        },
    ),
    "vae": _FLUX1_VAE,
}


def _qwen3(hidden: int, intermediate: int, tied: bool) -> tuple[str, str, dict[str, Any]]:
    return (
        "transformers",
        "Qwen3ForCausalLM",
        {
            "model_type": "qwen3",
            "architectures": ["Qwen3ForCausalLM"],
            "hidden_size": hidden,
            "intermediate_size": intermediate,
            "num_hidden_layers": 36,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "vocab_size": 151936,
            "max_position_embeddings": 40960,
            "tie_word_embeddings": tied,
            "rms_norm_eps": 1e-6,
        },
    )


def _flux2_klein(
    layers: int, single: int, heads: int, joint: int, encoder: tuple[str, str, dict[str, Any]]
) -> dict[str, tuple[str, str, dict[str, Any]]]:
    """FLUX.2 klein: the FLUX.2 transformer at klein's depth and width (diffusers' conversion script's
    configs), Qwen3 as text encoder (three hidden states stacked: joint = 3 x hidden), the FLUX.2 VAE."""
    return {
        "text_encoder": encoder,
        "transformer": (
            "diffusers",
            "Flux2Transformer2DModel",
            {
                "patch_size": 1,
                "in_channels": 128,
                "num_layers": layers,
                "num_single_layers": single,
                "attention_head_dim": 128,
                "num_attention_heads": heads,
                "joint_attention_dim": joint,
                "timestep_guidance_channels": 256,
                "mlp_ratio": 3.0,
                "axes_dims_rope": [32, 32, 32, 32],
                "rope_theta": 2000,
                "eps": 1e-6,
                "guidance_embeds": False,
            },
        ),
        "vae": (
            "diffusers",
            "AutoencoderKLFlux2",
            {"latent_channels": 32, "block_out_channels": [128, 256, 512, 512], "layers_per_block": 2},
        ),
    }


# LongCat-Image-Edit: a 6 B FLUX-like transformer (10 double + 20 single blocks) on Qwen2.5-VL-7B.
_LONGCAT_EDIT = {
    "text_encoder": ("transformers", "Qwen2_5_VLForConditionalGeneration", _QWEN25_VL_7B),
    "transformer": (
        "diffusers",
        "LongCatImageTransformer2DModel",
        {
            "patch_size": 1,
            "in_channels": 64,
            "num_layers": 10,
            "num_single_layers": 20,
            "attention_head_dim": 128,
            "num_attention_heads": 24,
            "joint_attention_dim": 3584,
            "pooled_projection_dim": 3584,
            "axes_dims_rope": [16, 56, 56],
        },
    ),
    "vae": _FLUX1_VAE,
}
# Built-in default ids -> their component configs (library, class, config).
KNOWN: dict[str, dict[str, tuple[str, str, dict[str, Any]]]] = {
    "Qwen/Qwen-Image-Edit": _QWEN_IMAGE,
    "Qwen/Qwen-Image-Edit-2509": _QWEN_IMAGE,
    "Qwen/Qwen-Image-Edit-2511": _QWEN_IMAGE,
    "timbrooks/instruct-pix2pix": _SD15_PIX2PIX,
    "black-forest-labs/FLUX.1-Kontext-dev": _FLUX1_KONTEXT,
    "black-forest-labs/FLUX.2-klein-4B": _flux2_klein(5, 20, 24, 7680, _qwen3(2560, 9728, True)),
    "black-forest-labs/FLUX.2-klein-9B": _flux2_klein(8, 24, 32, 12288, _qwen3(4096, 12288, False)),
    "meituan-longcat/LongCat-Image-Edit": _LONGCAT_EDIT,
}
MODEL_LIBRARIES = ("diffusers", "transformers")


@dataclass
class ComponentSpec:
    name: str
    library: str
    cls: str
    config: dict[str, Any]


@dataclass
class ModelConfigs:
    """The model-bearing components of a pipeline (or one model) and where their configs came from."""

    ref: str
    source: str  # "local folder" | "hub cache" | "known architecture"
    components: list[ComponentSpec]


def _reader(ref: str) -> tuple[str, Any] | None:
    """(source, read(relative path) -> dict | None) for a local folder or a cached hub repo."""
    path = Path(ref).expanduser()
    if path.is_dir():

        def read_local(rel: str) -> dict[str, Any] | None:
            f = path / rel
            return json.loads(f.read_text(encoding="utf-8")) if f.is_file() else None

        return "local folder", read_local
    if looks_like_path(ref):
        return None

    def read_cache(rel: str) -> dict[str, Any] | None:
        f = cached_file(ref, rel)
        return json.loads(f.read_text(encoding="utf-8")) if f is not None else None

    if read_cache("model_index.json") is not None or read_cache("config.json") is not None:
        return "hub cache", read_cache
    return None


def pipeline_configs(ref: str, what: str, owner: str) -> ModelConfigs:
    """The component configs of a diffusers pipeline (``model_index.json``) or of one
    transformers model (``config.json``). Raises ``EditorError`` saying how to get them."""
    found = _reader(ref)
    if found is not None:
        source, read = found
        index = read("model_index.json")
        if index is not None:
            comps = []
            for name, entry in sorted(index.items()):
                if (
                    name.startswith("_")
                    or not isinstance(entry, list)
                    or len(entry) != 2
                    or entry[0] not in MODEL_LIBRARIES
                ):
                    continue
                cfg = read(f"{name}/config.json")
                if cfg is not None and _is_model_class(entry[0], entry[1]):
                    comps.append(ComponentSpec(name, entry[0], entry[1], cfg))
            return ModelConfigs(ref, source, comps)
        cfg = read("config.json")
        if cfg is not None:
            arch = (cfg.get("architectures") or ["AutoModel"])[0]
            return ModelConfigs(ref, source, [ComponentSpec("model", "transformers", arch, cfg)])
    if ref in KNOWN:
        return ModelConfigs(
            ref,
            "known architecture",
            [ComponentSpec(n, lib, cls, dict(cfg)) for n, (lib, cls, cfg) in KNOWN[ref].items()],
        )
    if looks_like_path(ref):
        raise EditorError(
            f"{owner}: {what} not found at local path {str(Path(ref).expanduser())!r} (no model_index.json or config.json there)"
        )
    hint = "it is not in the local Hugging Face cache" + (" and HF_HUB_OFFLINE is set" if offline() else "")
    raise EditorError(
        f"{owner}: cannot size {what} {ref!r}: {hint}. Fetch its configs (`hf download {ref} --include '*.json'`) or point at a local folder."
    )


def _is_model_class(library: str, cls: str) -> bool:
    try:
        mod = __import__(library)
        obj = getattr(mod, cls, None)
    except ImportError:
        return False
    import torch

    return isinstance(obj, type) and issubclass(obj, torch.nn.Module)


@lru_cache(maxsize=64)
def _count(library: str, cls: str, config_json: str) -> tuple[int, int]:
    import torch
    from accelerate import init_empty_weights

    config = json.loads(config_json)
    mod = __import__(library)
    klass = getattr(mod, cls, None)
    if klass is None:
        raise EditorError(f"{library} has no class {cls!r} (installed version too old for this model?)")
    with init_empty_weights():
        if library == "diffusers":
            model = klass.from_config({k: v for k, v in config.items() if not k.startswith("_")})
        else:
            model = klass(klass.config_class.from_dict(config))
    if hasattr(
        model, "tie_weights"
    ):  # tied embeddings (T5's shared table, Qwen3-4B's head) are one tensor, as when loaded
        model.tie_weights()
    total = sum(p.numel() for p in model.parameters())
    linear = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))
    return int(total), int(linear)


def count_params(spec: ComponentSpec) -> tuple[int, int]:
    """(parameters, nn.Linear weight parameters) of a component built on the meta device."""
    return _count(spec.library, spec.cls, json.dumps(spec.config, sort_keys=True))


def count_module_params(module: torch.nn.Module) -> tuple[int, int]:
    """(parameters, nn.Linear weight parameters) of a loaded module."""
    import torch

    total = sum(p.numel() for p in module.parameters())
    linear = sum(m.weight.numel() for m in module.modules() if isinstance(m, torch.nn.Linear))
    return int(total), int(linear)


def sized_component(key: str, spec: ComponentSpec, role: str, elem_bytes: float, activation: float) -> Component:
    """One component of editor ``key`` sized on the meta device; the transformer is the one that
    can be quantized."""
    n, lin = count_params(spec)
    return Component(
        f"{key}/{spec.name}", role, n, lin, elem_bytes, activation, quantizable=spec.name == "transformer"
    )
