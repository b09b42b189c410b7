"""The four built-in tasks, one package each (``<id>/``, shaped like ``examples/spatial_relation``:
``task.py`` the spec, and its miner, thresholds, hooks and question templates beside it),
registered through the ``reactbench.tasks`` entry points in pyproject.toml exactly as a
third-party task is. They import only ``tasks.plugin_api`` from the core (``lint-imports``), so
removing one is deleting its folder and its entry-point line."""
