"""What the ``rules`` backend's instruct answers share: a seeded draw.

The answers themselves (what a careful annotator could say from annotations alone) live with
their tasks, each named by its spec's ``instruct_rules`` hook (the built-ins':
``tasks/builtin_tasks/<id>/prompts.py``), which ``prompts.rules.rules_table`` reads. Choices
that need variety are drawn by hashing the candidate id, so answers are deterministic and
independent of processing order.
"""

from __future__ import annotations

from storage.hashing import sha256_hex


def pick(seq: tuple[str, ...] | list[str], key: str) -> str:
    """One of ``seq``, chosen by the hash of ``key`` (the same key always picks the same item)."""
    return seq[int(sha256_hex(key), 16) % len(seq)]
