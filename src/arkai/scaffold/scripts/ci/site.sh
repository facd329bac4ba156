#!/usr/bin/env bash
# Build the library's complete static site for GitHub Pages (.github/workflows/site.yml runs it
# on pushes to the default branch, then uploads the folder and deploys it).
#
#   1. `dvc pull` when a DVC remote is configured (cached outputs, e.g. a shared index).
#   2. `dvc repro --single-item index`: the search index (topics, related items, entity graph)
#      is not in git, and without it the site has no topic pages and no related items. Only
#      that stage: extraction results are in git, and CI has no LLM to re-extract with.
#   3. `arkai site build --clean`, then a check that the site has its home page and, when the
#      index holds topics, its topic pages.
#
#   ARKAI_SITE_DIR   the folder `arkai site build` writes (mkdocs.yml's site_dir; default site)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

out="${ARKAI_SITE_DIR:-site}"
if [[ -d .dvc && -n "$(dvc remote list 2>/dev/null)" ]]; then
  echo "::group::dvc pull"
  dvc pull || echo "site.sh: dvc pull failed; the index is rebuilt from the files instead" >&2
  echo "::endgroup::"
fi
if [[ -f dvc.yaml ]] && grep -Eq '^  index:' dvc.yaml; then
  echo "::group::dvc repro --single-item index"
  # Its inputs' manifests (index/manifests/, not in git) from the files, as the stages write them.
  python -m arkai.adapters.manifest library extracted condensed
  dvc repro --single-item index
  echo "::endgroup::"
else
  echo "::warning::site.sh: dvc.yaml has no index stage; the site gets no topics or related items"
fi

arkai site build --clean
if [[ ! -f "$out/index.html" ]]; then
  echo "site.sh: $out/index.html was not built" >&2
  exit 1
fi
topics="$(python -c '
import json, pathlib
p = pathlib.Path("index/topics.json")
print(len(json.loads(p.read_text()).get("topics") or {}) if p.is_file() else 0)')"
if ((topics > 0)) && [[ ! -d "$out/topics" ]]; then
  echo "site.sh: the index has $topics topics but $out/topics/ was not built" >&2
  exit 1
fi
echo "index: $topics topics"
# Serve the files as they are: GitHub Pages would otherwise run Jekyll and drop _-folders.
touch "$out/.nojekyll"
echo "site built in $out/ ($(find "$out" -type f | wc -l) files)"
