"""Relational erasure's word lists: the spatial predicates its analysis recognises and the absurd
objects it offers as wrong options (used by its ``prompts.py`` alone)."""

from __future__ import annotations

SPATIAL_PREDICATES = (
    "on",
    "in",
    "under",
    "beneath",
    "below",
    "above",
    "over",
    "behind",
    "beside",
    "near",
    "next to",
    "inside",
    "in front of",
    "on top of",
    "against",
    "along",
    "at",
)

# Absurd choices of the analysis answers.
ABSURD_OBJECTS = (
    "a grand piano",
    "a hot-air balloon",
    "an octopus",
    "a canoe",
    "a traffic cone",
    "a birthday cake",
    "a suit of armour",
    "a penguin",
    "a snowman",
    "a rocking horse",
)
