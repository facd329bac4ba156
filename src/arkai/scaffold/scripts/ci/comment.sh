#!/usr/bin/env bash
# Post the library diff on a pull request as ONE comment, updated in place on every push
# (.github/workflows/validate.yml's `comment` job runs it with the report validate.sh wrote).
#
#   comment.sh REPORT.md
#
# The comment is found again by a hidden marker on its first line. Needs GITHUB_TOKEN (with
# pull-requests: write), GITHUB_REPOSITORY, ARKAI_PR (the pull request's number) and
# GITHUB_API_URL (set by Actions; default https://api.github.com). A pull request from a fork
# gets a read-only token: the script then says so and exits 0 (the diff is in the job summary).
set -euo pipefail

report="${1:?usage: comment.sh REPORT.md}"
if [[ ! -f "$report" ]]; then
  echo "comment.sh: $report: no report (did validate.sh run?)" >&2
  exit 1
fi
: "${GITHUB_TOKEN:?comment.sh: GITHUB_TOKEN is not set}"
: "${GITHUB_REPOSITORY:?comment.sh: GITHUB_REPOSITORY is not set}"
: "${ARKAI_PR:?comment.sh: ARKAI_PR (the pull request number) is not set}"

exec python - "$report" <<'PY'
import json
import os
import sys
import urllib.error
import urllib.request

MARKER = "<!-- arkai-diff -->"
LIMIT = 65000  # GitHub rejects comment bodies over 65,536 characters

api = os.environ.get("GITHUB_API_URL", "https://api.github.com").rstrip("/")
repo, pr = os.environ["GITHUB_REPOSITORY"], os.environ["ARKAI_PR"]
headers = {
    "Authorization": f"Bearer {os.environ['GITHUB_TOKEN']}",
    "Accept": "application/vnd.github+json",
    "X-GitHub-Api-Version": "2022-11-28",
    "Content-Type": "application/json",
}
with open(sys.argv[1], encoding="utf-8") as fh:
    text = fh.read()
if len(text) > LIMIT:
    text = text[:LIMIT] + "\n\n…(cut short: the whole diff is in the workflow run's summary)\n"
body = f"{MARKER}\n{text}"


def call(method, url, payload=None):
    data = json.dumps(payload).encode() if payload is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read() or b"null")


try:
    existing = None
    page = 1
    while existing is None:
        url = f"{api}/repos/{repo}/issues/{pr}/comments?per_page=100&page={page}"
        comments = call("GET", url)
        if not comments:
            break
        existing = next(
            (c for c in comments if str(c.get("body", "")).startswith(MARKER)), None
        )
        page += 1
    if existing is None:
        made = call("POST", f"{api}/repos/{repo}/issues/{pr}/comments", {"body": body})
        print(f"comment.sh: posted {made.get('html_url', '')}")
    else:
        call("PATCH", f"{api}/repos/{repo}/issues/comments/{existing['id']}", {"body": body})
        print(f"comment.sh: updated {existing.get('html_url', '')}")
except urllib.error.HTTPError as exc:
    if exc.code in (401, 403, 404):
        print(
            f"::warning::comment.sh: cannot comment on pull request #{pr} ({exc.code}; "
            "a pull request from a fork gets a read-only token). The diff is in the job summary."
        )
        sys.exit(0)
    print(f"comment.sh: {exc.code} {exc.reason} from {exc.url}", file=sys.stderr)
    sys.exit(1)
PY
