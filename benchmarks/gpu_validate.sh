#!/usr/bin/env bash
# Run benchmarks/gpu_validate.py on a CUDA machine's own Python (torch, transformers, accelerate
# preinstalled; no diffusers, no internet): install the wheels previously downloaded into
# benchmarks/.wheels (git-ignored; carried with the working tree), then run the script.
#
# Fill the folder once on a machine with a package index: `make gpu-wheels` (Python 3.12, x86-64
# Linux wheels, about 63 MiB: under the 64 MiB a device run carries). Then, from the device tool:
#   run(command='bash benchmarks/gpu_validate.sh --record 2>&1 | tee $OUT/gpu_validate.log; cp editors/gpu_timings.json $OUT/', carry=['benchmarks/.wheels'], timeout_s=540)
# Arguments go to the script (default: --size real).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
WHEELS=${WHEELS:-benchmarks/.wheels}
# The wheels whose module this Python cannot import (nothing it already has is touched; no
# resolver: the machine's torch, transformers, huggingface_hub, numpy, Pillow stay as they are).
todo=$("$PY" - "$WHEELS" <<'PYEOF'
import importlib.util, pathlib, sys
names = {"opencv_python_headless": "cv2"}
for whl in sorted(pathlib.Path(sys.argv[1]).glob("*.whl")):
    dist = whl.name.split("-")[0]
    if importlib.util.find_spec(names.get(dist, dist)) is None:
        print(whl)
PYEOF
)
need=$("$PY" -c "import importlib.util as u; print(' '.join(m for m in ('diffusers', 'pydantic', 'segment_anything', 'cv2') if u.find_spec(m) is None))")
if [ -n "$need" ] && [ -z "$todo" ]; then
  echo "missing $need and no wheels for it in $WHEELS (run \`make gpu-wheels\` where there is an index)"; exit 2
fi
if [ -n "$todo" ]; then
  "$PY" -m pip install --quiet --no-index --no-deps $todo
fi
export HF_HUB_OFFLINE=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
exec "$PY" benchmarks/gpu_validate.py "$@"
