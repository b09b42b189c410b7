"""The alteration-tracing plan's control object B': one instance of its class, of another class
than the edited object (synonyms by synset included), clear of every changed place."""

from __future__ import annotations

from typing import Any

from tasks.builtin_tasks.alteration_tracing.prompts import at_edit_plan


def _ctx(objects: list[dict[str, Any]], target_synset: str | None = None) -> dict[str, Any]:
    return {
        "candidate_id": "c1",
        "task": "alteration_tracing",
        "width": 400,
        "height": 300,
        "target_name": "rock",
        "target_box": [20.0, 130.0, 20.0, 14.0],
        "target_synset": target_synset,
        "target_location": "the middle left part of the image",
        "assigned_edit_type": "move",
        "fallback_chain": [],
        "same_instance_count": 1,
        "editor_limits": {"limited": True, "kinds": ["move", "add", "remove", "replace"], "clone_from_image": True},
        "objects": objects,
        "object_names": sorted({o["name"] for o in objects}),
        "neighbour_names": [],
    }


def _o(name: str, x: float, y: float, synset: str | None = None) -> dict[str, Any]:
    o = {"name": name, "box": [x, y, 16.0, 16.0]}
    return {**o, "synset": synset} if synset else o


BASE = [_o("book", 150, 40), _o("cup", 200, 200), _o("lamp", 250, 60), _o("sign", 300, 150)]


def test_the_farthest_unique_object_of_another_class_is_the_control():
    plan = at_edit_plan(_ctx([*BASE, _o("ball", 370, 260)]))
    assert plan is not None and plan["B_prime"] == "ball"


def test_a_synonym_of_the_target_is_never_the_control():
    # the farthest object is a "stone": the edited "rock" shares its synset, so "the stone" could mean it
    plan = at_edit_plan(_ctx([*BASE, _o("stone", 370, 260, "stone.n.02")], target_synset="stone.n.02"))
    assert plan is not None and plan["B_prime"] != "stone", plan["B_prime"]
    # without synsets the two words are two classes, as the annotations say
    plan = at_edit_plan(_ctx([*BASE, _o("stone", 370, 260)]))
    assert plan is not None and plan["B_prime"] == "stone"


def test_a_class_with_two_instances_is_never_the_control():
    # "flower" and "blossom" annotate one class (one synset): "the flower" would be ambiguous
    objs = [*BASE, _o("flower", 370, 260, "flower.n.01"), _o("blossom", 90, 40, "flower.n.01")]
    plan = at_edit_plan(_ctx(objs))
    assert plan is not None and plan["B_prime"] not in ("flower", "blossom"), plan["B_prime"]
    objs = [*BASE, _o("ball", 370, 260), _o("ball", 90, 40)]
    plan = at_edit_plan(_ctx(objs))
    assert plan is not None and plan["B_prime"] != "ball"


def test_a_model_plan_with_an_ambiguous_control_fails_validation():
    import pytest
    from pydantic import ValidationError

    from tasks.builtin_tasks.alteration_tracing.prompts import ATEditPlan

    objs = [*BASE, _o("ball", 370, 260), _o("stone", 90, 40, "stone.n.02")]
    plan = at_edit_plan(_ctx(objs))
    assert plan is not None
    ATEditPlan.model_validate(plan, context=_ctx(objs))  # the rules' own choice validates
    same_kind = dict(plan, B_prime="stone", A_prime="the area around the stone in the upper left of the image")
    with pytest.raises(ValidationError, match="same kind of thing"):
        ATEditPlan.model_validate(same_kind, context=_ctx(objs, target_synset="stone.n.02"))
    twice = [*objs, _o("ball", 120, 220)]
    with pytest.raises(ValidationError, match="occurs once"):
        ATEditPlan.model_validate(dict(plan, B_prime="ball"), context=_ctx(twice))
