#!/usr/bin/env bash
# Build the library's static site for GitHub Pages (.github/workflows/site.yml runs it on
# pushes to main, then uploads the folder and deploys it).
#
#   ARKAI_SITE_DIR   the folder `arkai site build` writes (mkdocs.yml's site_dir; default site)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

out="${ARKAI_SITE_DIR:-site}"
arkai site build --clean
if [[ ! -f "$out/index.html" ]]; then
  echo "site.sh: $out/index.html was not built" >&2
  exit 1
fi
# Serve the files as they are: GitHub Pages would otherwise run Jekyll and drop _-folders.
touch "$out/.nojekyll"
echo "site built in $out/ ($(find "$out" -type f | wc -l) files)"
