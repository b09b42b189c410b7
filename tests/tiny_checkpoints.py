"""Tiny random-weight checkpoints for tests and benchmarks (never for real edits; not shipped in the package).

Each builder saves a real checkpoint folder (or file) that loads back through the same public
path a downloaded model takes (``from_pretrained(local_dir)``, segment-anything's builder,
``LAMA_MODEL``), so the editors' loading code is exercised without any hub access. Tokenizers
are trained locally with ``tokenizers``. Heavy imports stay inside the functions.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

QWEN_SPECIAL = [
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
    "<|endoftext|>",
]

_CORPUS = [
    "Describe the key features of the input image (color, shape, size, texture, objects, background), then explain how "
    "the user's text instruction should alter or modify the image. Generate a new image that meets the user's "
    "requirements while maintaining consistency with the original input where appropriate.",
    "system user assistant picture remove the red ball from the table and fill the background naturally",
    "change the colour of the blue cup to green; move the chair to the left; add another apple; replace the dog with a cat",
    "Picture 1: turn the wooden bench into metal. erase the bicycle wheel. make the car yellow.",
]


def train_bpe(vocab_size: int = 400, special: list[str] | None = None) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """A byte-level BPE trained on a few sentences: (vocab, merges) for GPT-2 style tokenizers."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(special or []),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_CORPUS * 4, trainer=trainer)
    data = json.loads(tok.to_str())
    vocab = data["model"]["vocab"]
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in data["model"]["merges"]]
    return vocab, merges


def qwen_tokenizer() -> Any:
    """A Qwen2 tokenizer with the chat/vision special tokens, built offline."""
    from transformers import Qwen2Tokenizer

    vocab, merges = train_bpe(400)
    return Qwen2Tokenizer(
        vocab=vocab, merges=merges, extra_special_tokens=QWEN_SPECIAL[:-1], unk_token="<|endoftext|>"
    )


def qwen_vl_components(seed: int = 0) -> tuple[Any, Any, Any]:
    """(text encoder, tokenizer, processor) of a 2-layer Qwen2.5-VL with hidden size 16."""
    import torch
    from transformers import (
        Qwen2_5_VLConfig,
        Qwen2_5_VLForConditionalGeneration,
        Qwen2VLImageProcessor,
        Qwen2VLProcessor,
    )
    from transformers.models.qwen2_vl.video_processing_qwen2_vl import Qwen2VLVideoProcessor

    tokenizer = qwen_tokenizer()
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in QWEN_SPECIAL}
    rope = {"rope_type": "default", "rope_theta": 1e6, "mrope_section": [1, 1, 2]}
    config = Qwen2_5_VLConfig(
        text_config={
            "hidden_size": 16,
            "intermediate_size": 16,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "num_key_value_heads": 2,
            "vocab_size": len(tokenizer) + 8,
            "rope_parameters": rope,
        },
        vision_config={"depth": 2, "hidden_size": 16, "intermediate_size": 16, "num_heads": 2, "out_hidden_size": 16},
        vocab_size=len(tokenizer) + 8,
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
    )
    torch.manual_seed(seed)
    encoder = Qwen2_5_VLForConditionalGeneration(config).eval()
    image_processor = Qwen2VLImageProcessor(min_pixels=28 * 28 * 4, max_pixels=28 * 28 * 16)
    chat = "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    processor = Qwen2VLProcessor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        video_processor=Qwen2VLVideoProcessor(),
        chat_template=chat,
    )
    return encoder, tokenizer, processor


def build_qwen_image_edit(out_dir: str | Path, plus: bool = False, seed: int = 0) -> Path:
    """Save a tiny QwenImageEdit(Plus)Pipeline to ``out_dir``; returns the folder."""
    out = Path(out_dir)
    tiny_qwen_pipeline(plus, seed).save_pretrained(out)
    return out


def tiny_qwen_pipeline(plus: bool = False, seed: int = 0) -> Any:
    """A tiny QwenImageEdit(Plus)Pipeline in memory (2 layers, hidden size 16, random weights)."""
    import torch
    from diffusers import (
        AutoencoderKLQwenImage,
        FlowMatchEulerDiscreteScheduler,
        QwenImageEditPipeline,
        QwenImageEditPlusPipeline,
        QwenImageTransformer2DModel,
    )

    torch.manual_seed(seed)
    transformer = QwenImageTransformer2DModel(
        patch_size=2,
        in_channels=16,
        out_channels=4,
        num_layers=2,
        attention_head_dim=16,
        num_attention_heads=3,
        joint_attention_dim=16,
        guidance_embeds=False,
        axes_dims_rope=(8, 4, 4),
    )
    torch.manual_seed(seed)
    z = 4
    vae = AutoencoderKLQwenImage(
        base_dim=z * 6,
        z_dim=z,
        dim_mult=[1, 2, 4],
        num_res_blocks=1,
        temperal_downsample=[False, True],
        latents_mean=[0.0] * z,
        latents_std=[1.0] * z,
    )
    encoder, tokenizer, processor = qwen_vl_components(seed)
    cls = QwenImageEditPlusPipeline if plus else QwenImageEditPipeline
    return cls(
        transformer=transformer,
        vae=vae,
        scheduler=FlowMatchEulerDiscreteScheduler(),
        text_encoder=encoder,
        tokenizer=tokenizer,
        processor=processor,
    )


TINY_SAM = "reactbench_tiny"


def register_tiny_sam() -> str:
    """Add a 2-layer, 16-dim SAM architecture to segment-anything's builder registry; returns its name."""
    from functools import partial

    from segment_anything import sam_model_registry
    from segment_anything.build_sam import _build_sam

    sam_model_registry[TINY_SAM] = partial(
        _build_sam, encoder_embed_dim=16, encoder_depth=2, encoder_num_heads=2, encoder_global_attn_indexes=[1]
    )
    return TINY_SAM


def build_tiny_sam(path: str | Path, seed: int = 0) -> Path:
    """Save a random tiny SAM checkpoint (a state dict, like the released ones) to ``path``."""
    import torch
    from segment_anything import sam_model_registry

    register_tiny_sam()
    torch.manual_seed(seed)
    model = sam_model_registry[TINY_SAM](checkpoint=None)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    torch.save(model.state_dict(), out)
    return out


def build_tiny_lama(path: str | Path, seed: int = 0, composite: bool = True) -> Path:
    """Save a TorchScript file with LaMa's calling contract: ``model(image[1,3,H,W] 0..1,
    mask[1,1,H,W] int64 0/1) -> image[1,3,H,W] 0..1`` on inputs padded to a multiple of 8.
    ``composite=False``: the output is the network's fill everywhere (unmasked pixels change
    too), so only the editor's own composite step can keep them."""
    import torch
    from torch import nn

    class TinyLama(nn.Module):
        def __init__(self, keep: float) -> None:
            super().__init__()
            self.inp = nn.Conv2d(4, 8, 3, padding=1)
            self.out = nn.Conv2d(8, 3, 3, padding=1)
            self.keep = keep

        def forward(self, image: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            m = mask.to(image.dtype)
            x = torch.cat([image * (1 - m), m], dim=1)
            fill = torch.sigmoid(self.out(torch.relu(self.inp(x))))
            return (image * (1 - m) + fill * m) * self.keep + fill * (1 - self.keep)

    torch.manual_seed(seed)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    torch.jit.script(TinyLama(1.0 if composite else 0.0).eval()).save(str(out))
    return out


def clip_tokenizer() -> Any:
    """A CLIP tokenizer (BPE with ``</w>`` word ends) trained on a few sentences, offline."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import CLIPTokenizer

    special = ["<|startoftext|>", "<|endoftext|>"]
    tok = Tokenizer(models.BPE(end_of_word_suffix="</w>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.BpeTrainer(
        vocab_size=300, special_tokens=special, end_of_word_suffix="</w>", show_progress=False
    )
    tok.train_from_iterator(_CORPUS * 4, trainer=trainer)
    data = json.loads(tok.to_str())
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in data["model"]["merges"]]
    return CLIPTokenizer(vocab=data["model"]["vocab"], merges=merges, model_max_length=77)


def build_instruct_pix2pix(out_dir: str | Path, seed: int = 0) -> Path:
    """Save a tiny StableDiffusionInstructPix2PixPipeline (UNet with 8 input channels) to ``out_dir``."""
    import torch
    from diffusers import (
        AutoencoderKL,
        EulerAncestralDiscreteScheduler,
        StableDiffusionInstructPix2PixPipeline,
        UNet2DConditionModel,
    )
    from transformers import CLIPTextConfig, CLIPTextModel

    tokenizer = clip_tokenizer()
    torch.manual_seed(seed)
    unet = UNet2DConditionModel(
        block_out_channels=(8, 16),
        layers_per_block=1,
        sample_size=16,
        in_channels=8,
        out_channels=4,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
        up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        cross_attention_dim=16,
        attention_head_dim=4,
        norm_num_groups=4,
    )
    torch.manual_seed(seed)
    vae = AutoencoderKL(
        block_out_channels=(8, 16),
        in_channels=3,
        out_channels=3,
        down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
        up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"),
        latent_channels=4,
        norm_num_groups=4,
        sample_size=32,
    )
    torch.manual_seed(seed)
    text = CLIPTextModel(
        CLIPTextConfig(
            vocab_size=len(tokenizer),
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            max_position_embeddings=77,
            bos_token_id=tokenizer.bos_token_id,
            eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id,
        )
    )
    pipe = StableDiffusionInstructPix2PixPipeline(
        vae=vae,
        text_encoder=text,
        tokenizer=tokenizer,
        unet=unet,
        scheduler=EulerAncestralDiscreteScheduler(),
        safety_checker=None,
        feature_extractor=None,
        requires_safety_checker=False,
    )
    out = Path(out_dir)
    pipe.save_pretrained(out)
    return out


def build_qwen_lora(pipeline_dir: str | Path, out_dir: str | Path, seed: int = 0) -> Path:
    """Save random (non-zero) LoRA weights for the tiny Qwen-Image transformer in diffusers' format."""
    import torch
    from diffusers import QwenImageEditPipeline, QwenImageTransformer2DModel
    from peft import LoraConfig, get_peft_model_state_dict

    transformer = QwenImageTransformer2DModel.from_pretrained(Path(pipeline_dir) / "transformer")
    torch.manual_seed(seed)
    transformer.add_adapter(
        LoraConfig(r=2, lora_alpha=2, target_modules=["to_q", "to_k", "to_v", "to_out.0"], init_lora_weights=False)
    )
    out = Path(out_dir)
    QwenImageEditPipeline.save_lora_weights(out, transformer_lora_layers=get_peft_model_state_dict(transformer))
    return out


# --------------------------------------------------------------------------- diffusers-edit families
def _model_card(out: Path, licence: str) -> None:
    """A model card declaring ``licence`` in its front matter, as hub repos carry one."""
    (out / "README.md").write_text(
        f"---\nlicense: {licence}\n---\n\nA tiny random-weight test model.\n", encoding="utf-8"
    )


def t5_tokenizer() -> Any:
    """A T5 (Unigram) tokenizer over the test corpus's words and single letters, built offline."""
    from transformers import T5Tokenizer

    words = sorted(
        {w for s in _CORPUS for w in s.replace(".", " ").replace(",", " ").replace(";", " ").replace(":", " ").split()}
    )
    vocab = (
        [("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0)]
        + [("\u2581" + w, -1.0) for w in words]
        + [(c, -5.0) for c in "abcdefghijklmnopqrstuvwxyz"]
    )
    return T5Tokenizer(vocab=vocab, extra_ids=0)


def tiny_flux_kontext(inpaint: bool = False, seed: int = 0) -> Any:
    """A FluxKontext(Inpaint)Pipeline with one double and one single block (as diffusers' tests
    build it), a 2-layer CLIP and T5 with tokenizers trained here, a one-block VAE."""
    import torch
    from diffusers import (
        AutoencoderKL,
        FlowMatchEulerDiscreteScheduler,
        FluxKontextInpaintPipeline,
        FluxKontextPipeline,
        FluxTransformer2DModel,
    )
    from transformers import CLIPTextConfig, CLIPTextModel, T5Config, T5EncoderModel

    torch.manual_seed(seed)
    transformer = FluxTransformer2DModel(
        patch_size=1,
        in_channels=4,
        num_layers=1,
        num_single_layers=1,
        attention_head_dim=16,
        num_attention_heads=2,
        joint_attention_dim=32,
        pooled_projection_dim=32,
        axes_dims_rope=[4, 4, 8],
        guidance_embeds=True,
    )
    clip_tok, t5_tok = clip_tokenizer(), t5_tokenizer()
    torch.manual_seed(seed)
    clip = CLIPTextModel(
        CLIPTextConfig(
            vocab_size=len(clip_tok),
            hidden_size=32,
            intermediate_size=37,
            num_hidden_layers=2,
            num_attention_heads=4,
            max_position_embeddings=77,
            projection_dim=32,
            bos_token_id=clip_tok.bos_token_id,
            eos_token_id=clip_tok.eos_token_id,
            pad_token_id=clip_tok.pad_token_id,
        )
    )
    torch.manual_seed(seed)
    t5 = T5EncoderModel(
        T5Config(
            vocab_size=len(t5_tok),
            d_model=32,
            d_kv=8,
            d_ff=37,
            num_layers=2,
            num_heads=4,
            relative_attention_num_buckets=8,
            feed_forward_proj="gated-gelu",
            is_encoder_decoder=False,
            use_cache=False,
        )
    )
    torch.manual_seed(seed)
    vae = AutoencoderKL(
        sample_size=32,
        in_channels=3,
        out_channels=3,
        block_out_channels=(4,),
        layers_per_block=1,
        latent_channels=1,
        norm_num_groups=1,
        use_quant_conv=False,
        use_post_quant_conv=False,
        shift_factor=0.0609,
        scaling_factor=1.5035,
    )
    cls = FluxKontextInpaintPipeline if inpaint else FluxKontextPipeline
    return cls(
        scheduler=FlowMatchEulerDiscreteScheduler(),
        vae=vae,
        text_encoder=clip,
        tokenizer=clip_tok,
        text_encoder_2=t5,
        tokenizer_2=t5_tok,
        transformer=transformer,
    )


def qwen3_chat_tokenizer() -> Any:
    """The Qwen tokenizer with a chat template that takes ``add_generation_prompt`` (FLUX.2 klein's prompt)."""
    tok = qwen_tokenizer()
    tok.chat_template = (
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )
    return tok


def tiny_flux2_klein(inpaint: bool = False, seed: int = 0) -> Any:
    """A Flux2Klein(Inpaint)Pipeline (distilled) with one double and one single block, a 2-layer
    Qwen3 text encoder and a one-block FLUX.2 VAE, as diffusers' klein tests build it."""
    import torch
    from diffusers import (
        AutoencoderKLFlux2,
        FlowMatchEulerDiscreteScheduler,
        Flux2KleinInpaintPipeline,
        Flux2KleinPipeline,
        Flux2Transformer2DModel,
    )
    from transformers import Qwen3Config, Qwen3ForCausalLM

    tok = qwen3_chat_tokenizer()
    torch.manual_seed(seed)
    transformer = Flux2Transformer2DModel(
        patch_size=1,
        in_channels=4,
        num_layers=1,
        num_single_layers=1,
        attention_head_dim=16,
        num_attention_heads=2,
        joint_attention_dim=16 * 2,
        timestep_guidance_channels=256,
        axes_dims_rope=[4, 4, 4, 4],
        guidance_embeds=False,
    )
    torch.manual_seed(seed)
    encoder = Qwen3ForCausalLM(
        Qwen3Config(
            intermediate_size=16,
            hidden_size=16,
            num_hidden_layers=2,
            num_attention_heads=2,
            num_key_value_heads=2,
            head_dim=8,
            vocab_size=len(tok) + 8,
            max_position_embeddings=1024,
        )
    )
    torch.manual_seed(seed)
    vae = AutoencoderKLFlux2(
        sample_size=32,
        in_channels=3,
        out_channels=3,
        down_block_types=("DownEncoderBlock2D",),
        up_block_types=("UpDecoderBlock2D",),
        block_out_channels=(4,),
        layers_per_block=1,
        latent_channels=1,
        norm_num_groups=1,
        use_quant_conv=False,
        use_post_quant_conv=False,
    )
    cls = Flux2KleinInpaintPipeline if inpaint else Flux2KleinPipeline
    return cls(
        scheduler=FlowMatchEulerDiscreteScheduler(),
        vae=vae,
        text_encoder=encoder,
        tokenizer=tok,
        transformer=transformer,
        is_distilled=True,
    )


def tiny_longcat_edit(seed: int = 0) -> Any:
    """A LongCatImageEditPipeline: one double and one single block, the tiny Qwen2.5-VL, and a
    two-block VAE with the 16 latent channels the pipeline assumes."""
    import torch
    from diffusers import (
        AutoencoderKL,
        FlowMatchEulerDiscreteScheduler,
        LongCatImageEditPipeline,
        LongCatImageTransformer2DModel,
    )

    encoder, tokenizer, processor = qwen_vl_components(seed)
    torch.manual_seed(seed)
    transformer = LongCatImageTransformer2DModel(
        patch_size=1,
        in_channels=64,
        num_layers=1,
        num_single_layers=1,
        attention_head_dim=16,
        num_attention_heads=2,
        joint_attention_dim=16,
        pooled_projection_dim=16,
        axes_dims_rope=[4, 6, 6],
    )
    torch.manual_seed(seed)
    vae = AutoencoderKL(
        sample_size=32,
        in_channels=3,
        out_channels=3,
        down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
        up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"),
        block_out_channels=(8, 16),
        layers_per_block=1,
        latent_channels=16,
        norm_num_groups=4,
        use_quant_conv=False,
        use_post_quant_conv=False,
        shift_factor=0.0609,
        scaling_factor=1.5035,
    )
    return LongCatImageEditPipeline(
        scheduler=FlowMatchEulerDiscreteScheduler(),
        vae=vae,
        text_encoder=encoder,
        tokenizer=tokenizer,
        text_processor=processor,
        transformer=transformer,
    )


def tiny_qwen_inpaint(seed: int = 0) -> Any:
    """A QwenImageEditInpaintPipeline from the same tiny components as the Edit pipeline."""
    from diffusers import QwenImageEditInpaintPipeline

    base = tiny_qwen_pipeline(False, seed)
    return QwenImageEditInpaintPipeline(**base.components)


TINY_EDIT_FAMILIES: dict[str, tuple[str, str]] = {
    # family folder -> (builder, model-card licence)
    "flux-kontext": ("tiny_flux_kontext", "other"),
    "flux-kontext-inpaint": ("tiny_flux_kontext:inpaint", "other"),
    "flux2-klein": ("tiny_flux2_klein", "apache-2.0"),
    "flux2-klein-inpaint": ("tiny_flux2_klein:inpaint", "apache-2.0"),
    "longcat-image-edit": ("tiny_longcat_edit", "apache-2.0"),
    "qwen-image-edit-inpaint": ("tiny_qwen_inpaint", "apache-2.0"),
}


def build_edit_family(out_dir: str | Path, family: str, seed: int = 0) -> Path:
    """Save the tiny pipeline of ``family`` (a key of :data:`TINY_EDIT_FAMILIES`) with a model
    card to ``out_dir``; returns the folder (loaded back through ``from_pretrained`` by the editor)."""
    builder, licence = TINY_EDIT_FAMILIES[family]
    name, _, flag = builder.partition(":")
    fn = globals()[name]
    pipe = fn(inpaint=True, seed=seed) if flag == "inpaint" else fn(seed=seed)
    out = Path(out_dir)
    pipe.save_pretrained(out)
    _model_card(out, licence)
    return out
