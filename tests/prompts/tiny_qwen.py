"""A tiny random-weight Qwen2.5-VL with a locally trained tokenizer, saved like a real checkpoint.

Recipe from NOTES-offline-models.md: byte-level BPE (vocab ~400) wrapped as Qwen2Tokenizer,
hidden size 16, 2 layers, 2 heads, mrope_section [1, 1, 2], a Qwen2VLProcessor with small
min/max pixels, a video processor and our own chat template. Nothing touches a hub.
"""

from __future__ import annotations

from pathlib import Path

SPECIALS = [
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
    "<|endoftext|>",
]

CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

CORPUS = [
    "remove: wheel keep: skateboard instruction: Remove the wheel and preserve the background.",
    "has_ambiguity: false severity: none mild moderate severe",
    "You are helping to build a test set. Reply with exactly these lines and nothing else.",
    "the quick brown fox jumps over the lazy dog 0123456789 {}[]():;,.!?\"'",
] * 20


def build_tiny_qwen25_vl(out_dir: Path, seed: int = 0) -> Path:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import (
        Qwen2_5_VLConfig,
        Qwen2_5_VLForConditionalGeneration,
        Qwen2Tokenizer,
        Qwen2VLImageProcessor,
        Qwen2VLProcessor,
        Qwen2VLVideoProcessor,
    )

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=[]
    )
    bpe.train_from_iterator(CORPUS, trainer)
    model_json = __import__("json").loads(bpe.to_str())["model"]
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model_json["merges"]]
    tok = Qwen2Tokenizer(
        vocab=model_json["vocab"],
        merges=merges,
        extra_special_tokens=SPECIALS,
        unk_token=None,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
    )
    ids = {t: tok.convert_tokens_to_ids(t) for t in SPECIALS}
    processor = Qwen2VLProcessor(
        image_processor=Qwen2VLImageProcessor(
            min_pixels=28 * 28, max_pixels=56 * 56, patch_size=14, merge_size=2, temporal_patch_size=2
        ),
        tokenizer=tok,
        video_processor=Qwen2VLVideoProcessor(),
        chat_template=CHAT_TEMPLATE,
    )
    config = Qwen2_5_VLConfig(
        text_config={
            "vocab_size": len(tok),
            "hidden_size": 16,
            "intermediate_size": 32,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "num_key_value_heads": 1,
            "max_position_embeddings": 4096,
            "rope_parameters": {"rope_type": "default", "rope_theta": 1e6, "mrope_section": [1, 1, 2]},
            "eos_token_id": ids["<|im_end|>"],
            "pad_token_id": ids["<|endoftext|>"],
            "bos_token_id": None,
        },
        vision_config={
            "depth": 2,
            "hidden_size": 16,
            "intermediate_size": 32,
            "num_heads": 2,
            "out_hidden_size": 16,
            "patch_size": 14,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
            "window_size": 56,
            "fullatt_block_indexes": [1],
        },
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
    )
    torch.manual_seed(seed)
    model = Qwen2_5_VLForConditionalGeneration(config).eval()
    model.generation_config.eos_token_id = ids["<|im_end|>"]
    model.generation_config.pad_token_id = ids["<|endoftext|>"]
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    processor.save_pretrained(out_dir)
    return out_dir
