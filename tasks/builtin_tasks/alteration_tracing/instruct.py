"""AT's instruct-side hook: what the edit must leave alone (its edit plan is the core's default
instruction row, ``instruct_rows_edit_plan``)."""

from __future__ import annotations


def untouched_objects(fields: dict[str, object]) -> list[str]:
    """The ``untouched_objects`` hook of alteration tracing: the control object B', which its
    control questions say did not change (the edit stage's verification holds the edit to it)."""
    return [str(fields.get("B_prime") or "")]
