"""The ``reactbench`` executable.

A second writer on a locked run directory is refused before the CLI is imported (Typer, the
config schema and the stages take most of a second to load, several on a busy node), so the
refusal names the holder at once; everything else goes to the Typer app in ``flows.cli``.
"""

from __future__ import annotations

import sys


def main() -> None:
    from flows.cli_lock import LOCKED_EXIT, early_refusal

    message = early_refusal(sys.argv[1:])
    if message is not None:
        print(message, file=sys.stderr)
        raise SystemExit(LOCKED_EXIT)
    from flows.cli import app

    app()


if __name__ == "__main__":
    main()
