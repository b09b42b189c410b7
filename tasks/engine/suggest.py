"""The commands that error messages and summaries tell a user to run, ready to paste back.

A run directory may contain spaces or shell characters (``runs/my run``); pasted unquoted, the
suggested command would run on another path or fail. Every suggestion is built here and its
arguments are shell-quoted (a plain path stays as it is).
"""

from __future__ import annotations

import shlex


def suggest(*args: str) -> str:
    """``reactbench ARGS...`` with every argument quoted for a POSIX shell."""
    return shlex.join(["reactbench", *map(str, args)])
