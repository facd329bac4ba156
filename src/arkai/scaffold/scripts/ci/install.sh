#!/usr/bin/env bash
# Install arkai for a CI job (.github/workflows/*.yml run this after actions/setup-python).
#
# In arkai's own repository the checkout itself is installed; in a knowledge repo made by
# `arkai init`, the package named by $ARKAI_PACKAGE (a pip requirement: a version, a git URL,
# a wheel), by default `arkai`. PyTorch, if anything pulls it in, comes as the CPU build.
# ARKAI_CI_DRY_RUN=1 prints the pip command instead of running it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

if [[ -f pyproject.toml ]] && grep -Eq '^name *= *"arkai"' pyproject.toml; then
  spec=(-e .)
else
  spec=("${ARKAI_PACKAGE:-arkai}")
fi
cmd=(python -m pip install --disable-pip-version-check
     --extra-index-url https://download.pytorch.org/whl/cpu "${spec[@]}")
if [[ "${ARKAI_CI_DRY_RUN:-}" == 1 ]]; then
  echo "${cmd[*]}"
  exit 0
fi
"${cmd[@]}"
arkai --version
