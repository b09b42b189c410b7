"""Alteration tracing's word list: what a ``replace`` edit substitutes for an object (used by its
``prompts.py`` alone)."""

from __future__ import annotations

SUBSTITUTES: dict[str, str] = {
    "apple": "orange",
    "orange": "lemon",
    "banana": "cucumber",
    "cup": "glass tumbler",
    "mug": "teacup",
    "chair": "stool",
    "bottle": "can",
    "car": "van",
    "book": "notebook",
    "plate": "bowl",
    "bowl": "plate",
    "spoon": "fork",
    "fork": "spoon",
    "pillow": "folded blanket",
    "clock": "framed photo",
    "lamp": "candle",
    "vase": "jar",
    "bag": "backpack",
    "hat": "cap",
    "sign": "banner",
    "bench": "stool",
    "window": "mirror",
    "flower": "fern",
    "bird": "pigeon",
    "cat": "dog",
    "dog": "cat",
}
