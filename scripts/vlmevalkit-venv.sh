#!/bin/bash
# Build the VLMEvalKit overlay venv: BASE_VENV's packages (torch, pandas, transformers, ...) plus
# VLMEvalKit and the few packages its dataset / evaluate path needs (scripts/vlmevalkit-requirements.txt).
# The overlay's own site-packages come first, so its antlr4 4.13 shadows the base's 4.7.2 (lmms-eval's
# pin) without touching the base venv. Idempotent: a stamp holding the requirements' hash skips a
# rebuild; uv links from its cache in seconds, pip is the fallback.
#   usage: scripts/vlmevalkit-venv.sh BASE_VENV TARGET_VENV
set -euo pipefail
base=$(cd "$1" && pwd)
target=$2
here=$(cd "$(dirname "$0")" && pwd)
req="$here/vlmevalkit-requirements.txt"
want=$( (cat "$req"; echo "$base") | sha256sum | cut -c1-16)
stamp="$target/.vlmevalkit-stamp"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    exit 0
fi
rm -rf "$target"
"$base/bin/python" -m venv --without-pip "$target"
purelib() { "$1" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'; }
echo "$(purelib "$base/bin/python")" > "$(purelib "$target/bin/python")/zz_reactbench_base.pth"
if [ -x "$base/bin/uv" ]; then
    "$base/bin/uv" pip install --quiet --python "$target/bin/python" --no-deps -r "$req"
else
    "$base/bin/python" -m pip install --quiet --python "$target/bin/python" --no-deps -r "$req"
fi
echo "$want" > "$stamp"
echo "vlmevalkit-venv: built $target"
