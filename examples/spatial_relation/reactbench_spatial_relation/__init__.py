"""reactbench's fifth task as a separately installed plugin: spatial relations (SR).

A pair of object classes whose spatial relation has a dominant direction in Visual Genome
("cup on table") is broken by moving one object so that the relation no longer holds; the
questions ask about the relation in the edited picture. ``task.py`` holds the TaskSpec the
``reactbench.tasks`` entry point names; the other modules are its hooks.
"""
