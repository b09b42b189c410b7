"""Named colours as a viewer would call them, shared by the instruct and analysis rules, the audit
and the pixel verification, so a colour word means the same pixels everywhere.

A vocabulary, not a store: it sits in the bottom layer because prompts, editors and tasks all
read it, and those siblings may not import one another."""

from __future__ import annotations

import re

# Named colours as a viewer would call them: OpenCV hue centre (0-179) or None for achromatic,
# then (min saturation, max saturation, min value, max value) on OpenCV's 0-255 scales.
NAMED_COLOURS: dict[str, tuple[int | None, tuple[float, float, float, float]]] = {
    "red": (0, (70, 255, 50, 255)),
    "orange": (14, (70, 255, 80, 255)),
    "yellow": (28, (70, 255, 80, 255)),
    "gold": (24, (70, 255, 60, 255)),
    "green": (60, (60, 255, 40, 255)),
    "teal": (85, (60, 255, 40, 255)),
    "cyan": (90, (60, 255, 60, 255)),
    "turquoise": (88, (60, 255, 60, 255)),
    "blue": (115, (60, 255, 40, 255)),
    "navy": (118, (60, 255, 15, 170)),
    "purple": (140, (60, 255, 40, 255)),
    "violet": (140, (60, 255, 40, 255)),
    "pink": (165, (50, 255, 80, 255)),
    "magenta": (150, (70, 255, 60, 255)),
    "brown": (12, (70, 255, 20, 170)),
    "tan": (16, (40, 200, 80, 255)),
    "white": (None, (0, 60, 170, 255)),
    "black": (None, (0, 255, 0, 70)),
    "gray": (None, (0, 60, 60, 215)),
    "grey": (None, (0, 60, 60, 215)),
    "silver": (None, (0, 60, 110, 235)),
}
# Counter-commonsense candidates for a recolour: saturated, far apart in hue, rare on everyday objects.
COUNTER_COLOURS = ("purple", "teal", "pink", "orange", "blue", "green", "yellow", "red")


def hue_distance(a: float, b: float) -> float:
    """Distance of two OpenCV hues (0-179, circular)."""
    d = abs(a - b) % 180
    return min(d, 180 - d)


def colour_word(value: str) -> str | None:
    """The one named colour of an attribute value ("pink", "a pink colour"), else None."""
    words = [
        w
        for w in re.findall(r"[a-z]+", value.lower())
        if w not in {"a", "an", "the", "colour", "color", "coloured", "colored"}
    ]
    return words[0] if len(words) == 1 and words[0] in NAMED_COLOURS else None


def colours_apart(a: str, b: str, min_hue: float = 25.0) -> bool:
    """True when two named colours cannot be mistaken for one another (hue or lightness class differ)."""
    ca, cb = NAMED_COLOURS.get(a), NAMED_COLOURS.get(b)
    if ca is None or cb is None or a == b:
        return False
    if ca[0] is None or cb[0] is None:  # achromatic vs anything: apart unless both are grey-ish synonyms
        return not ({a, b} <= {"gray", "grey", "silver"})
    return hue_distance(ca[0], cb[0]) >= min_hue


# Shade words the CA value lists use, by the colour a viewer would call them.
SHADES = {
    "plum": "purple",
    "charcoal": "black",
    "beige": "tan",
    "sage": "green",
    "mustard": "yellow",
    "rust": "orange",
    "brick": "red",
    "slate": "grey",
    "olive": "green",
    "sand": "tan",
}


def colour_of(phrase: str) -> str | None:
    """The colour family a phrase names ("slate grey" -> grey, "plum" -> purple), else None."""
    words = re.findall(r"[a-z]+", (phrase or "").lower())
    for w in reversed(words):
        if w in NAMED_COLOURS:
            return w
    for w in words:
        if w in SHADES:
            return SHADES[w]
    return None
