"""Small English helpers for question rendering: articles, plurals, option normalisation.

Kept tiny and table-driven: question wording lives in the YAML templates, these only bend
single words so slot values read grammatically.
"""

from __future__ import annotations

import re

_VOWEL_SOUND_EXCEPTIONS_AN = ("hour", "honest", "honor", "honour", "heir")
_CONSONANT_SOUND_EXCEPTIONS_A = ("uni", "use", "usu", "uti", "one", "once", "euro", "ewe", "u-")
_IRREGULAR_PLURALS = {
    "person": "people",
    "man": "men",
    "woman": "women",
    "child": "children",
    "foot": "feet",
    "tooth": "teeth",
    "goose": "geese",
    "mouse": "mice",
    "sheep": "sheep",
    "deer": "deer",
    "fish": "fish",
    "leaf": "leaves",
    "knife": "knives",
    "shelf": "shelves",
    "loaf": "loaves",
    "wolf": "wolves",
    "calf": "calves",
    "glasses": "glasses",
    "scissors": "scissors",
    "jeans": "jeans",
    "pants": "pants",
    "shorts": "shorts",
}
_SPACE = re.compile(r"\s+")
_EDGE_PUNCT = " \t\n.,;:!?\"'"


def article(phrase: str) -> str:
    """``a`` or ``an`` for a noun phrase, by its first sound (good enough for object names)."""
    word = phrase.strip().lower()
    if not word:
        return "a"
    if word.startswith(_VOWEL_SOUND_EXCEPTIONS_AN):
        return "an"
    if word.startswith(_CONSONANT_SOUND_EXCEPTIONS_A):
        return "a"
    return "an" if word[0] in "aeiou" else "a"


def with_article(phrase: str) -> str:
    """``an apple``; a phrase that already starts with a determiner or number is left alone."""
    phrase = phrase.strip()
    first = phrase.split(" ", 1)[0].lower()
    if (
        first in {"a", "an", "the", "some", "two", "three", "four", "five", "six", "several", "many"}
        or first.isdigit()
    ):
        return phrase
    return f"{article(phrase)} {phrase}"


def plural(noun: str) -> str:
    """Plural of an object name; only the last word is inflected (``traffic light`` -> ``traffic lights``)."""
    noun = noun.strip()
    if not noun:
        return noun
    head, _, last = noun.rpartition(" ")
    low = last.lower()
    if low in _IRREGULAR_PLURALS:
        out = _IRREGULAR_PLURALS[low]
    elif low.endswith(("ss", "us", "is", "x", "z", "ch", "sh")):
        out = last + "es"
    elif low.endswith("s"):
        out = last  # already plural ("sea shells", "cupcakes")
    elif low.endswith("y") and len(low) > 1 and low[-2] not in "aeiou":
        out = last[:-1] + "ies"
    elif low.endswith("o") and low in {"tomato", "potato", "hero", "mango"}:
        out = last + "es"
    else:
        out = last + "s"
    return f"{head} {out}" if head else out


def normalize_option(text: str) -> str:
    """The comparison key for option distinctness: case-, whitespace- and edge-punctuation-insensitive."""
    return _SPACE.sub(" ", text.casefold()).strip(_EDGE_PUNCT)


_SPELLINGS = {"gray": "grey", "colour": "color", "coloured": "colored", "centre": "center", "grey-ish": "greyish"}
_NUMBER = re.compile(r"^-?\d+(?:\.\d+)?$")


def option_key(text: str) -> str:
    """A stricter key for near-duplicate options: :func:`normalize_option`, then leading articles
    dropped, British/American spellings and numerals unified and each word singular, so
    "The black sunglasses" / "Black sunglasses", "grey" / "gray" and "20" / "20.0" collide."""
    words = normalize_option(text).replace(",", " ").split()
    while words and words[0] in ("a", "an", "the"):
        words = words[1:]
    out = []
    for w in words:
        w = _SPELLINGS.get(w, w)
        if _NUMBER.match(w):
            w = repr(float(w)).removesuffix(".0")
        out.append(_singular(w))
    return " ".join(out)


def _singular(word: str) -> str:
    from storage.annotation.names import singular

    return singular(word)


def canonical(name: object) -> str:
    """An object name as the miner's canonical class (lowercase, no article, singular head)."""
    from storage.annotation.names import basic_name

    return basic_name(clean(name))


def sentence_case(text: str) -> str:
    """First letter upper-cased; the rest as written (names keep their case)."""
    return text[:1].upper() + text[1:] if text else text


def clean(value: object) -> str:
    """A slot value as a single-spaced, trimmed string (``None`` -> ``""``)."""
    if value is None:
        return ""
    return _SPACE.sub(" ", str(value)).strip()
