"""The word lists the offline ``rules`` answers and the blind prior share: attribute words the
annotations use (colours, materials), from which the analysis answers draw wrong options.

A built-in task's own lists live in its package (``tasks/builtin_tasks/<id>/vocabulary.py``).
"""

from __future__ import annotations

# Attribute words the annotations use, wrong options of the analysis answers.
COLOURS = (
    "white",
    "black",
    "brown",
    "grey",
    "red",
    "blue",
    "green",
    "yellow",
    "orange",
    "pink",
    "purple",
    "silver",
    "tan",
    "beige",
)
MATERIALS = (
    "wooden",
    "metal",
    "plastic",
    "glass",
    "leather",
    "fabric",
    "stone",
    "rubber",
    "paper",
    "ceramic",
    "wood",
    "steel",
    "concrete",
    "brick",
)
