"""The blind prior model: answers a question from its text alone, believing what the mined
statistics say a scene usually holds.

This is the cause ReactBench targets (SC-1, "blind prior assertion") turned into a model: it
never sees an image. Its beliefs come from the run's mine stage only:

- an object named in the question is there (the objects and co-occurring pairs the mine stage
  counted; a name it never counted is not there);
- an object has its usual attribute (``attribute_stats``: an attribute it carries in at least
  :data:`TYPICAL_ATTRIBUTE_P` of the object's annotations, or its most frequent one);
- a counted class holds its typical count (the median of the mined dense-counting candidates);
- of two pictures, nothing changed (the unedited world is the prior).

A targeted item it answers right does not probe the prior (the health report lists them). The
``prior`` evaluation backend (:mod:`prompts.clients.prior`) serves the same answers to
``reactbench eval``; the health report calls :func:`blind_answer` directly.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field

from prompts.offline_judge import is_denial
from prompts.vocabulary import COLOURS
from storage import addresses
from storage.fs import RunFS

TYPICAL_ATTRIBUTE_P = 0.25  # an attribute this frequent on the object counts as its usual one
_CHANGE = re.compile(
    r"\b(two pictures|changed?|replaced|removed|moved|added|identical|exactly the same|different|difference)\b", re.I
)
_NO_CHANGE_PHRASE = re.compile(
    r"\b(identical|exactly the same|is it true that no|unchanged|not changed|the same in both)\b", re.I
)
_EXACT = re.compile(r"\bexactly (\d+)\b", re.I)
_RANGE = re.compile(r"\b(?:from )?(\d+) (?:to|and) (\d+)\b", re.I)
_NUMBER_OPTION = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+))?\s*$")
_NUMBER_QUESTION = re.compile(r"\b(how many|number of|count)\b", re.I)
_RANGE_REQUEST = re.compile(r"\brange\b", re.I)
_COLOUR_QUESTION = re.compile(r"\bcolou?r\b", re.I)


@dataclass(frozen=True)
class PriorStats:
    """What the mine stage counted, as the blind model reads it (lower-cased names)."""

    objects: frozenset[str] = frozenset()
    attributes: dict[str, tuple[tuple[str, float], ...]] = field(default_factory=dict)  # object -> (attr, p) by p desc
    counts: dict[str, int] = field(default_factory=dict)  # counted class -> typical count

    @classmethod
    def build(
        cls,
        pairs: list[tuple[str, str]],
        attributes: list[tuple[str, str, float]],
        counts: list[tuple[str, int]],
    ) -> PriorStats:
        """From mined rows: co-occurring (a, b) names, (object, attribute, p(attribute | object)),
        (counted class, count) of every dense-counting candidate."""
        objects = {str(n).lower() for ab in pairs for n in ab if n}
        by_obj: dict[str, list[tuple[str, float]]] = {}
        for obj, attr, p in attributes:
            objects.add(str(obj).lower())
            by_obj.setdefault(str(obj).lower(), []).append((str(attr).lower(), float(p)))
        per_class: dict[str, list[int]] = {}
        for name, n in counts:
            if name and n is not None:
                per_class.setdefault(str(name).lower(), []).append(int(n))
        objects |= set(per_class)
        return cls(
            frozenset(objects),
            {o: tuple(sorted(v, key=lambda x: (-x[1], x[0]))) for o, v in by_obj.items()},
            {c: int(statistics.median_low(v)) for c, v in per_class.items()},
        )

    def vocabulary(self) -> re.Pattern[str]:
        """One whole-word pattern for every known name (longest first, simple plurals)."""
        return _pattern(tuple(self.objects))

    def usual(self, obj: str, attr: str) -> bool:
        """Whether ``attr`` is one of the object's usual attributes."""
        ranked = self.attributes.get(obj, ())
        return any(a == attr and (p >= TYPICAL_ATTRIBUTE_P or i == 0) for i, (a, p) in enumerate(ranked))

    def top_attribute(self, obj: str, colour: bool) -> str | None:
        """The object's most frequent attribute (a colour when the question asks for one)."""
        for a, _ in self.attributes.get(obj, ()):
            if not colour or a in COLOURS:
                return a
        return None


_PATTERNS: dict[tuple[str, ...], re.Pattern[str]] = {}


def _pattern(names: tuple[str, ...]) -> re.Pattern[str]:
    key = tuple(sorted(names))
    if key not in _PATTERNS:
        alts = "|".join(re.escape(n) for n in sorted(key, key=len, reverse=True)) or r"(?!x)x"
        _PATTERNS[key] = re.compile(rf"\b({alts})(?:s|es)?\b", re.I)
    return _PATTERNS[key]


def _named(text: str, stats: PriorStats) -> list[str]:
    """Known object names in ``text``, in order of appearance."""
    return [m.group(1).lower() for m in stats.vocabulary().finditer(text)]


def _attrs_named(text: str, obj: str, stats: PriorStats) -> list[str]:
    low = text.lower()
    return [a for a, _ in stats.attributes.get(obj, ()) if re.search(rf"\b{re.escape(a)}\b", low)]


def _believes(text: str, stats: PriorStats) -> bool:
    """Whether a statement (a yes/no question read as one) holds in the prior world."""
    if _CHANGE.search(text):
        return bool(_NO_CHANGE_PHRASE.search(text))  # nothing changed
    names = _named(text, stats)
    for obj in names:
        typical = stats.counts.get(obj)
        if typical is not None:
            exact = _EXACT.search(text)
            if exact:
                return int(exact.group(1)) == typical
            rng = _RANGE.search(text)
            if rng:
                return int(rng.group(1)) <= typical <= int(rng.group(2))
    for obj in names:
        attrs = [a for a in _attrs_named(text, obj, stats) if a not in names]
        mentioned = [a for a in attrs if a in COLOURS] or attrs
        if mentioned:
            return all(stats.usual(obj, a) for a in mentioned)
        if _COLOUR_QUESTION.search(text) and any(re.search(rf"\b{c}\b", text.lower()) for c in COLOURS):
            return False  # a colour the mine never saw on this object
    return bool(names)


def _number(option: str) -> tuple[int, int] | None:
    m = _NUMBER_OPTION.match(option)
    if not m:
        return None
    lo = int(m.group(1))
    return lo, int(m.group(2) or lo)


def _pick(text: str, options: list[str], stats: PriorStats) -> int:
    """The option the prior believes (index); the first one that does not deny, else the first."""
    numbers = [_number(o) for o in options]
    typical = next((stats.counts[o] for o in _named(text, stats) if o in stats.counts), None)
    if typical is not None and all(numbers):
        spans = [n for n in numbers if n is not None]
        return min(
            range(len(spans)),
            key=lambda i: (not spans[i][0] <= typical <= spans[i][1], abs(sum(spans[i]) / 2 - typical)),
        )
    affirm = [i for i, o in enumerate(options) if not is_denial(o)]
    if _CHANGE.search(text):
        deny = [i for i, o in enumerate(options) if is_denial(o)]
        return deny[0] if deny else 0
    for obj in _named(text, stats):
        ranked = [a for a, _ in stats.attributes.get(obj, ())]
        scored = [(ranked.index(o.strip().lower()), i) for i, o in enumerate(options) if o.strip().lower() in ranked]
        if scored:
            return min(scored)[1]
    known = [i for i in affirm if _named(options[i], stats)]
    return (known or affirm or [0])[0]


def blind_answer(qtype: str, text: str, options: list[str] | None, stats: PriorStats) -> str:
    """The blind prior model's answer: "Yes"/"No", an option letter, or a short answer."""
    options = list(options or [])
    if qtype == "YN":
        return "Yes" if _believes(text, stats) else "No"
    if qtype == "MC":
        return chr(65 + _pick(text, options, stats)) if options else "A"
    if _CHANGE.search(text):
        return "Nothing changed."
    names = _named(text, stats)
    counted = next((o for o in names if o in stats.counts), None)
    if counted is not None and (_NUMBER_QUESTION.search(text) or _RANGE_REQUEST.search(text)):
        typical = stats.counts[counted]
        return f"{max(0, typical - 2)}-{typical + 3}" if _RANGE_REQUEST.search(text) else str(typical)
    for obj in names:
        attr = stats.top_attribute(obj, bool(_COLOUR_QUESTION.search(text)))
        if _COLOUR_QUESTION.search(text) and attr:
            return attr
    return f"a {names[0]}" if names else "I cannot tell."


def load_prior_stats(run: RunFS) -> PriorStats:
    """The blind model's beliefs from a run's mine stage (``mine/pair_stats``, ``mine/attribute_stats``
    and the dense-counting ``mine/candidates``); fails naming the folder when the mine stage has not run."""
    readers = [a.reader(run) for a in (addresses.PAIR_STATS, addresses.ATTRIBUTE_STATS, addresses.CANDIDATES)]
    missing = [r for r in readers if not r.exists()]
    if len(missing) == len(readers):
        raise FileNotFoundError(
            f"{run.path('mine')}: no mined statistics (pair_stats, attribute_stats, candidates); run `reactbench build` first"
        )
    pairs: list[tuple[str, str]] = []
    attrs: list[tuple[str, str, float]] = []
    counts: list[tuple[str, int]] = []
    pair_r, attr_r, cand_r = readers
    if pair_r.exists():
        t = pair_r.read(["a", "b"])
        pairs = list(zip(t.column("a").to_pylist(), t.column("b").to_pylist()))
    if attr_r.exists():
        t = attr_r.read(["object", "attribute", "p_a_given_o"])
        attrs = list(zip(*(t.column(c).to_pylist() for c in ("object", "attribute", "p_a_given_o"))))
    if cand_r.exists():
        import pyarrow.compute as pc

        t = cand_r.read(["class_name", "count"])
        t = t.filter(pc.and_(pc.is_valid(t.column("class_name")), pc.is_valid(t.column("count"))))
        counts = list(zip(t.column("class_name").to_pylist(), t.column("count").to_pylist()))
    return PriorStats.build(pairs, attrs, counts)
