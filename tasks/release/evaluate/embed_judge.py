"""The embedding half of the offline short-answer judge (optional, where a local model is installed).

The rules judge only accepts answers that share the reference's words. A small local sentence
encoder (any ``AutoModel`` folder, e.g. a MiniLM) lets it also accept paraphrases: an answer the
rules call a plain mismatch (not a fallback on the prior) is accepted when its cosine similarity
to the reference reaches ``eval.embedding_threshold`` and exceeds its similarity to every prior
term. torch and transformers are imported only when a model is configured.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


class EmbeddingModelMissing(FileNotFoundError):
    """``eval.embedding_model`` does not point at a loadable local model folder."""


class Encoder:
    """Mean-pooled, L2-normalised sentence embeddings from a local transformers model."""

    def __init__(self, path: str):
        p = Path(path)
        if not (p / "config.json").is_file():
            raise EmbeddingModelMissing(
                f"eval.embedding_model: {path!r} is not a local model folder (no config.json); "
                "download a sentence encoder (e.g. sentence-transformers/all-MiniLM-L6-v2) and point the key at its folder, or set it to null"
            )
        from transformers import AutoModel, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(str(p))
        self.model = AutoModel.from_pretrained(str(p)).eval()

    def encode(self, texts: Sequence[str]) -> torch.Tensor:
        import torch

        batch = self.tokenizer(list(texts), padding=True, truncation=True, max_length=128, return_tensors="pt")
        with torch.inference_mode():
            hidden = self.model(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        return torch.nn.functional.normalize(pooled, dim=-1)

    def similarity(self, a: str, others: Sequence[str]) -> list[float]:
        if not others:
            return []
        vecs = self.encode([a, *others])
        return [float(v) for v in (vecs[1:] @ vecs[0])]


@lru_cache(maxsize=2)
def load_encoder(path: str) -> Encoder:
    return Encoder(path)


def accept_paraphrase(
    encoder: Encoder, answer: str, references: Sequence[str], prior_terms: Sequence[str], threshold: float
) -> tuple[bool, float]:
    """(accepted, best similarity to a reference): accepted when the best reference similarity
    reaches ``threshold`` and beats every prior term."""
    refs = [r for r in references if r]
    if not answer.strip() or not refs:
        return False, 0.0
    best = max(encoder.similarity(answer, refs))
    prior = max(encoder.similarity(answer, [t for t in prior_terms if t]) or [-2.0])
    return best >= threshold and best > prior, round(best, 4)
