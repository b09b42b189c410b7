"""MHALO span metrics (papers/mhalo.txt section 2.3) for scoring a span detector against references.

Per response:
- F1_M: harmonic mean of the partial-match recall and precision (PM_R, PM_P, eqs. 1-3). Read
  literally: PM_R(j) is 1 for an exact match, else the best |pred|/|ref_j| over predictions
  *inside* ref_j; PM_P(i) is 1 for an exact match, else the best |ref|/|pred_i| over
  references inside pred_i; anything else scores 0.
- F1_IoU: 2 * M / (|pred| + |ref|), M the maximum bipartite matching of pairs with
  IoU >= 0.5 (eqs. 4-6), found with augmenting paths (Kuhn), not greedily.
Both are 1.0 when neither side marks anything (agreement that nothing is hallucinated).
Parsing and rendering of tagged text live in ``prompts.eval_parsing``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from prompts.eval_parsing import Detection, Span


def iou(a: Span, b: Span) -> float:
    inter = max(0, min(a.end, b.end) - max(a.start, b.start))
    union = len(a) + len(b) - inter
    return inter / union if union else 0.0


def _contained(inner: Span, outer: Span) -> bool:
    return outer.start <= inner.start and inner.end <= outer.end


def _partial(target: Span, others: Sequence[Span]) -> float:
    """PM score of ``target``: 1 on an exact match, else the best |other|/|target| over others inside it."""
    best = 0.0
    for o in others:
        if (o.start, o.end) == (target.start, target.end):
            return 1.0
        if _contained(o, target) and len(target):
            best = max(best, len(o) / len(target))
    return best


def f1_m(pred: Sequence[Span], ref: Sequence[Span]) -> float:
    """Partial-match F1 of predicted against reference spans."""
    if not pred and not ref:
        return 1.0
    if not pred or not ref:
        return 0.0
    rec = sum(_partial(g, pred) for g in ref) / len(ref)
    prec = sum(_partial(p, ref) for p in pred) / len(pred)
    return 0.0 if rec + prec == 0 else 2 * rec * prec / (rec + prec)


def max_matching(pred: Sequence[Span], ref: Sequence[Span], threshold: float = 0.5) -> int:
    """Size of the maximum bipartite matching between spans whose IoU >= threshold."""
    edges = [[j for j, g in enumerate(ref) if iou(p, g) >= threshold] for p in pred]
    match_of_ref: dict[int, int] = {}

    def augment(i: int, seen: set[int]) -> bool:
        for j in edges[i]:
            if j in seen:
                continue
            seen.add(j)
            if j not in match_of_ref or augment(match_of_ref[j], seen):
                match_of_ref[j] = i
                return True
        return False

    return sum(1 for i in range(len(pred)) if augment(i, set()))


def f1_iou(pred: Sequence[Span], ref: Sequence[Span], threshold: float = 0.5) -> float:
    """2M / (|pred| + |ref|) with M the maximum IoU-thresholded matching."""
    if not pred and not ref:
        return 1.0
    return 2.0 * max_matching(pred, ref, threshold) / (len(pred) + len(ref))


def score_detections(items: Iterable[tuple[Detection, Sequence[Span]]]) -> dict[str, float | int]:
    """Mean F1_M and F1_IoU over responses (0 where the detector did not follow), and IF,
    the share of responses where it followed the format."""
    n = followed = 0
    fm = fi = 0.0
    for det, ref in items:
        n += 1
        if det.followed:
            followed += 1
            fm += f1_m(det.spans, ref)
            fi += f1_iou(det.spans, ref)
    if n == 0:
        return {"n": 0, "F1_M": 0.0, "F1_IoU": 0.0, "IF": 0.0}
    return {
        "n": n,
        "F1_M": round(100 * fm / n, 4),
        "F1_IoU": round(100 * fi / n, 4),
        "IF": round(100 * followed / n, 4),
    }
