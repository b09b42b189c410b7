"""A counterfactual-attribute edit must replace the annotated attribute with one of the same kind:
recolouring a "parked" car leaves it parked, so "Is the car parked?" -> "No" would be a wrong gold
answer (found by the audit of a build with a diffusers editor beside `classical`)."""

from __future__ import annotations

import pytest

from storage.annotation.colours import colour_of, colours_apart
from tasks.builtin_tasks.counterfactual_attribute.prompts import NEAR_MATERIALS, ca_analysis, ca_instructions


def _ctx(attribute: str, cid: str = "c1") -> dict:
    return {
        "target_box": [10, 10, 60, 60],
        "attribute": attribute,
        "target_area": 0.1,
        "target_name": "car",
        "candidate_id": cid,
        "editor_limits": {},
        "target_location": "the lower left",
        "neighbour_names": ["tree"],
        "objects": [],
    }


def test_an_attribute_of_no_known_kind_gets_no_instruction():
    assert ca_instructions(_ctx("parked")) is None
    assert ca_instructions(_ctx("open")) is None


@pytest.mark.parametrize("colour", ["white", "red", "black", "grey", "green"])
def test_a_colour_is_replaced_by_a_colour_apart_from_it(colour):
    for i in range(20):
        out = ca_instructions(_ctx(colour, f"c{i}"))
        assert out["direction_a"] == "colour" and out["direction_b"] != "colour"  # two of the six directions
        v = out["new_attribute_a"]
        assert colour_of(v) is not None and colours_apart(colour_of(v), colour), (colour, v)


@pytest.mark.parametrize("material", sorted(NEAR_MATERIALS))
def test_a_material_is_never_replaced_by_one_a_grader_could_still_call_it(material):
    for i in range(20):
        out = ca_instructions(_ctx(material, f"m{i}"))
        assert out["direction_a"] == "material" and out["direction_b"] != "material"
        assert out["new_attribute_a"] not in NEAR_MATERIALS[material]


def test_an_analysis_whose_edit_changed_another_kind_of_attribute_is_discarded():
    base = {"target_name": "car", "target_box": [10, 10, 60, 60], "width": 200, "height": 200, "edit_id": "e1"}
    parked = ca_analysis({**base, "original_attribute": "parked", "new_attribute": "brick red", "direction": "colour"})
    assert parked["discard"] and "'parked' is neither a colour nor a material" in parked["discard_reason"]
    wooden = ca_analysis({**base, "original_attribute": "wooden", "new_attribute": "teal", "direction": "colour"})
    assert wooden["discard"] and "is a material" in wooden["discard_reason"]
    kept = ca_analysis({**base, "original_attribute": "white", "new_attribute": "teal", "direction": "colour"})
    assert not kept["discard"] and kept["attribute_type"] == "colour"
    # instruction b of a white car (another direction): the rules cannot tell its original of that kind
    other = ca_instructions(_ctx("white"))
    b = ca_analysis(
        {
            **base,
            "original_attribute": "white",
            "new_attribute": other["new_attribute_b"],
            "direction": other["direction_b"],
        }
    )
    assert b["discard"] and "is a colour" in b["discard_reason"]
