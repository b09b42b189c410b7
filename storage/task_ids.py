"""The four task ids, in benchmark order: the one place they are declared.

Configs validate against ``TaskId``; code that orders or lists tasks uses ``TASK_IDS``.
"""

from __future__ import annotations

from typing import Literal, get_args

TaskId = Literal["relational_erasure", "counterfactual_attribute", "alteration_tracing", "dense_counting"]
TASK_IDS: tuple[str, ...] = get_args(TaskId)
RELATIONAL_ERASURE, COUNTERFACTUAL_ATTRIBUTE, ALTERATION_TRACING, DENSE_COUNTING = TASK_IDS
VG_TASK_IDS: tuple[str, ...] = (RELATIONAL_ERASURE, COUNTERFACTUAL_ATTRIBUTE, ALTERATION_TRACING)  # mined from Visual Genome
PRIOR_TASK_IDS: tuple[str, ...] = (RELATIONAL_ERASURE, COUNTERFACTUAL_ATTRIBUTE)  # built on co-occurrence priors


def task_order(task: str) -> int:
    """Sort key: benchmark order, unknown tasks last."""
    return TASK_IDS.index(task) if task in TASK_IDS else len(TASK_IDS)
