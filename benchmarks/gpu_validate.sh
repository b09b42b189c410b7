#!/usr/bin/env bash
# Run benchmarks/gpu_validate.py on a CUDA machine's own Python (torch, transformers, accelerate
# preinstalled; no diffusers, no internet): install the wheels previously downloaded into
# benchmarks/.wheels (git-ignored; carried with the working tree), then run the script.
#
# Fill the folder once on a machine with a package index: `make gpu-wheels` (Python 3.12, x86-64
# Linux wheels, about 63 MiB: under the 64 MiB a device run carries). Then, from the device tool:
#   run(command="bash benchmarks/gpu_validate.sh --record", carry=["benchmarks/.wheels"], timeout_s=540)
# Arguments go to the script (default: --size real).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
WHEELS=benchmarks/.wheels
missing=$("$PY" - <<'PYEOF'
import importlib.util
need = {"diffusers": "diffusers", "pydantic": "pydantic", "segment_anything": "segment-anything", "cv2": "opencv-python-headless"}
print(" ".join(pkg for mod, pkg in need.items() if importlib.util.find_spec(mod) is None))
PYEOF
)
if [ -n "$missing" ]; then
  ls "$WHEELS"/*.whl >/dev/null 2>&1 || { echo "missing $missing and no wheels in $WHEELS (see the header of $0)"; exit 2; }
  # Dependencies resolve against what the machine has (torch, transformers, huggingface_hub,
  # safetensors, numpy, Pillow) and the folder; if a pin cannot be met, the wheels go in as they are.
  "$PY" -m pip install --quiet --no-index --find-links "$WHEELS" $missing \
    || "$PY" -m pip install --quiet --no-index --no-deps "$WHEELS"/*.whl
fi
export HF_HUB_OFFLINE=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
exec "$PY" benchmarks/gpu_validate.py "$@"
