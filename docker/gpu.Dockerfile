# GPU worker for reactbench-pipeline: CUDA runtime, Python 3.11, the project with its gpu, ray,
# postgres and s3 extras, and an entrypoint that starts a Prefect process worker for the GPU work pool.
#
#   docker build -f docker/gpu.Dockerfile -t reactbench-gpu .          (from the repository root)
#   docker run --gpus all -e PREFECT_API_URL=http://prefect:4200/api reactbench-gpu
#
# torch 2.14.1 from PyPI bundles its CUDA libraries; the base image provides the CUDA runtime
# matching the host driver (>= 570 for CUDA 12.8).
ARG CUDA_IMAGE=nvidia/cuda:12.8.1-cudnn-runtime-ubuntu22.04
ARG UV_IMAGE=ghcr.io/astral-sh/uv:0.9.5

FROM ${UV_IMAGE} AS uv

FROM ${CUDA_IMAGE}
SHELL ["/bin/bash", "-o", "pipefail", "-c"]

ENV DEBIAN_FRONTEND=noninteractive \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    UV_PYTHON_INSTALL_DIR=/opt/python \
    UV_LINK_MODE=copy \
    UV_NO_CACHE=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH \
    REACTBENCH_HOME=/opt/reactbench \
    REACTBENCH_POOL=reactbench-gpu \
    HF_HOME=/cache/huggingface

# libgl/libglib for OpenCV, tini as PID 1 so the worker forwards signals to flow-run processes.
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates curl libgl1 libglib2.0-0 tini \
    && rm -rf /var/lib/apt/lists/*

COPY --from=uv /uv /usr/local/bin/uv
RUN uv python install 3.11 && uv venv --python 3.11 /opt/venv

WORKDIR /opt/reactbench
# Dependencies first (cached while only the code changes), then the code.
COPY pyproject.toml README.md ./
COPY storage/ storage/
COPY miners/ miners/
COPY prompts/ prompts/
COPY editors/ editors/
COPY tasks/ tasks/
COPY flows/ flows/
COPY configs/ configs/
RUN uv pip install --python /opt/venv/bin/python ".[gpu,ray,postgres,s3]"
COPY prefect.yaml ./
COPY docker/entrypoint.sh /usr/local/bin/reactbench-entrypoint

RUN useradd --create-home --uid 1000 reactbench \
    && mkdir -p /opt/reactbench/runs /opt/reactbench/data /cache/huggingface \
    && chown -R reactbench:reactbench /opt/reactbench/runs /opt/reactbench/data /cache
USER 1000:1000

ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/reactbench-entrypoint"]
CMD ["worker"]
