# GPU worker for reactbench-pipeline: Python 3.11, the project with its gpu, ray, postgres and s3
# extras, and an entrypoint that starts a Prefect process worker for the GPU work pool.
#
#   docker build -f docker/gpu.Dockerfile -t reactbench-gpu .          (from the repository root)
#   podman build --format docker -f docker/gpu.Dockerfile -t reactbench-gpu .
#   docker run --gpus all -e PREFECT_API_URL=http://prefect:4200/api reactbench-gpu
#
# No CUDA base image: torch 2.14.1 from PyPI (the +cu130 build) brings the CUDA 13.0 runtime
# libraries as nvidia-* wheels, so a plain Python base and the host's driver (>= 580 for CUDA
# 13.0, exposed by the NVIDIA container toolkit) are all it needs. Bases as in cpu.Dockerfile (PYTHON_IMAGE, UV_IMAGE);
# nothing is downloaded at build time but Debian and PyPI packages.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm
ARG UV_IMAGE=ghcr.io/astral-sh/uv:0.9.5

FROM ${UV_IMAGE} AS uv

FROM ${PYTHON_IMAGE}
ARG EXTRAS=gpu,ray,postgres,s3
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH \
    REACTBENCH_HOME=/opt/reactbench \
    REACTBENCH_POOL=reactbench-gpu \
    HF_HOME=/cache/huggingface \
    NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility \
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
RUN mkdir -p /opt/reactbench/runs /opt/reactbench/data /cache/huggingface \
    && chown reactbench:reactbench /opt/reactbench/runs /opt/reactbench/data /cache/huggingface
USER 1000:1000

ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/reactbench-entrypoint"]
CMD ["worker"]
