"""Replies of a fake model server that a whole relational-erasure build accepts.

A responder for ``tests/dummy_server.py``: it reads the names out of the rendered prompt (the
server sees only the text and the images) and answers the RE instruction prompt, the RE
analysis prompt and the evaluation prompts in their required formats, the same way every time.
A build against it goes through instruct, edit, qa and review with real rows, so tests can
compare a build that met a failing server with one that never did. Other prompts get "not
applicable", which the instruct stage records as such.
"""

from __future__ import annotations

import re
from typing import Any

from dummy_server import Reply, message_text

_DELETE = re.compile(r"Proposed object to delete: (.+?), located in")
_SUBJECT = re.compile(r"^\s*subject: (.+)$", re.M)
_OBJECT = re.compile(r"^\s*object: (.+)$", re.M)
_REMOVED = re.compile(r'meant to delete "([^"]+)"')
_KEPT = re.compile(r'linked to "([^"]+)"')


def pipeline_reply(body: dict[str, Any]) -> Reply:
    text = message_text(body)
    if "Proposed object to delete:" in text:
        return Reply(_instruction(text))
    if "The edit was meant to delete" in text:
        return Reply(_analysis(text))
    if "Reply with the letter" in text or "letter>" in text:
        return Reply("Final answer: B" if "Final answer:" in text else "B")
    if "Yes or No" in text:
        return Reply("Final answer: No" if "Final answer:" in text else "No")
    if "Final answer:" in text:
        return Reply("Looking at the place, it is empty.\nFinal answer: nothing is there")
    return Reply("not applicable")


def _instruction(text: str) -> str:
    target = _DELETE.search(text).group(1).strip()  # type: ignore[union-attr]
    subject = _SUBJECT.search(text).group(1).strip()  # type: ignore[union-attr]
    obj = _OBJECT.search(text).group(1).strip()  # type: ignore[union-attr]
    keep = obj if subject == target else subject
    return (
        f"remove: {target}\nkeep: {keep}\n"
        f"instruction: Delete the {target} from the photo; keep the {keep}, the other objects and the background unchanged."
    )


def _analysis(text: str) -> str:
    removed = _REMOVED.search(text).group(1)  # type: ignore[union-attr]
    kept_match = _KEPT.search(text)
    kept = kept_match.group(1) if kept_match else "scene"
    head = removed.split()[-1].lower().rstrip("s")
    place = "the free space in the picture" if head in kept.lower() else f"the free space beside the {kept}"
    fields = {
        "verification_status": "pass",
        "verification_issues": "none",
        "discard": "no",
        "discard_reason": "none",
        "B_name": removed,
        "B_count_descriptor": "a",
        "A_location": place,
        "remaining_at_A": "bare background",
        "same_type_elsewhere": "no",
        "same_type_elsewhere_detail": "no",
        "common_knowledge": f"A {removed} is often seen together with a {kept}.",
        "attribute_type": "colour",
        "attribute_value": "dark grey",
        "attribute_option_1": "bright red",
        "attribute_option_2": "pale blue",
        "attribute_option_3": "deep green",
        "absurd_object_1": "teacup",
        "absurd_object_2": "violin",
        "B_full_desc": f"a {removed} standing right there next to the {kept}",
        "B_variant_1": f"two worn {removed} pieces lying flat on the floor",
        "B_variant_2": f"a broken {removed} tipped over on its side",
        "B_variant_3": f"a shiny new {removed} still wrapped in plastic",
        "B_variant_4": f"a tiny toy {removed} painted in bright colours",
        "nothing_desc": "only bare background with nothing standing on that spot",
    }
    return "\n".join(f"{k}: {v}" for k, v in fields.items())
