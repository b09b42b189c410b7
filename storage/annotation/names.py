"""Word-level forms of annotation names: trimmed, lowercased, article dropped, head word singular.

The miners count classes by these forms, the editors and the audit compare a model's words with
the annotations by them; one definition keeps "Wheels", "the wheel" and "wheel" the same word for
all of them. A vocabulary, not a store: it sits in the bottom layer because miners, editors and
tasks all read it, and siblings may not import one another. The miner-only rules (aliases,
synsets) are :class:`miners.canonical.Canonicalizer`'s.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

ARTICLES = ("a ", "an ", "the ")
_SPACES = re.compile(r"\s+")

# Words whose plural is irregular, or that look plural but are not.
IRREGULAR = {
    "men": "man",
    "women": "woman",
    "people": "person",
    "children": "child",
    "feet": "foot",
    "teeth": "tooth",
    "mice": "mouse",
    "geese": "goose",
    "oxen": "ox",
    "leaves": "leaf",
    "knives": "knife",
    "shelves": "shelf",
    "wolves": "wolf",
    "halves": "half",
    "loaves": "loaf",
    "scarves": "scarf",
    "calves": "calf",
    "lives": "life",
    "wives": "wife",
    "thieves": "thief",
    "dice": "die",
    "cacti": "cactus",
    "fungi": "fungus",
    "buses": "bus",
    "gases": "gas",
    "potatoes": "potato",
    "tomatoes": "tomato",
    "heroes": "hero",
    "echoes": "echo",
}
INVARIANT = {
    "glasses",
    "pants",
    "jeans",
    "shorts",
    "scissors",
    "sheep",
    "fish",
    "deer",
    "series",
    "species",
    "news",
    "grass",
    "bus",
    "gas",
    "tennis",
    "lens",
    "dress",
    "glass",
    "cross",
    "class",
    "moss",
    "boss",
    "chess",
    "mattress",
    "compass",
    "canvas",
    "cactus",
    "octopus",
    "circus",
    "campus",
    "virus",
    "status",
    "bonus",
    "bias",
    "atlas",
    "iris",
    "axis",
    "chassis",
    "trousers",
    "goggles",
    "binoculars",
    "tongs",
    "pliers",
    "clothes",
    "stairs",
    "suds",
    "headphones",
    "earphones",
    "sunglasses",
    "overalls",
    "leggings",
    "tights",
    "pajamas",
    "this",
    "is",
    "his",
    "yes",
    "us",
    "plus",
    "thus",
    "kiss",
    "hiss",
    "mess",
    "business",
    "princess",
    "waitress",
    "actress",
    "walrus",
    "asparagus",
    "hummus",
    "couscous",
    "hippopotamus",
    "rhinoceros",
    "platypus",
    "debris",
    "physics",
    # plural-only nouns (pluralia tantum): the singular is another word or none
    "sweatpants",
    "slacks",
    "tweezers",
    "shears",
    "spectacles",
    "eyeglasses",
    "underpants",
    "knickers",
    "briefs",
    "panties",
    "jodhpurs",
    "mathematics",
    "measles",
    "premises",
    "savings",
}


def singular(word: str) -> str:
    """English singular of one lowercase word, by rules good enough for object names."""
    if len(word) <= 2 or word in INVARIANT:
        return word
    if word in IRREGULAR:
        return IRREGULAR[word]
    if len(word) == 3 and word[1] in "aeiou":
        return word  # "vas", "has": a vowel before the s of a three-letter word is not a plural ("tvs", "ads" are)
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
    text = cleaned_name(raw)
    return singular_phrase(text) if text else ""


def basic_attribute(raw: str) -> str:
    """Attributes are trimmed, lowercased and single-spaced, not singularised ("glass" stays)."""
    return _clean(raw)


def basic_predicate(raw: str) -> str:
    """Predicates are trimmed, lowercased and single-spaced like attributes ("ON  top of" -> "on top of")."""
    return _clean(raw)


def cleaned_name(raw: str) -> str:
    """Lowercase, trimmed, single-spaced, without a leading article; nothing singularised."""
    text = _clean(raw)
    if text.startswith(ARTICLES):
        for art in ARTICLES:
            if text.startswith(art) and len(text) > len(art):
                return text[len(art) :].lstrip()
    return text


def singular_phrase(text: str) -> str:
    """The phrase with its head (last) word singular: "tee shirts" -> "tee shirt"."""
    head, _, last = text.rpartition(" ")
    last = singular(last)
    return f"{head} {last}" if head else last


def same_class(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two annotated objects (``name`` and, when the source gives one, ``synset``) are
    of one class: the same word form, or the same WordNet synset ("rock" and "stone" annotate
    one kind of thing when both carry ``stone.n.02``). A question naming one could mean the other."""
    if basic_name(str(a.get("name") or "")) == basic_name(str(b.get("name") or "")):
        return True
    sa, sb = a.get("synset"), b.get("synset")
    return bool(sa) and sa == sb


def class_members(name: str, objects: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Every object of ``objects`` in the class of the one(s) annotated as ``name``: those of
    that word form, and those sharing a synset with any of them."""
    objects = list(objects)
    named = [o for o in objects if basic_name(str(o.get("name") or "")) == basic_name(name)]
    probe = named or [{"name": name}]
    return [o for o in objects if any(same_class(o, p) for p in probe)]
