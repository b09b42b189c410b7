# CPU image for reactbench-pipeline: the stages that need no GPU (mine, instruct with an
# OpenAI-compatible endpoint or the rules backend, qa, review), the one-shot `setup` that creates
# work pools, the GPU concurrency limit and the deployments, the Prefect server of
# docker/compose.yaml, and local demo builds. No torch, no Ray (EXTRAS=ray,postgres,s3 adds it).
#
#   docker build -f docker/cpu.Dockerfile -t reactbench-cpu .          (from the repository root)
#   podman build --format docker -f docker/cpu.Dockerfile -t reactbench-cpu .
#
# Bases: PYTHON_IMAGE (any Debian-based image with python3.11 on PATH) and UV_IMAGE (an image
# holding /uv). Where no registry is reachable, scripts/images.sh makes both locally and passes
# them as build arguments. Nothing is downloaded at build time but Debian and PyPI packages.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm
ARG UV_IMAGE=ghcr.io/astral-sh/uv:0.9.5

FROM ${UV_IMAGE} AS uv

FROM ${PYTHON_IMAGE}
ARG EXTRAS=postgres,s3
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH \
    REACTBENCH_HOME=/opt/reactbench \
    REACTBENCH_POOL=reactbench-cpu \
    PREFECT_SERVER_ANALYTICS_ENABLED=false

# tini as PID 1: the worker forwards signals to its flow-run processes and zombies are reaped.
RUN apt-get update \
    && apt-get install -y --no-install-recommends tini \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --create-home --uid 1000 reactbench

# The project in editable mode from /opt/reactbench, its only copy: build/ and the egg-info go in
# the same step (the metadata, entry points included, lives in the venv's dist-info). uv is
# mounted from its image for this step only (the ARGs below are its environment, not the
# image's). UV_NATIVE_TLS: the system's CA certificates, which a local base extends. Bytecode is
# compiled here: the code is read-only for the user, so no process would cache it. The releases
# are those of constraints.txt, the ones `make test` passed with.
ARG UV_LINK_MODE=copy
ARG UV_NO_CACHE=1
ARG UV_NATIVE_TLS=1
ARG UV_COMPILE_BYTECODE=1
ARG UV_HTTP_TIMEOUT=300
WORKDIR /opt/reactbench
COPY . .
RUN --mount=type=bind,from=uv,source=/uv,target=/usr/local/bin/uv \
    uv venv --python python3.11 /opt/venv \
    && uv pip install --python /opt/venv/bin/python -c constraints.txt -e ".[${EXTRAS}]" \
    && rm -rf build ./*.egg-info \
    && /opt/venv/bin/python -m compileall -q -j 0 /opt/reactbench
COPY docker/entrypoint.sh /usr/local/bin/reactbench-entrypoint
# The code stays root's; what a run writes goes to runs/ and data/ (volumes in compose) and the
# Prefect server's database to /var/lib/prefect.
RUN mkdir -p /opt/reactbench/runs /opt/reactbench/data /var/lib/prefect \
    && chown reactbench:reactbench /opt/reactbench/runs /opt/reactbench/data /var/lib/prefect
USER 1000:1000

ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/reactbench-entrypoint"]
CMD ["worker"]
