"""Fixtures of the fault tests. The finished demo build they copy before changing it (``demo_run``)
is the session's one, shared with other test folders (tests/conftest.py)."""
