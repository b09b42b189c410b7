"""The embedding half of the offline judge, on a tiny random BERT saved and loaded the way a
real local encoder is (``from_pretrained(folder)``), with a tokenizer trained here."""

from __future__ import annotations

import pytest
from eval_helpers import write_run

from storage.parquet_io import ArtifactReader
from tasks.release.evaluate.embed_judge import EmbeddingModelMissing, accept_paraphrase, load_encoder
from tasks.release.evaluate.run import EvalRequest, run_eval
from tasks.release.evaluate.schemas import ANSWERS


@pytest.fixture(scope="module")
def tiny_encoder(tmp_path_factory):
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
    from transformers import BertConfig, BertModel, BertTokenizerFast

    out = tmp_path_factory.mktemp("tiny-encoder")
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    corpus = [
        "the cup on the table was removed",
        "nothing changed between the two pictures",
        "a lamp glows in the corner",
        "blue yellow banana mustard",
    ] * 5
    tok.train_from_iterator(
        corpus,
        trainers.WordPieceTrainer(vocab_size=120, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]),
    )
    BertTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    ).save_pretrained(out)
    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=tok.get_vocab_size(),
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
    )
    BertModel(cfg).save_pretrained(out)
    return str(out)


def test_encoder_loads_from_folder_and_compares(tiny_encoder):
    enc = load_encoder(tiny_encoder)
    same = enc.similarity("the cup was removed", ["the cup was removed", "a lamp glows"])
    assert same[0] == pytest.approx(1.0, abs=1e-5) and same[1] < 1.0
    ok, sim = accept_paraphrase(enc, "the cup was removed", ["the cup was removed"], [], 0.99)
    assert ok and sim == pytest.approx(1.0, abs=1e-4)
    # a prior term the answer is closer to blocks acceptance
    ok, _ = accept_paraphrase(enc, "mustard", ["a bare bun"], ["mustard"], -1.0)
    assert not ok
    with pytest.raises(EmbeddingModelMissing, match="embedding_model"):
        load_encoder("/nonexistent/encoder")


def test_eval_uses_embedding_judge_when_configured(tmp_path, eval_config, tiny_encoder):
    run = write_run(tmp_path / "r", verified=False)

    def at_sa(threshold: float) -> dict:
        cfg = eval_config.model_copy(
            update={
                "eval": eval_config.eval.model_copy(
                    update={"embedding_model": tiny_encoder, "embedding_threshold": threshold, "modes": ("standard",)}
                )
            }
        )
        out = run_eval(run, cfg, EvalRequest("rules:rules-v1", unverified=True, no_cache=True))
        rows = ArtifactReader(run, f"{out.folder}/answers", ANSWERS).rows()
        return next(
            r for r in rows if r["task"] == "alteration_tracing" and r["qtype"] == "SA" and r["question_set"] == "main"
        )

    strict = at_sa(1.0)  # "Nothing changed ..." is not a paraphrase of "the cup ... was removed"
    assert strict["judge"] == "rules+embedding" and not strict["correct"]
    lax = at_sa(-1.0)  # any similarity passes (no prior term for AT): the wiring accepts it
    assert lax["judge"] == "rules+embedding" and lax["correct"] and "cosine" in lax["judge_reason"]
    # a fallback on the prior is never rescued by similarity
    re_sa = ArtifactReader(run, "eval/rules-rules-v1-unverified/answers", ANSWERS).rows()
    re_row = next(r for r in re_sa if r["task"] == "relational_erasure" and r["qtype"] == "SA")
    assert not re_row["correct"] and re_row["prior_fallback"]
