"""Fine-grained hallucination spans (MHALO, papers/mhalo.txt section 2.3).

A detector marks hallucinated segments of a response with XML-style tags
(``<hallucination type="Object">two dogs</hallucination>``). Spans are token intervals over
the whitespace tokens of the *untagged* response; a detector that changes the response text
did not follow the instruction (``followed=False``) and scores zero, as in MHALO.

Metrics against reference spans, per response:
- F1_M: harmonic mean of the partial-match recall and precision (PM_R, PM_P, eq. 1-3);
- F1_IoU: 2 * M / (|pred| + |ref|), M the maximum bipartite matching of pairs with
  IoU >= 0.5 (eq. 4-6), found with augmenting paths (Kuhn).
Both are 1.0 when neither side marks anything (agreement that nothing is hallucinated).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Sequence

HALLUCINATION_TYPES: tuple[str, ...] = (
    "Object",
    "OCR",
    "Numerical Attribute",
    "Color Attribute",
    "Shape Attribute",
    "Spatial Attribute",
    "Numerical Relation",
    "Spatial Relation",
    "Logical Error",
    "Calculation Error",
    "Knowledge Error",
    "Query Misunderstanding",
)
_TYPE_KEYS = {re.sub(r"[^a-z]", "", t.lower()): t for t in HALLUCINATION_TYPES}

_TAG = re.compile(r"<hallucination(?:\s+type\s*=\s*[\"']([^\"']*)[\"'])?\s*>(.*?)</hallucination>", re.S | re.I)
_BLOCK = re.compile(r"<tagged_text>(.*?)</tagged_text>", re.S | re.I)


@dataclass(frozen=True)
class Span:
    """Half-open token interval [start, end) with an optional hallucination type."""

    start: int
    end: int
    type: str | None = None

    def __len__(self) -> int:
        return max(0, self.end - self.start)


def canonical_type(name: str | None) -> str | None:
    """Map a type as a model writes it ("logical errors", "**Color Attribute**") to one of the 12."""
    if not name:
        return None
    key = re.sub(r"[^a-z]", "", name.lower())
    if key in _TYPE_KEYS:
        return _TYPE_KEYS[key]
    if key.endswith("s") and key[:-1] in _TYPE_KEYS:
        return _TYPE_KEYS[key[:-1]]
    return None


def tokenize(text: str) -> list[tuple[int, int]]:
    """Character offsets of the whitespace tokens of ``text``."""
    return [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]


def char_to_token_span(tokens: list[tuple[int, int]], start: int, end: int) -> tuple[int, int] | None:
    """The tokens overlapping characters [start, end) as a half-open token interval."""
    idx = [i for i, (s, e) in enumerate(tokens) if s < end and e > start]
    return (idx[0], idx[-1] + 1) if idx else None


@dataclass(frozen=True)
class Detection:
    spans: tuple[Span, ...]
    followed: bool  # the untagged text equals the response (whitespace-insensitive)


def parse_tagged(tagged: str, response: str) -> Detection:
    """Spans of a detector's tagged copy of ``response``.

    The ``<Tagged_Text>`` block is used when present. Tags are removed to rebuild the plain
    text; if that differs from the response (beyond whitespace), ``followed`` is False.
    """
    block = _BLOCK.search(tagged or "")
    body = block.group(1) if block else (tagged or "")
    plain_parts: list[str] = []
    char_spans: list[tuple[int, int, str | None]] = []
    pos = 0
    cursor = 0
    for m in _TAG.finditer(body):
        before = body[cursor : m.start()]
        plain_parts.append(before)
        pos += len(before)
        inner = m.group(2)
        char_spans.append((pos, pos + len(inner), canonical_type(m.group(1))))
        plain_parts.append(inner)
        pos += len(inner)
        cursor = m.end()
    plain_parts.append(body[cursor:])
    plain = "".join(plain_parts)
    followed = plain.split() == (response or "").split()
    if not followed:
        return Detection((), False)
    tokens = tokenize(plain)
    spans = []
    for s, e, t in char_spans:
        tok = char_to_token_span(tokens, s, e)
        if tok:
            spans.append(Span(tok[0], tok[1], t))
    return Detection(tuple(sorted(set(spans), key=lambda x: (x.start, x.end, x.type or ""))), True)


def spans_from_phrases(response: str, phrases: Iterable[tuple[str, str | None]]) -> tuple[Span, ...]:
    """Token spans of every whole-word occurrence of each (phrase, type) in ``response``."""
    tokens = tokenize(response)
    out = set()
    for phrase, typ in phrases:
        if not phrase.strip():
            continue
        for m in re.finditer(rf"(?<!\w){re.escape(phrase)}(?:s|es)?(?!\w)", response, re.I):
            tok = char_to_token_span(tokens, m.start(), m.end())
            if tok:
                out.add(Span(tok[0], tok[1], typ))
    return tuple(sorted(out, key=lambda x: (x.start, x.end, x.type or "")))


def render_tagged(response: str, spans: Sequence[Span]) -> str:
    """The response with ``<hallucination type=...>`` tags around the given (non-overlapping) spans."""
    tokens = tokenize(response)
    out, cursor = [], 0
    for sp in sorted(spans, key=lambda s: s.start):
        if sp.start < 0 or sp.end > len(tokens) or len(sp) == 0:
            continue
        s, e = tokens[sp.start][0], tokens[sp.end - 1][1]
        if s < cursor:
            continue  # overlapping span: keep the first
        attr = f' type="{sp.type}"' if sp.type else ""
        out.append(response[cursor:s])
        out.append(f"<hallucination{attr}>{response[s:e]}</hallucination>")
        cursor = e
    out.append(response[cursor:])
    return "".join(out)


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
    return {"n": n, "F1_M": round(100 * fm / n, 4), "F1_IoU": round(100 * fi / n, 4), "IF": round(100 * followed / n, 4)}
