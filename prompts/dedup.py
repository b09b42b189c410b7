"""Near-duplicate counterfactuals (FREAK's deduplication step).

Two counterfactual attributes for the same object that say the same thing ("made of glass" /
"glass", "Navy-blue colour" / "navy blue") add no diversity to a benchmark. Keys are
normalised text always; when a local sentence-embedding model is configured, cosine
similarity above a threshold also counts as a duplicate. The first item (in the caller's
deterministic order) is kept; the others come back as duplicates of it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

FILLER = frozenset(
    "a an the of with made into its it is as and in on to look looks looking like appearance style "
    "colour color coloured colored texture textured pattern patterned surface finish finished shape shaped "
    "material state covered entire whole fully completely".split()
)


def normalise_attribute(text: str) -> str:
    """Lowercase words without filler, crude singular, sorted: a key that ignores wording."""
    words = re.findall(r"[a-z0-9]+", text.lower().replace("grey", "gray"))
    out = set()
    for w in words:
        if w in FILLER:
            continue
        if len(w) > 3 and w.endswith("es") and w[:-2].endswith(("sh", "ch", "x", "s")):
            w = w[:-2]
        elif len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
            w = w[:-1]
        out.add(w)
    return " ".join(sorted(out))


@dataclass(frozen=True)
class Duplicate:
    index: int  # position of the dropped item in the input
    kept: int  # position of the item it duplicates
    how: str  # "text" | "embedding"
    similarity: float


Embedder = Callable[[list[str]], list[list[float]]]


def find_duplicates(
    groups: Sequence[str], texts: Sequence[str], *, embed: Embedder | None = None, threshold: float = 0.9
) -> list[Duplicate]:
    """Duplicates among ``texts`` within the same group (e.g. the same object name)."""
    if len(groups) != len(texts):
        raise ValueError("groups and texts must have the same length")
    vectors = _unit(embed(list(texts))) if (embed is not None and texts) else None
    kept_by_group: dict[str, list[int]] = {}
    dups: list[Duplicate] = []
    for i, (g, t) in enumerate(zip(groups, texts)):
        key = normalise_attribute(t)
        found: Duplicate | None = None
        for j in kept_by_group.get(g, []):
            if key and key == normalise_attribute(texts[j]):
                found = Duplicate(i, j, "text", 1.0)
                break
            if vectors is not None:
                sim = sum(a * b for a, b in zip(vectors[i], vectors[j]))
                if sim >= threshold:
                    found = Duplicate(i, j, "embedding", round(float(sim), 6))
                    break
        if found:
            dups.append(found)
        else:
            kept_by_group.setdefault(g, []).append(i)
    return dups


def _unit(vectors: list[list[float]]) -> list[list[float]]:
    out = []
    for v in vectors:
        n = sum(x * x for x in v) ** 0.5 or 1.0
        out.append([x / n for x in v])
    return out


def transformers_embedder(model_path: str, device: str = "cpu") -> Embedder:
    """Mean-pooled sentence embeddings from a local transformers encoder (e.g. a MiniLM checkpoint folder)."""
    try:
        import torch
        from transformers import AutoModel, AutoTokenizer
    except ImportError as exc:  # pragma: no cover - the gpu extra is installed in tests
        raise ImportError(
            "embedding dedup needs torch and transformers: pip install 'reactbench-pipeline[gpu]'"
        ) from exc
    tok = AutoTokenizer.from_pretrained(model_path)
    model = AutoModel.from_pretrained(model_path).to(device).eval()

    def embed(texts: list[str]) -> list[list[float]]:
        with torch.inference_mode():
            enc = tok(texts, padding=True, truncation=True, max_length=64, return_tensors="pt").to(device)
            hidden = model(**enc).last_hidden_state
            mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        return pooled.float().cpu().tolist()

    return embed
