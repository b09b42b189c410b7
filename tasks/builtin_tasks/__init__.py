"""The four built-in tasks, one module each, registered through the ``reactbench.tasks`` entry
points in pyproject.toml exactly as a third-party task is (see ``storage/task_spec.py`` and
``examples/spatial_relation``). A module holds its task's id literal and data; its hooks name
the functions in the rooms that do the work."""
