"""Dense counting (DC), a built-in task shaped like any plugin: its spec (``task.py``), miner,
mining thresholds, instruction rows, question slots and templates, evaluation and audit hooks."""

from tasks.builtin_tasks.dense_counting.task import TASK

__all__ = ["TASK"]
