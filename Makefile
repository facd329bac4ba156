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
# Two workers, handed whole test files (`--dist loadfile`): xdist's default hands out tests in
# batches up front, and on two cores one worker was left with ≈ 280 s of queued tests after
# the other ran dry (pytest 11:51 against 10:11 by file, measured the same hour); by file, a
# module's fixtures (a fresh venv, a built library) are also made once, never on both workers.
PYTEST_ARGS ?= -n 2 --dist loadfile

.PHONY: setup browser shellcheck sshd run test lint typecheck pytest bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# arkai with its dev extras and the `torch` extra (sentence-transformers, the reference the
# tests compare the default ONNX embedder with; a user install has no torch). torch first,
# pinned, and the CPU build wherever PyTorch publishes one (an unpinned torch pulled in by a
# dependency would fetch a multi-GB CUDA build on Linux). scripts/ci/install.sh does it all,
# exactly as the CI jobs do; it reads
#   TORCH_INDEX    PyTorch's CPU wheel index (default https://download.pytorch.org/whl/cpu;
#                  empty: take torch from pip's default index)
#   TORCH_TIMEOUT  seconds to wait for that index before falling back to pip's default index (5)
#   TORCH_VERSION  (2.13.0)
# given on make's command line or in the environment, e.g.
# `make setup TORCH_INDEX=https://download.pytorch.org/whl/cu128` for a CUDA build.

$(STAMP): pyproject.toml scripts/ci/install.sh | $(BIN)/python
	ARKAI_EXTRAS=dev,torch bash scripts/ci/install.sh
	touch $(STAMP)

setup: $(STAMP)

# Debian packages: apt-get as root (else through sudo), one at a time — two set-ups on one
# machine at once, or the system's own apt run, wait for each other instead of failing on
# apt's locks.
APT_GET := $$( [ "$$(id -u)" = 0 ] || echo sudo ) flock /tmp/arkai-apt.lock apt-get -o DPkg::Lock::Timeout=600

# Headless Chromium for the site's browser tests (Debian's package; the tests fail, never skip,
# when it is missing).
# $ARKAI_CHROMIUM names another Chromium-based browser (CI: the runner's Google Chrome).
browser:
	@[ -x "$${ARKAI_CHROMIUM:-}" ] || command -v chromium >/dev/null 2>&1 || { \
	  echo "installing chromium (apt)"; \
	  $(APT_GET) update -qq && \
	  $(APT_GET) install -y -qq chromium >/dev/null; }

# shellcheck for `make lint` (Debian's package, like chromium above; actionlint comes with the
# dev extras and runs shellcheck over the workflows' `run:` blocks too).
shellcheck:
	@command -v shellcheck >/dev/null 2>&1 || { \
	  echo "installing shellcheck (apt)"; \
	  $(APT_GET) update -qq && \
	  $(APT_GET) install -y -qq shellcheck >/dev/null; }

# OpenSSH's sshd for the SSH remote tests (tests/func/remote_servers.py starts its own on
# 127.0.0.1; Debian's package, like chromium above).
sshd:
	@[ -x /usr/sbin/sshd ] || { \
	  echo "installing openssh-server (apt)"; \
	  $(APT_GET) update -qq && \
	  $(APT_GET) install -y -qq openssh-server >/dev/null; }

run: setup
	dvc repro
	@echo
	@echo "Done. Results:"
	@echo "  extracted/<type>/<Title (id)>/   claims (evidence.jsonl, claims.md), entities, extraction.json"
	@echo "  condensed/<type>/<Title (id)>/   condensed chunks (summary, decisions, discoveries, procedures)"
	@echo "  index/                           catalog, chunks, BM25, embeddings, topics, graph, shards (arkai search)"
	@echo "  site/index.html                  the static site (arkai site serve to browse it)"
	@echo "  reports/validation.json          validation metric (dvc metrics show)"
	@echo "  .arkai/runs/                     event logs (arkai runs)"
	@dvc metrics show

WORKFLOWS := $(wildcard .github/workflows/*.yml src/arkai/scaffold/.github/workflows/*.yml)
SHELL_SCRIPTS := .ci/run $(wildcard scripts/ci/*.sh src/arkai/scaffold/scripts/ci/*.sh)

lint: setup shellcheck
	ruff check .
	ruff format --check .
	lint-imports
	actionlint $(WORKFLOWS)
	shellcheck $(SHELL_SCRIPTS)

typecheck: setup
	mypy

pytest: setup browser sshd
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
