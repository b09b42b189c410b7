#!/usr/bin/env bash
# Build both images (scripts/images.sh) and run them: `make images-test`.
#
#   CPU image : `reactbench --help`, no Prefect server needed; runs as uid 1000, not root; the demo
#               (sample data, `reactbench build --config configs/demo.yaml`) and its audit, which
#               must report fraction 1.0; `worker` without PREFECT_API_URL says so in one line.
#   compose   : docker/compose.yaml with the Prefect server, the setup job and a CPU worker, all
#               from the CPU image; the deployments reactbench-stage/mine then instruct run the
#               demo config to Completed, and the worker's files are read back from the `runs`
#               volume by another container.
#   GPU image : `reactbench preflight` and `benchmarks/gpu_validate.py --size tiny` on the CPU
#               (benchmarks/ and tests/ mounted read-only: the image does not carry them).
#
# Every check that fails stops the script with a non-zero status; nothing is skipped. The last
# line is one JSON object of figures.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO="$PWD"
CPU="${REACTBENCH_CPU_IMAGE:-reactbench-cpu:latest}"
GPU="${REACTBENCH_GPU_IMAGE:-reactbench-gpu:latest}"
PROJECT="${REACTBENCH_COMPOSE_PROJECT:-reactbench-imagestest}"
WORK="$(mktemp -d /tmp/reactbench-images-test.XXXXXX)"
log() { echo "images-test: $*" >&2; }
fail() { echo "images-test: FAILED: $*" >&2; exit 1; }

builds="$WORK/builds.txt"
bash scripts/images.sh all | tee "$builds"
ENGINE="${REACTBENCH_ENGINE:-$(command -v docker >/dev/null && timeout 10 docker info >/dev/null 2>&1 && echo docker || echo podman)}"
field() { awk -v t="$1" -v n="$2" '$1 == "image" && $2 == t {print $n}' "$builds"; }
cpu_mb="$(field "$CPU" 3)"; cpu_s="$(field "$CPU" 7)"
gpu_mb="$(field "$GPU" 3)"; gpu_s="$(field "$GPU" 7)"

# --- CPU image ------------------------------------------------------------------------------
log "CPU image: reactbench --help without a Prefect server"
"$ENGINE" run --rm "$CPU" reactbench --help >"$WORK/help.txt" || fail "reactbench --help exited non-zero"
grep -q "build" "$WORK/help.txt" || fail "reactbench --help does not list build"

uid="$("$ENGINE" run --rm "$CPU" id -u)"
[ "$uid" != 0 ] || fail "the CPU image runs as root"

log "CPU image: worker without PREFECT_API_URL must refuse in one line"
set +e
"$ENGINE" run --rm "$CPU" worker >"$WORK/worker.out" 2>"$WORK/worker.err"; rc=$?
set -e
[ "$rc" = 2 ] && [ "$(wc -l <"$WORK/worker.err")" = 1 ] && grep -q PREFECT_API_URL "$WORK/worker.err" \
    || fail "worker without PREFECT_API_URL: exit $rc, stderr: $(cat "$WORK/worker.err")"

log "CPU image: the demo build and its audit as uid $uid"
"$ENGINE" run --rm "$CPU" bash -c '
    set -euo pipefail
    reactbench sample-data data/sample >/dev/null
    t0=$(date +%s.%N)
    reactbench build --config configs/demo.yaml --run-dir runs/demo >/dev/null
    t1=$(date +%s.%N)
    reactbench audit --run-dir runs/demo | tail -1
    python -c "import sys; print(\"demo_s\", round(float(sys.argv[2]) - float(sys.argv[1]), 1))" "$t0" "$t1"
' >"$WORK/demo.txt" || fail "demo build or audit in the CPU image"
demo_s="$(awk '$1 == "demo_s" {print $2}' "$WORK/demo.txt")"
audit_fraction="$(grep '^{' "$WORK/demo.txt" | tail -1 | python3 -c 'import json, sys; print(json.load(sys.stdin)["fraction"])')"
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) == 1.0 else 1)" "$audit_fraction" \
    || fail "audit fraction $audit_fraction, expected 1.0 ($(cat "$WORK/demo.txt"))"

# --- compose stack --------------------------------------------------------------------------
COMPOSE=(podman-compose)
[ "$ENGINE" = docker ] && COMPOSE=(docker compose)
compose() { "${COMPOSE[@]}" -p "$PROJECT" -f docker/compose.yaml "$@"; }
down() {
    compose down -v >/dev/null 2>&1 || true
    # podman-compose 1.0 leaves the project network behind; one made before the dnsname plugin
    # was installed would not resolve service names.
    [ "$ENGINE" = podman ] && { podman network rm -f "${PROJECT}_default" >/dev/null 2>&1 || true; }
    return 0
}
cleanup() {
    down
    rm -rf "$WORK"
}
trap cleanup EXIT
test -f data/sample/.complete || fail "data/sample missing: make sample (the compose workers mount ../data read-only)"

# The server's port on the host: a free one, so a Prefect server already on 4200 does not clash.
PREFECT_PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
export PREFECT_PORT
log "compose: Prefect server (host port $PREFECT_PORT) and CPU worker (from $CPU), then setup"
down
compose up -d prefect-server worker-cpu >"$WORK/up.log" 2>&1 || { cat "$WORK/up.log" >&2; fail "compose up"; }
compose run --rm --no-deps setup >"$WORK/setup.log" 2>&1 || { tail -30 "$WORK/setup.log" >&2; fail "compose setup"; }
grep -q "reactbench-stage/" "$WORK/setup.log" || fail "setup did not create the stage deployments"

log "compose: reactbench-stage/mine and /instruct with configs/demo.yaml on the CPU worker"
t0=$(date +%s.%N)
for stage in mine instruct; do
    compose run --rm --no-deps setup prefect deployment run "reactbench-stage/$stage" \
        --param config=configs/demo.yaml --param run_dir=runs/compose-demo --watch --watch-timeout 300 \
        >"$WORK/run-$stage.log" 2>&1 || { tail -30 "$WORK/run-$stage.log" >&2; compose logs worker-cpu 2>&1 | tail -40 >&2; fail "deployment $stage"; }
    grep -q "finished successfully in 'Completed'" "$WORK/run-$stage.log" || { tail -20 "$WORK/run-$stage.log" >&2; fail "deployment $stage did not complete"; }
done
compose_s="$(python3 -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 1))" "$t0" "$(date +%s.%N)")"
# The setup container mounts no volume: read the worker's output back through a fresh container on the volume.
vol="$("$ENGINE" volume ls --format '{{.Name}}' | grep -E "^${PROJECT}_runs$" | head -1)"
[ -n "$vol" ] || fail "no ${PROJECT}_runs volume"
"$ENGINE" run --rm -v "$vol:/opt/reactbench/runs:ro" "$CPU" bash -c \
    'test -n "$(ls runs/compose-demo/mine)" && test -n "$(ls runs/compose-demo/instruct)" && ls runs/compose-demo' >"$WORK/vol.txt" \
    || fail "the runs volume does not hold runs/compose-demo/{mine,instruct}"
down

# --- GPU image ------------------------------------------------------------------------------
log "GPU image: preflight and gpu_validate --size tiny on the CPU"
"$ENGINE" run --rm "$GPU" reactbench preflight --config configs/reactbench.yaml --gpus 1 --gpu-memory-gb 48 \
    >"$WORK/preflight.txt" 2>&1 || { tail -30 "$WORK/preflight.txt" >&2; fail "preflight in the GPU image"; }
[ "$("$ENGINE" run --rm "$GPU" id -u)" != 0 ] || fail "the GPU image runs as root"
"$ENGINE" run --rm -v "$REPO/benchmarks:/opt/reactbench/benchmarks:ro" -v "$REPO/tests:/opt/reactbench/tests:ro" \
    "$GPU" python benchmarks/gpu_validate.py --size tiny >"$WORK/gpu_validate.txt" 2>"$WORK/gpu_validate.err" \
    || { tail -30 "$WORK/gpu_validate.err" >&2; fail "gpu_validate --size tiny in the GPU image"; }
# Its JSON goes to stdout, the table to stderr.
tail -1 "$WORK/gpu_validate.txt" | python3 -c 'import json, sys; assert json.load(sys.stdin)["size"] == "tiny"' \
    || fail "gpu_validate's stdout did not end with its JSON line: $(tail -3 "$WORK/gpu_validate.txt")"

python3 - "$cpu_mb" "$gpu_mb" "$cpu_s" "$gpu_s" "$demo_s" "$audit_fraction" "$compose_s" <<'PY'
import json, sys
a = sys.argv[1:]
print(json.dumps({"cpu_image_mb": int(a[0]), "gpu_image_mb": int(a[1]), "cpu_build_s": float(a[2]),
                  "gpu_build_s": float(a[3]), "demo_in_container_s": float(a[4]),
                  "audit_fraction": float(a[5]), "compose_deployment_s": float(a[6])}))
PY
