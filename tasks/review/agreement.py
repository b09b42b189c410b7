"""Inter-annotator agreement for k-fold review: Cohen's kappa (two raters) and Fleiss' kappa (k raters)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from itertools import combinations


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float | None:
    """Cohen's kappa of two raters over the same items; None when undefined (no items, or
    both raters used a single identical label so chance agreement is 1)."""
    if len(a) != len(b):
        raise ValueError(f"rater sequences differ in length: {len(a)} != {len(b)}")
    n = len(a)
    if n == 0:
        return None
    p_o = sum(x == y for x, y in zip(a, b)) / n
    ca, cb = Counter(a), Counter(b)
    p_e = sum(ca[c] * cb[c] for c in set(ca) | set(cb)) / (n * n)
    if p_e >= 1.0:
        return None
    return (p_o - p_e) / (1.0 - p_e)


def fleiss_kappa(ratings: Sequence[Sequence[Hashable]]) -> float | None:
    """Fleiss' kappa over items that each have the same number (>= 2) of ratings; items with a
    different count are ignored (pass only complete items). None when undefined."""
    if not ratings:
        return None
    m = Counter(len(r) for r in ratings).most_common(1)[0][0]
    items = [r for r in ratings if len(r) == m]
    if m < 2 or not items:
        return None
    n_items = len(items)
    totals: Counter = Counter()
    p_bar = 0.0
    for r in items:
        counts = Counter(r)
        totals.update(counts)
        p_bar += (sum(c * c for c in counts.values()) - m) / (m * (m - 1))
    p_bar /= n_items
    p_e = sum((c / (n_items * m)) ** 2 for c in totals.values())
    if p_e >= 1.0:
        return None
    return (p_bar - p_e) / (1.0 - p_e)


def pairwise_cohen(
    labels: dict[str, dict[str, Hashable]], min_shared: int = 5
) -> dict[tuple[str, str], tuple[float | None, int]]:
    """Cohen's kappa for every pair of annotators with at least ``min_shared`` common items.

    ``labels``: {annotator: {item_id: label}}. Returns {(a, b): (kappa, shared items)}."""
    out: dict[tuple[str, str], tuple[float | None, int]] = {}
    for x, y in combinations(sorted(labels), 2):
        shared = sorted(set(labels[x]) & set(labels[y]))
        if len(shared) >= min_shared:
            out[(x, y)] = (cohen_kappa([labels[x][i] for i in shared], [labels[y][i] for i in shared]), len(shared))
    return out
