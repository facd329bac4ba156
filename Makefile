# arkai — two commands do all set-up on a fresh machine:
#   make run    build the bundled sample library with `dvc repro`
#   make test   ruff, mypy and the whole test suite
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(CURDIR)/$(VENV)/bin
STAMP := $(VENV)/.installed-stamp
# No telemetry or update checks from DVC; one BLAS thread so numpy and torch don't fight
# over the two cores.
export DVC_NO_ANALYTICS := 1
export DVC_NO_UPDATER := 1
export OPENBLAS_NUM_THREADS := 1
export PATH := $(BIN):$(PATH)
PYTEST_ARGS ?= -n 2

.PHONY: setup browser run test lint typecheck pytest bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# torch first, pinned to the CPU build: an unpinned torch pulled in by a dependency would
# fetch a multi-GB CUDA build.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q --disable-pip-version-check torch==2.13.0
	$(BIN)/python -m pip install -q --disable-pip-version-check -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

# Headless Chromium for the site's browser tests (Debian's package; the tests fail, never skip,
# when it is missing).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing chromium (apt)"; \
	  $$( [ "$$(id -u)" = 0 ] || echo sudo ) apt-get update -qq && \
	  $$( [ "$$(id -u)" = 0 ] || echo sudo ) apt-get install -y -qq chromium >/dev/null; }

run: setup
	dvc repro
	@echo
	@echo "Done. Results:"
	@echo "  extracted/<type>/<Title (id)>/   claims (evidence.jsonl, claims.md), entities, extraction.json"
	@echo "  index/                           catalog, chunks, BM25, embeddings, topics, graph (arkai search)"
	@echo "  site/index.html                  the static site (arkai site serve to browse it)"
	@echo "  reports/validation.json          validation metric (dvc metrics show)"
	@echo "  .arkai/runs/                     event logs (arkai runs)"
	@dvc metrics show

lint: setup
	ruff check .
	ruff format --check .
	lint-imports

typecheck: setup
	mypy

pytest: setup browser
	pytest $(PYTEST_ARGS)

test: lint typecheck pytest

bench: setup
	python bench/resolve.py
	python bench/articles.py
	python bench/extract.py
	python bench/search.py
	python bench/site.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis
