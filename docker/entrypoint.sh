#!/bin/sh
# Entry point of the reactbench images.
#   worker   start a Prefect process worker for $REACTBENCH_POOL (default command; needs PREFECT_API_URL)
#   setup    create the work pools, the GPU concurrency limit and every deployment of prefect.yaml
#            (needs PREFECT_API_URL)
#   <other>  run it as a command, no Prefect server needed: `reactbench build --config
#            configs/demo.yaml`, `reactbench --help`, `prefect server start`, ...
set -eu

cd "${REACTBENCH_HOME:-/opt/reactbench}"

need_api() {
    if [ -z "${PREFECT_API_URL:-}" ]; then
        echo "reactbench-entrypoint: '$1' needs a Prefect server: set PREFECT_API_URL (e.g. -e PREFECT_API_URL=http://prefect-server:4200/api)" >&2
        exit 2
    fi
    tries=0
    until python -c "import sys, urllib.request; urllib.request.urlopen(sys.argv[1] + '/health', timeout=3)" "$PREFECT_API_URL" 2>/dev/null; do
        tries=$((tries + 1))
        if [ "$tries" -ge 60 ]; then
            echo "reactbench-entrypoint: Prefect API $PREFECT_API_URL not reachable after 120 s" >&2
            exit 1
        fi
        sleep 2
    done
}

cmd="${1:-worker}"
case "$cmd" in
    worker)
        shift || true
        need_api worker
        exec prefect worker start --pool "${REACTBENCH_POOL:-reactbench-gpu}" --type process "$@"
        ;;
    setup)
        need_api setup
        prefect work-pool create reactbench-gpu --type process --overwrite
        prefect work-pool create reactbench-cpu --type process --overwrite
        prefect gcl create "${REACTBENCH_GPU_LIMIT_NAME:-reactbench-gpu}" --limit "${REACTBENCH_GPUS:-1}" \
            || prefect gcl update "${REACTBENCH_GPU_LIMIT_NAME:-reactbench-gpu}" --limit "${REACTBENCH_GPUS:-1}"
        prefect --no-prompt deploy --all
        prefect deployment ls
        ;;
    *)
        exec "$@"
        ;;
esac
