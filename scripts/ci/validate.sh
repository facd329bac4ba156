#!/usr/bin/env bash
# CI check of a knowledge repo (.github/workflows/validate.yml runs it on every push and PR):
#
#   1. `arkai validate --full`: every transcript digest and span hash, re-checked from scratch
#      (no cached verdicts); fails on stale evidence.
#   2. `dvc status extract validate`: the committed dvc.lock matches library/, patterns/,
#      params and extracted/ (through their manifests, written here first) — the pipeline was
#      re-run before committing. Only these stages: extraction results are in git, so no LLM
#      is needed; the index stage's outputs are not. The extract stage is `always_changed`
#      (DVC walks no per-item folder, docs/scale.md): that entry is no change and is ignored.
#   3. `arkai diff --format markdown` of the change (a PR: base...head; a push: before..after)
#      appended to $GITHUB_STEP_SUMMARY (stdout when unset).
#
# Every step runs even if an earlier one fails; the script exits 1 if any check failed.
# Inputs (all optional): ARKAI_DIFF_BASE (a revision to diff from), GITHUB_BASE_REF (a PR's
# target branch, diffed as origin/<ref>...HEAD), GITHUB_STEP_SUMMARY, GITHUB_SERVER_URL and
# GITHUB_REPOSITORY (line links to github.com, `?plain=1#L12`), ARKAI_SKIP_DVC=1 (skip step 2),
# ARKAI_REPORT (a file that also gets the report: the pull request comment, comment.sh).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1

summary="${GITHUB_STEP_SUMMARY:-/dev/stdout}"
report="${ARKAI_REPORT:-}"
[[ -n "$report" ]] && : >"$report"
failed=()

# Append stdin to the job summary and to the report file.
emit() {
  if [[ -n "$report" ]]; then
    tee -a "$report" >>"$summary"
  else
    cat >>"$summary"
  fi
}
note() { printf '%s\n' "$*" | emit; }

echo "::group::arkai validate"
if arkai validate --full; then
  validate_line="✅ \`arkai validate\`: no stale evidence"
else
  failed+=("arkai validate")
  validate_line="❌ \`arkai validate\` failed: stale evidence (repair: \`arkai evidence reanchor ID\`, then \`dvc repro\`)"
fi
echo "::endgroup::"

dvc_line=""
if [[ "${ARKAI_SKIP_DVC:-}" != 1 && -f dvc.yaml ]]; then
  echo "::group::dvc status extract validate"
  # The folder manifests the stages after extract depend on (index/manifests/, not in git):
  # written from the files as the stages write them, so a fresh clone compares them too.
  python -m arkai.adapters.manifest library extracted condensed
  # An output kept in DVC's cache but not in this clone's (the provider responses before a
  # `dvc pull`; docs/team.md) is reported "not in cache": that is no stale dvc.lock.
  if status_json="$(dvc status --json extract validate)" &&
    status_json="$(python -c '
import json, sys
left = {}
for stage, changes in json.load(sys.stdin).items():
    kept = []
    for change in changes:
        if change == "always changed":
            continue  # the extract stage runs on every repro: not a stale dvc.lock
        outs = change.get("changed outs") if isinstance(change, dict) else None
        if outs is None:
            kept.append(change)
        elif any(v != "not in cache" for v in outs.values()):
            kept.append({"changed outs": {k: v for k, v in outs.items() if v != "not in cache"}})
    if kept:
        left[stage] = kept
print(json.dumps(left))
' <<<"$status_json")"; then
    if [[ "$(tr -d '[:space:]' <<<"$status_json")" == "{}" ]]; then
      dvc_line="✅ \`dvc.lock\` is current for the extract and validate stages"
    else
      dvc status extract validate
      failed+=("dvc status")
      dvc_line="❌ \`dvc.lock\` is out of date: run \`dvc repro\` and commit the result"
    fi
  else
    failed+=("dvc status")
    dvc_line="❌ \`dvc status extract validate\` failed"
  fi
  echo "::endgroup::"
fi

zero=0000000000000000000000000000000000000000
range=""
if [[ -n "${ARKAI_DIFF_BASE:-}" && "${ARKAI_DIFF_BASE}" != "$zero" ]]; then
  if git rev-parse --verify -q "${ARKAI_DIFF_BASE}^{commit}" >/dev/null; then
    range="${ARKAI_DIFF_BASE}...HEAD"
  fi
elif [[ -n "${GITHUB_BASE_REF:-}" ]]; then
  if ! git rev-parse --verify -q "origin/${GITHUB_BASE_REF}^{commit}" >/dev/null; then
    git fetch --no-tags --quiet origin \
      "+refs/heads/${GITHUB_BASE_REF}:refs/remotes/origin/${GITHUB_BASE_REF}" || true
  fi
  if git rev-parse --verify -q "origin/${GITHUB_BASE_REF}^{commit}" >/dev/null; then
    range="origin/${GITHUB_BASE_REF}...HEAD"
  fi
elif git rev-parse --verify -q "HEAD~1^{commit}" >/dev/null; then
  range="HEAD~1..HEAD"
fi

links=()
if [[ -n "${GITHUB_REPOSITORY:-}" ]]; then
  links=(--link-base "${GITHUB_SERVER_URL:-https://github.com}/${GITHUB_REPOSITORY}/blob/{rev}/")
fi

note "## arkai"
note ""
note "$validate_line  "
[[ -n "$dvc_line" ]] && note "$dvc_line"
note ""
if [[ -n "$range" ]]; then
  echo "::group::arkai diff $range"
  if ! arkai diff "$range" --format markdown "${links[@]}" | emit; then
    failed+=("arkai diff")
    note "❌ \`arkai diff $range\` failed"
  fi
  echo "::endgroup::"
else
  note "_No base revision to diff against._"
fi

if ((${#failed[@]})); then
  echo "failed: ${failed[*]}" >&2
  exit 1
fi
echo "all checks passed"
