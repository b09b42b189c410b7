"""Name canonicalisation: one canonical form per class, used by every stage downstream.

Visual Genome names are free text ("Wheels", " the wheel", "a cup"); counting them raw
splits one class into many. The rules: lowercase, trim, collapse spaces, drop a leading
article, singularise the head (last) word; then the alias table (VG 1.4's
``object_alias.txt``: one line of synonyms, the first is kept). With ``canonical: synset``
an object with a WordNet synset is grouped by it and named by the synset's lemma
("wheel.n.01" -> "wheel"); objects without one fall back to the name rules.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable, Sequence

ARTICLES = ("a ", "an ", "the ")
_SPACES = re.compile(r"\s+")

# Words whose plural is irregular, or that look plural but are not.
IRREGULAR = {
    "men": "man", "women": "woman", "people": "person", "children": "child", "feet": "foot",
    "teeth": "tooth", "mice": "mouse", "geese": "goose", "oxen": "ox", "leaves": "leaf",
    "knives": "knife", "shelves": "shelf", "wolves": "wolf", "halves": "half", "loaves": "loaf",
    "scarves": "scarf", "calves": "calf", "lives": "life", "wives": "wife", "thieves": "thief",
    "dice": "die", "cacti": "cactus", "fungi": "fungus", "buses": "bus", "gases": "gas",
    "potatoes": "potato", "tomatoes": "tomato", "heroes": "hero", "echoes": "echo",
}
INVARIANT = {
    "glasses", "pants", "jeans", "shorts", "scissors", "sheep", "fish", "deer", "series", "species",
    "news", "grass", "bus", "gas", "tennis", "lens", "dress", "glass", "cross", "class", "moss",
    "boss", "chess", "mattress", "compass", "canvas", "cactus", "octopus", "circus", "campus",
    "virus", "status", "bonus", "bias", "atlas", "iris", "axis", "chassis", "trousers", "goggles",
    "binoculars", "tongs", "pliers", "clothes", "stairs", "suds", "headphones", "earphones",
    "sunglasses", "overalls", "leggings", "tights", "pajamas", "this", "is", "his", "yes", "us",
    "plus", "thus", "kiss", "hiss", "mess", "business", "princess", "waitress", "actress", "walrus",
    "asparagus", "hummus", "couscous", "hippopotamus", "rhinoceros", "platypus", "debris", "physics",
}


def singular(word: str) -> str:
    """English singular of one lowercase word, by rules good enough for object names."""
    if len(word) <= 2 or word in INVARIANT:
        return word
    if word in IRREGULAR:
        return IRREGULAR[word]
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "shes", "ches", "xes", "zzes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is", "'s")):
        return word[:-1]
    return word


def _clean(raw: str) -> str:
    text = raw.strip().lower()
    if "  " in text or "\t" in text or "\n" in text or "\r" in text:
        text = _SPACES.sub(" ", text)
    return text


def basic_name(raw: str) -> str:
    """Lowercase, trimmed, single-spaced, without a leading article, head word singular."""
    text = _clean(raw)
    if text.startswith(ARTICLES):
        for art in ARTICLES:
            if text.startswith(art) and len(text) > len(art):
                text = text[len(art) :].lstrip()
                break
    if not text:
        return ""
    head, _, last = text.rpartition(" ")
    last = singular(last)
    return f"{head} {last}" if head else last


def basic_attribute(raw: str) -> str:
    """Attributes are trimmed, lowercased and single-spaced, not singularised ("glass" stays)."""
    return _clean(raw)


def basic_predicate(raw: str) -> str:
    return _clean(raw)


def synset_lemma(synset: str) -> str:
    """``'wheel.n.01'`` -> ``'wheel'``; ``'traffic_light.n.01'`` -> ``'traffic light'``."""
    head = synset.strip().lower().split(".")[0]
    return head.replace("_", " ")


def read_alias_file(path: str | Path) -> list[list[str]]:
    """VG alias file: each line a comma-separated list of synonyms; the first is canonical."""
    groups = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        words = [w for w in (p.strip() for p in line.split(",")) if w]
        if len(words) > 1:
            groups.append(words)
    return groups


class Canonicalizer:
    """Maps raw names (and synsets) to canonical class names, memoising every raw string seen.

    The memo matters at VG scale: ~3.8M object names but only ~100k distinct raw strings.
    """

    def __init__(self, mode: str = "name", aliases: Iterable[Sequence[str]] = ()):
        if mode not in ("name", "synset"):
            raise ValueError(f"canonical mode must be 'name' or 'synset', got {mode!r}")
        self.mode = mode
        self.alias: dict[str, str] = {}
        for group in aliases:
            target = basic_name(group[0])
            for word in group[1:]:
                b = basic_name(word)
                if b and b != target:
                    self.alias[b] = target
        self._memo: dict[str, str] = {}

    def name(self, raw: str) -> str:
        """Canonical form of a raw name ("" when nothing is left)."""
        got = self._memo.get(raw)
        if got is None:
            b = basic_name(raw)
            got = self.alias.get(b, b)
            self._memo[raw] = got
        return got

    def object_name(self, raw: str, synsets: Sequence[str] | None) -> str:
        """The class of an annotated object: by synset in ``synset`` mode when one is given."""
        if self.mode == "synset" and synsets:
            return self.name(synset_lemma(synsets[0]))
        return self.name(raw)


class PredicateCanonicalizer:
    """Predicates: lowercase/trim/collapse, then VG's ``relationship_alias.txt`` when given."""

    def __init__(self, aliases: Iterable[Sequence[str]] = ()):
        self.alias: dict[str, str] = {}
        for group in aliases:
            target = basic_predicate(group[0])
            for word in group[1:]:
                self.alias[basic_predicate(word)] = target
        self._memo: dict[str, str] = {}

    def __call__(self, raw: str) -> str:
        got = self._memo.get(raw)
        if got is None:
            b = basic_predicate(raw)
            got = self.alias.get(b, b)
            self._memo[raw] = got
        return got
