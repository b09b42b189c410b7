"""Reading evaluation answers: Yes/No, option letters, numbers, and tagged hallucination spans.

Models answer in prose, markdown, with chain-of-thought before the verdict, sometimes in
Chinese. The rule everywhere: an explicit final-answer marker wins; otherwise the start of
the reply (standard mode) or its last line (CoT mode); otherwise an unambiguous mention
anywhere. Ambiguity returns ``None`` (scored as wrong and counted as unparseable), never a guess.

Hallucination spans (MHALO, papers/mhalo.txt): a detector copies the response with XML-style
tags (``<hallucination type="Object">two dogs</hallucination>``). Spans are half-open token
intervals over the whitespace tokens of the *untagged* response; a detector that changes the
response text did not follow the instruction (``followed=False``).
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from typing import Iterable, Sequence

LETTERS = string.ascii_uppercase

_THINK = re.compile(r"<think>.*?</think>", re.S | re.I)
_FENCE = re.compile(r"```[a-zA-Z]*\n?|```")
_FINAL = re.compile(
    r"(?:final\s+answer|answer|conclusion|verdict|therefore|so\s+the\s+answer\s+is|答案|最终答案)\s*(?:is)?\s*[:：]?\s*",
    re.I,
)
_MARKDOWN = re.compile(r"[*_`#>]+")

_YES_WORDS = {"yes", "yeah", "yep", "true", "correct", "affirmative", "是", "有", "对"}
_NO_WORDS = {"no", "nope", "false", "incorrect", "negative", "否", "不是", "没有", "不", "无"}
_NEG_PHRASES = re.compile(
    r"\b(there\s+(?:is|are)\s+no|there\s+(?:isn't|aren't|is\s+not|are\s+not)|no\s+such|not\s+(?:present|visible|there)|"
    r"does\s+not|doesn't|cannot\s+see|can't\s+see|absent|nothing)\b",
    re.I,
)

_WORD_NUMBERS = {
    w: i
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
        "sixteen seventeen eighteen nineteen twenty".split()
    )
}


def clean(text: str | None) -> str:
    """Drop reasoning blocks, code fences and markdown emphasis; normalise whitespace per line."""
    if not text:
        return ""
    text = _THINK.sub(" ", text)
    text = _FENCE.sub(" ", text)
    text = _MARKDOWN.sub("", text)
    lines = [" ".join(line.split()) for line in text.splitlines()]
    return "\n".join(line for line in lines if line)


def answer_segment(text: str | None, cot: bool = False) -> str:
    """The part of a reply that holds the verdict: after the last final-answer marker, else
    the last line (CoT) or the first line (standard), else the whole reply."""
    body = clean(text)
    if not body:
        return ""
    matches = list(_FINAL.finditer(body))
    if matches:
        tail = body[matches[-1].end() :].strip()
        if tail:
            return tail.split("\n")[0].strip()
    lines = body.split("\n")
    return (lines[-1] if cot else lines[0]).strip()


def _tokens(text: str) -> list[str]:
    return re.findall(r"[a-z]+|[\u4e00-\u9fff]+", text.lower())


def _yn_of(segment: str) -> str | None:
    toks = _tokens(segment)
    if not toks:
        return None
    first = toks[0]
    if first in _YES_WORDS:
        return "Yes"
    if first in _NO_WORDS:
        return "No"
    for zh_no in ("不是", "没有", "否"):
        if segment.strip().startswith(zh_no):
            return "No"
    if segment.strip()[:1] in ("是", "有", "对"):
        return "Yes"
    yes = any(t in ("yes",) for t in toks)
    no = any(t in ("no",) for t in toks)
    if yes != no:
        return "Yes" if yes else "No"
    return None


def extract_yes_no(text: str | None, cot: bool = False) -> str | None:
    """``"Yes"``, ``"No"`` or ``None`` when the reply does not commit to one."""
    seg = answer_segment(text, cot)
    found = _yn_of(seg)
    if found:
        return found
    body = clean(text)
    words = set(_tokens(body))
    has_yes, has_no = "yes" in words, "no" in words
    if has_yes != has_no:
        return "Yes" if has_yes else "No"
    if not has_yes and not has_no and _NEG_PHRASES.search(seg or body):
        return "No"
    return None


def _letter_patterns(letters: str) -> list[re.Pattern[str]]:
    L = f"[{letters}]"
    return [
        re.compile(rf"(?:answer|option|choice|select|choose|pick)\s*(?:is|would\s+be|:|：)?\s*[(\[]?({L})\b(?![a-z'])", re.I),
        re.compile(rf"^\s*[(\[]?({L})[)\].:：]?\s*$"),  # a bare letter
        re.compile(rf"^\s*[(\[]?({L})[)\].:：](?:\s|$)"),  # "B. text", "(B) text", "B: text"
        re.compile(rf"[(\[]({L})[)\]]"),  # "(B)" anywhere
    ]


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def extract_choice(text: str | None, options: list[str] | None, cot: bool = False) -> str | None:
    """The chosen option letter, or ``None``.

    Accepts "B", "(B)", "B.", "**B**", "Answer: B", "option B", "B: <option text>", or the
    option's own text when exactly one option is quoted. An "A" that is an English article
    ("A cat sits ...") is not a choice.
    """
    n = len(options or []) or 5
    letters = LETTERS[:n]
    body = clean(text)
    if not body:
        return None
    seg = answer_segment(text, cot)
    pats = _letter_patterns(letters)
    for where in (seg, body):
        # Explicit answer markers in the whole body: the last one wins (CoT restates).
        hits = [m.group(1).upper() for m in pats[0].finditer(where)]
        if hits:
            return hits[-1]
        for pat in pats[1:3]:
            m = pat.search(where)
            if m and not _is_article(where, m):
                return m.group(1).upper()
        paren = {m.group(1).upper() for m in pats[3].finditer(where)}
        if len(paren) == 1:
            return paren.pop()
        by_text = _match_option_text(where, options or [])
        if by_text:
            return by_text
    return None


def _is_article(where: str, m: re.Match[str]) -> bool:
    """"A" followed by a lowercase word is the article, not option A."""
    if m.group(1).upper() != "A":
        return False
    rest = where[m.end(1) :]
    return bool(re.match(r"\s+[a-z]", rest))


def _match_option_text(where: str, options: list[str]) -> str | None:
    target = _norm(where)
    if not target:
        return None
    hits = []
    for i, opt in enumerate(options):
        o = _norm(opt)
        if o and re.search(rf"\b{re.escape(o)}\b", target):
            hits.append((len(o), LETTERS[i]))
    if not hits:
        return None
    hits.sort(reverse=True)
    if len(hits) > 1 and hits[0][0] == hits[1][0]:
        return None
    return hits[0][1]


def extract_number(text: str | None, cot: bool = False) -> int | None:
    """The first whole number of the answer segment (digits or English words up to twenty)."""
    for where in (answer_segment(text, cot), clean(text)):
        m = re.search(r"(?<![\d.])(\d{1,6})(?![\d.]*\d)", where.replace(",", ""))
        if m:
            return int(m.group(1))
        for tok in _tokens(where):
            if tok in _WORD_NUMBERS:
                return _WORD_NUMBERS[tok]
    return None


_RANGE = re.compile(r"(\d{1,6})\s*(?:-|–|—|~|to|and|至|到)\s*(\d{1,6})")


def extract_range(text: str | None, cot: bool = False) -> tuple[int, int] | None:
    """A numeric range "12-17", "12 to 17", "between 12 and 17" as (low, high), or ``None``."""
    for where in (answer_segment(text, cot), clean(text)):
        m = _RANGE.search(where.replace(",", ""))
        if m:
            lo, hi = int(m.group(1)), int(m.group(2))
            return (min(lo, hi), max(lo, hi))
    return None


def mentions(text: str, term: str) -> bool:
    """Whole-word, case-insensitive mention of ``term`` (or its simple plural) in ``text``."""
    t = _norm(term)
    if not t:
        return False
    pat = rf"\b{re.escape(t)}(?:s|es)?\b"
    return re.search(pat, _norm(text)) is not None


def negated_mention(text: str, term: str) -> bool:
    """``term`` is only mentioned to deny it ("there is no mustard", "the cup is gone").

    Each clause (split at punctuation and "but") that mentions the term must carry a
    negation before the term or a removal word after it.
    """
    if not mentions(text, term):
        return False
    t = _norm(term)
    for clause in re.split(r"[.,;:!?\n]|\bbut\b|\bhowever\b", text.lower()):
        c = _norm(clause)
        m = re.search(rf"\b{re.escape(t)}(?:s|es)?\b", c)
        if not m:
            continue
        before, after = c[: m.start()], c[m.end() :]
        if re.search(r"\b(no|not|without|neither|nor|never|isn t|aren t|there s no)\b", before):
            continue
        if re.search(r"\b(absent|missing|removed|gone|erased|no longer|not present|not visible)\b", after):
            continue
        return False
    return True


# -- hallucination spans ------------------------------------------------------------

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
    body = block.group(1) if block else re.sub(r"^\s*tagged[_ ]text\s*:\s*", "", tagged or "", flags=re.I)
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
