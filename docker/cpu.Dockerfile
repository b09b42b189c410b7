# CPU image for reactbench-pipeline: the stages that need no GPU (mine, instruct with an
# OpenAI-compatible endpoint or the rules backend, qa, review), the one-shot `setup` that creates
# work pools, the GPU concurrency limit and the deployments, and local demo builds.
#
#   docker build -f docker/cpu.Dockerfile -t reactbench-cpu .          (from the repository root)
ARG PYTHON_IMAGE=python:3.11-slim-bookworm
ARG UV_IMAGE=ghcr.io/astral-sh/uv:0.9.5

FROM ${UV_IMAGE} AS uv

FROM ${PYTHON_IMAGE}
SHELL ["/bin/bash", "-o", "pipefail", "-c"]

ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    UV_LINK_MODE=copy \
    UV_NO_CACHE=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH \
    REACTBENCH_HOME=/opt/reactbench \
    REACTBENCH_POOL=reactbench-cpu

RUN apt-get update \
    && apt-get install -y --no-install-recommends curl libgl1 libglib2.0-0 tini \
    && rm -rf /var/lib/apt/lists/*

COPY --from=uv /uv /usr/local/bin/uv
RUN uv venv --python /usr/local/bin/python3.11 /opt/venv

WORKDIR /opt/reactbench
COPY pyproject.toml README.md ./
COPY storage/ storage/
COPY miners/ miners/
COPY prompts/ prompts/
COPY editors/ editors/
COPY tasks/ tasks/
COPY flows/ flows/
COPY configs/ configs/
RUN uv pip install --python /opt/venv/bin/python ".[ray,postgres,s3]"
COPY prefect.yaml ./
COPY docker/entrypoint.sh /usr/local/bin/reactbench-entrypoint

RUN useradd --create-home --uid 1000 reactbench \
    && mkdir -p /opt/reactbench/runs /opt/reactbench/data \
    && chown -R reactbench:reactbench /opt/reactbench/runs /opt/reactbench/data
USER 1000:1000

ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/reactbench-entrypoint"]
CMD ["worker"]
