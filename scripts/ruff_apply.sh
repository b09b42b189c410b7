#!/usr/bin/env bash
# The one mechanical ruff pass ([tool.ruff] in pyproject.toml): safe lint fixes (import order,
# pyupgrade's annotation and import forms, getattr with a constant), then the formatter. Run it
# once on a clean, committed tree, from the repository root, after the branches are merged; the
# result is one commit of its own ("ruff format + safe fixes, no behaviour change").
# It stops if a finding remains that no safe fix covers: that one is fixed by hand.
set -euo pipefail
RUFF=${RUFF:-.venv/bin/ruff}
test -x "$RUFF" || RUFF=$(command -v ruff) || { echo "ruff not found: pip install -e '.[test]' (or set RUFF=)"; exit 1; }
"$RUFF" --version
"$RUFF" check --fix --exit-zero --quiet .   # safe fixes only (never --unsafe-fixes)
"$RUFF" format --quiet .
"$RUFF" check --fix --quiet .              # what formatting exposed (import blocks), then the check itself
"$RUFF" format --check .
echo "ruff: check and format --check pass"
