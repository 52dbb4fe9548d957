# docqa: `make run` sets up and serves; `make test` sets up and runs every test; `make lint` runs ruff and mypy.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.docqa-installed

LLAMA_VERSION := 0.3.36
# The native build crashes in its AMX kernel on these CPUs: build for the vector units this
# CPU has (AVX2, AVX-512, VNNI), AMX always off (scripts/llama_flags.py). LLAMA_CPU=portable
# builds for any x86-64 CPU instead.
LLAMA_CPU ?= auto
LLAMA_CMAKE_ARGS := $(shell python3 scripts/llama_flags.py $(LLAMA_CPU) 2>/dev/null || echo -DGGML_NATIVE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_BF16=OFF)
LLAMA_FLAGS_STAMP := $(VENV)/.docqa-llama-flags
# pip's own cache ignores CMAKE_ARGS, so we keep our wheel in a folder named after the flags.
LLAMA_WHEELS := $(HOME)/.cache/docqa/wheels/llama-$(LLAMA_VERSION)-$(shell echo '$(LLAMA_CMAKE_ARGS)' | sha256sum | cut -c1-12)

.PHONY: setup run index test test-fast lint documents clean-venv

setup: $(STAMP)

$(STAMP): requirements.txt Makefile scripts/llama_flags.py
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "docqa needs Python 3.11: install python3.11, or run make PYTHON=/path/to/python3.11"; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip wheel
	@if ! $(PY) -c "import importlib.metadata as m, sys; sys.exit(m.version('llama_cpp_python') != '$(LLAMA_VERSION)')" 2>/dev/null \
	    || [ "$$(cat $(LLAMA_FLAGS_STAMP) 2>/dev/null)" != "$(LLAMA_CMAKE_ARGS)" ]; then \
	  if ! ls $(LLAMA_WHEELS)/llama_cpp_python-*.whl >/dev/null 2>&1; then \
	    echo "Building llama-cpp-python $(LLAMA_VERSION) for this CPU ($(LLAMA_CMAKE_ARGS)), about 4-15 minutes..."; \
	    mkdir -p $(LLAMA_WHEELS) && \
	    CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PIP) wheel --no-cache-dir --no-deps -w $(LLAMA_WHEELS) llama-cpp-python==$(LLAMA_VERSION) || exit 1; \
	  fi; \
	  $(PIP) install --no-cache-dir --force-reinstall --no-deps $(LLAMA_WHEELS)/llama_cpp_python-*.whl || exit 1; \
	  echo "$(LLAMA_CMAKE_ARGS)" > $(LLAMA_FLAGS_STAMP); \
	fi
	$(PIP) install --quiet -r requirements.txt
	$(PY) scripts/prepare_model.py
	$(PY) scripts/smoke_check.py
	touch $(STAMP)

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
