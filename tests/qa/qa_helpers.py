"""Sample data for the QA tests: one complete, realistic field set per task (wording of our own),
and a builder for edit rows as the edit stage writes them."""

from __future__ import annotations

import json
from typing import Any

RE_FIELDS: dict[str, Any] = {
    "verification_status": "pass",
    "verification_issues": "none",
    "discard": False,
    "discard_reason": "none",
    "B_name": "skateboard wheels",
    "B_count_descriptor": "four",
    "A_location": "the underside of the blue skateboard lying on the carpet",
    "remaining_at_A": "the bare wooden deck with its two metal trucks",
    "same_type_elsewhere": False,
    "same_type_elsewhere_detail": "no",
    "common_knowledge": "A skateboard normally rolls on four wheels fixed under its deck.",
    "attribute_type": "material",
    "attribute_value": "rubber",
    "attribute_option_1": "rubber",
    "attribute_option_2": "polyurethane",
    "attribute_option_3": "hard plastic",
    "absurd_object_1": "four teacups",
    "absurd_object_2": "a sleeping cat",
    "B_full_desc": "four black wheels mounted on the metal trucks",
    "B_variant_1": "two wheels left, the other two missing",
    "B_variant_2": "four worn wheels that barely show",
    "B_variant_3": "oversized soft longboard wheels",
    "B_variant_4": "four clear wheels with tiny lights",
    "nothing_desc": "a bare deck underside with no wheels at all",
}

CA_FIELDS: dict[str, Any] = {
    "verification_status": "pass",
    "verification_issues": "none",
    "discard": False,
    "discard_reason": "none",
    "A_object": "rope",
    "A_number": "singular",
    "attribute_type": "shape",
    "B_original_attribute": "thin and round",
    "C_new_attribute": "flat and ribbon-like",
    "D_location": "in the woman's right hand",
    "D_alt_location": "in the middle of the image",
    "plausible_wrong_attribute_1": "thick and braided",
    "plausible_wrong_attribute_2": "coiled in loops",
    "absurd_attribute_1": "made of smoke",
    "absurd_attribute_2": "covered in feathers",
    "wrong_location_1": "on the horse's saddle",
    "wrong_location_2": "on the wooden fence",
    "wrong_location_3": "near the barn door",
}

AT_PLAN: dict[str, Any] = {
    "edit_type": "move",
    "instruction": "Move the black sunglasses from the woman's face to the top of her white hat; keep everything else unchanged.",
    "A": "the face of the woman in the white bucket hat",
    "B": "pair of black sunglasses",
    "C": "was moved up to rest on top of the hat brim",
    "A_prime": "the picnic blanket behind the woman",
    "B_prime": "red thermos",
    "C_prime": "was moved onto the picnic blanket",
    "overall_distractors": [
        "The red thermos on the blanket was swapped for a green glass bottle of lemonade.",
        "A second striped parasol was added to the left edge of the lawn near the trees.",
        "The woman's white hat was recoloured a pale yellow and tilted towards her left ear.",
    ],
    "location_distractors": [
        "The black sunglasses were replaced by round gold-rimmed reading glasses.",
        "The white bucket hat was taken off and placed on the grass.",
        "The woman's earrings were removed from both of her ears.",
    ],
    "object_location_distractors": [
        "the red thermos standing upright on the checked blanket behind the woman",
        "the half-eaten sandwich held in the woman's left hand near her lap",
        "the white parasol shading the group of people seated on the lawn",
    ],
    "b_prime_distractors": [
        "it was turned upside down",
        "its colour changed to blue",
        "it was moved next to the basket",
    ],
    "a_prime_distractors": [
        "a basket of apples appeared there",
        "the blanket's pattern became striped",
        "a folded newspaper was removed there",
    ],
    "c_prime_objects": ["sandwich", "paper cup", "straw basket"],
}

DC_FIELDS: dict[str, Any] = {"count": 20, "class_name": "cupcake"}

FIELDS = {
    "relational_erasure": RE_FIELDS,
    "counterfactual_attribute": CA_FIELDS,
    "alteration_tracing": AT_PLAN,
    "dense_counting": DC_FIELDS,
}


def make_edit(task: str, **over: Any) -> dict[str, Any]:
    """An ``edit/edits`` row as the edit stage writes it (schema EDITS)."""
    candidate = {
        "id": f"cand-{task}",
        "task": task,
        "variant": "targeted",
        "width": 300,
        "height": 200,
        "target_object_id": 1,
        "target_name": {
            "relational_erasure": "wheel",
            "counterfactual_attribute": "rope",
            "alteration_tracing": "sunglasses",
        }.get(task, "cupcake"),
        "target_box": [40.0, 120.0, 60.0, 30.0],
        "partner_name": "skateboard" if task == "relational_erasure" else None,
        "partner_box": [20.0, 100.0, 140.0, 40.0] if task == "relational_erasure" else None,
        "predicate": "on" if task == "relational_erasure" else None,
        "direction": "target_is_subject",
        "attribute": "brown" if task == "counterfactual_attribute" else None,
        "count": 20 if task == "dense_counting" else None,
        "class_name": "cupcake" if task == "dense_counting" else None,
        "context_json": json.dumps(
            [
                {"id": 1, "name": "wheel", "box": [40, 120, 60, 30], "attributes": ["black"]},
                {"id": 2, "name": "skateboard", "box": [20, 100, 140, 40], "attributes": ["blue"]},
                {"id": 3, "name": "carpet", "box": [0, 90, 300, 110], "attributes": []},
                {"id": 4, "name": "lamp", "box": [250, 10, 30, 60], "attributes": ["white"]},
                {"id": 5, "name": "boy", "box": [60, 10, 60, 100], "attributes": []},
            ]
        ),
    }
    fields = {
        "relational_erasure": {"remove": "wheel", "keep": "skateboard", "instruction": "x"},
        "counterfactual_attribute": {
            "slot": "a",
            "direction": "colour",
            "new_attribute": "slate grey",
            "original_attribute": "brown",
        },
        "alteration_tracing": AT_PLAN,
        "dense_counting": {"has_ambiguity": False, "severity": "none"},
    }[task]
    row = {
        "id": f"edit-{task}",
        "instruction_id": f"instr-{task}",
        "task": task,
        "variant": "targeted",
        "source": "fsc147" if task == "dense_counting" else "visual_genome",
        "image_id": "1",
        "image_path": "/nonexistent/1.jpg",
        "width": 300,
        "height": 200,
        "candidate_id": candidate["id"],
        "candidate_json": json.dumps(candidate, sort_keys=True),
        "instruction": "Remove the wheels; preserve the skateboard and background.",
        "edit_type": {
            "relational_erasure": "remove",
            "counterfactual_attribute": "attribute",
            "alteration_tracing": "move",
        }.get(task, "none"),
        "target_name": candidate["target_name"],
        "target_box": candidate["target_box"],
        "instruction_fields_json": json.dumps(fields, sort_keys=True),
        "editor": "classical",
        "editor_params_json": "{}",
        "seed": 7,
        "status": "ok",
        "original_image": "images/aa/aa00.png",
        "edited_image": "images/bb/bb00.png",
        "mask_image": None,
        "qc_json": "{}",
        "edit_seconds": None,
    }
    row.update(over)
    return row
