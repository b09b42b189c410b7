"""Near-duplicate counterfactual attributes: normalised text always, embeddings when a model is configured."""

from __future__ import annotations

from pathlib import Path

import pytest

from prompts.dedup import find_duplicates, normalise_attribute, transformers_embedder


def test_normalised_text_catches_rewordings() -> None:
    assert normalise_attribute("made of Glass") == normalise_attribute("glass")
    assert normalise_attribute("Navy-blue colour") == normalise_attribute("navy blue")
    assert normalise_attribute("zebra stripes") == normalise_attribute("a zebra stripe pattern")
    assert normalise_attribute("slate grey") == normalise_attribute("slate gray")
    assert normalise_attribute("navy blue") != normalise_attribute("brick red")


def test_duplicates_only_within_a_group_first_kept() -> None:
    groups = ["bench", "bench", "tree", "bench", "tree"]
    texts = ["made of glass", "dusty purple", "glass", "Glass", "dusty purple colour"]
    dups = find_duplicates(groups, texts)
    assert [(d.index, d.kept, d.how) for d in dups] == [(3, 0, "text")]
    with pytest.raises(ValueError):
        find_duplicates(["a"], [])


def test_embedding_similarity_with_a_local_encoder(tmp_path: Path) -> None:
    """A tiny random BERT with a locally trained WordPiece tokenizer, saved and loaded like a real one."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    wp = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    wp.pre_tokenizer = pre_tokenizers.Whitespace()
    wp.train_from_iterator(
        ["glass stone wicker navy blue purple red stripes spots"] * 10,
        trainers.WordPieceTrainer(vocab_size=120, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]"]),
    )
    tok = PreTrainedTokenizerFast(tokenizer_object=wp, pad_token="[PAD]", unk_token="[UNK]")
    torch.manual_seed(0)
    model = BertModel(
        BertConfig(
            vocab_size=len(tok), hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32
        )
    )
    model.save_pretrained(tmp_path / "enc")
    tok.save_pretrained(tmp_path / "enc")
    embed = transformers_embedder(str(tmp_path / "enc"))
    vecs = embed(["navy blue", "navy blue", "wicker"])
    assert len(vecs) == 3 and len(vecs[0]) == 16
    # identical text is always a duplicate; threshold 1.01 means nothing else can be
    texts = ["navy blue", "stone", "wicker"]
    assert find_duplicates(["x"] * 3, texts, embed=embed, threshold=1.01) == []
    dups = find_duplicates(["x"] * 3, texts, embed=embed, threshold=-1.0)
    assert [(d.index, d.kept, d.how) for d in dups] == [(1, 0, "embedding"), (2, 0, "embedding")]
