"""The word lists the offline ``rules`` answers draw from (instruct and analysis prompts).

Plain data shared by ``prompts/instruct_rules.py`` and ``prompts/analysis_rules.py``, so the
analysis offers wrong values from the same lists the instruction chose its value from.
"""

from __future__ import annotations

# Counter-commonsense values per direction (real-world, muted, no sci-fi), in a fixed order.
CA_VALUES: dict[str, tuple[str, ...]] = {
    "material": ("rough grey stone", "woven wicker", "brushed steel", "knitted wool", "cork", "clear glass", "terracotta clay", "braided rope", "polished marble", "corrugated cardboard", "hammered copper", "bamboo slats"),
    "colour": ("slate grey", "olive green", "dusty purple", "navy blue", "brick red", "mustard yellow", "teal", "charcoal black", "sand beige", "plum", "rust orange", "sage green"),
    "texture_pattern": ("a tree-bark texture", "a fish-scale pattern", "zebra-like stripes", "a woven basket texture", "a honeycomb pattern", "leopard-like spots", "a knitted cable pattern", "a crocodile-skin texture", "a checkerboard pattern", "a pebbled leather grain", "a marbled swirl pattern", "a quilted diamond pattern"),
    "state": ("thickly frosted over", "covered in fine sand", "soaking wet and dripping", "overgrown with green moss", "wrapped in cobwebs", "dusted with flour", "half buried in snow", "coated in dried mud", "sprouting small green shoots", "draped in wet seaweed", "crusted with salt crystals", "covered in autumn leaves"),
    "finish_gloss": ("mirror-polished chrome finish", "high-gloss lacquer", "matte chalky finish", "satin pearl sheen", "varnished wood gloss", "frosted matte finish", "wet-look glaze", "brushed satin metal finish", "oily iridescent sheen", "powder-coated flat finish", "glossy ceramic glaze", "waxed candle-like sheen"),
    "shape_structure": ("a perfectly cubic body", "a body stretched to twice its usual length", "a flat, disc-like body", "a spirally twisted body", "a body split into two stacked halves", "a sharp right-angle bend", "a perfectly spherical body", "a hexagonal outline", "a wavy, rippled outline", "a body with three identical segments", "a pyramid-shaped top", "a hollow ring shape"),
}
NATURAL_HINTS = ("apple", "banana", "orange", "fruit", "tree", "plant", "flower", "leaf", "grass", "dog", "cat", "horse", "cow", "sheep", "bird", "elephant", "zebra", "giraffe", "bear", "broccoli", "carrot", "pizza", "sandwich", "cake", "donut")
NATURAL_DIRECTIONS = ("colour", "texture_pattern", "state", "material", "finish_gloss")
MADE_DIRECTIONS = ("shape_structure", "material", "colour", "texture_pattern", "state", "finish_gloss")

SUBSTITUTES: dict[str, str] = {
    "apple": "orange", "orange": "lemon", "banana": "cucumber", "cup": "glass tumbler", "mug": "teacup", "chair": "stool",
    "bottle": "can", "car": "van", "book": "notebook", "plate": "bowl", "bowl": "plate", "spoon": "fork", "fork": "spoon",
    "pillow": "folded blanket", "clock": "framed photo", "lamp": "candle", "vase": "jar", "bag": "backpack", "hat": "cap",
    "sign": "banner", "bench": "stool", "window": "mirror", "flower": "fern", "bird": "pigeon", "cat": "dog", "dog": "cat",
}

# Attribute words the annotations use, wrong options and absurd choices of the analysis answers.
COLOURS = ("white", "black", "brown", "grey", "red", "blue", "green", "yellow", "orange", "pink", "purple", "silver", "tan", "beige")
MATERIALS = ("wooden", "metal", "plastic", "glass", "leather", "fabric", "stone", "rubber", "paper", "ceramic", "wood", "steel", "concrete", "brick")
ABSURD_OBJECTS = ("a grand piano", "a hot-air balloon", "an octopus", "a canoe", "a traffic cone", "a birthday cake", "a suit of armour", "a penguin", "a snowman", "a rocking horse")
ABSURD_ATTRIBUTES = ("made of smoke", "covered in feathers", "on fire", "dripping like wax", "made of jelly", "see-through like water")
ATTRIBUTE_TYPE_BY_DIRECTION = {
    "colour": "colour", "material": "material", "texture_pattern": "surface pattern", "state": "condition",
    "finish_gloss": "surface finish", "shape_structure": "shape",
}
SPATIAL_PREDICATES = ("on", "in", "under", "beneath", "below", "above", "over", "behind", "beside", "near", "next to", "inside", "in front of", "on top of", "against", "along", "at")
