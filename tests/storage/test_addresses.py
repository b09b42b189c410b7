"""Artifact addresses and task ids are declared once (storage/addresses.py, the task registry of storage/task_spec.py)."""

from __future__ import annotations

import pytest

from storage import addresses
from storage.task_spec import task_ids, task_order

STAGE_ADDRESSES = [
    addresses.CANDIDATES,
    addresses.PAIR_STATS,
    addresses.ATTRIBUTE_STATS,
    addresses.INSTRUCTIONS,
    addresses.EDITS,
    addresses.ANALYSIS,
    addresses.QUESTIONS,
]


@pytest.mark.parametrize("address", STAGE_ADDRESSES, ids=lambda a: a.folder)
def test_each_stage_writes_its_artifacts_at_their_address(address: addresses.Address) -> None:
    from flows.stages import get_stage

    stage = get_stage(address.stage)
    assert stage.outputs[address.name] is address.schema
    assert address.folder == f"{stage.name}/{address.name}"


def test_task_ids_in_one_place() -> None:
    from tasks.engine.mine_config import MineConfig

    assert task_ids()[:4] == ("relational_erasure", "counterfactual_attribute", "alteration_tracing", "dense_counting")
    assert sorted(["dense_counting", "nope", "relational_erasure"], key=task_order) == [
        "relational_erasure",
        "dense_counting",
        "nope",
    ]
    with pytest.raises(ValueError, match="relational_erasure"):
        MineConfig(tasks=("relational_erasure", "dense_countnig"))
    assert set(MineConfig().model_dump()) >= set(task_ids()), "every registered task has its mine section"
