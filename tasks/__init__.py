"""Stages: plain-Python stage logic (mine, instruct, edit, qa, review, export, evaluate)."""

# The task registry installs itself into storage.task_spec (whose lookups every room reads): any
# process that imports a stage, the flows or a task plugin has it (tasks/engine/registry.py).
from tasks.engine import registry as _registry  # noqa: E402,F401
