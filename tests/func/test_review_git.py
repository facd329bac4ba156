"""Git-native review in a real repository with a real history: ``arkai diff``, ``arkai log``,
``arkai review``, ``arkai validate``, merging two branches, and the CI script.

The history (one tag per commit)::

    c1  scaffold (arkai init; a deterministic `command` provider)
    c2  add Alpha and Beta (not extracted)
    c3  extract
    c4  edit both transcripts (Alpha: a sentence appended; Beta: one prepended), re-extract
    c5  review three claims, re-extract
    c6  remove Beta, re-extract

Outputs are compared with golden files in ``tests/fixtures/review/`` after normalising commit
IDs (``<c3>``, ``<c3:short>``), today's date and the temporary folder. To rewrite the golden
files after an intended change: ``ARKAI_UPDATE_GOLDEN=1 pytest tests/func/test_review_git.py``
and review the diff.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from arkai.cli import main
from tests.conftest import ROOT
from tests.conftest import sh as run_tool

FIXTURES = ROOT / "tests" / "fixtures" / "review"
HOOK = FIXTURES / "hook.py"
BIN = Path(sys.executable).parent
UPDATE = os.environ.get("ARKAI_UPDATE_GOLDEN") == "1"

ALPHA = (
    "Amara keeps bees in Lisbon. HiveSense boards weigh every hive.\n\n"
    "The Varroa mite is the biggest single factor.\n"
)
BETA = "Henrik builds the Ferro compiler. Every query result gets a content hash.\n"


def git_env(when: int = 0) -> dict[str, str]:
    date = f"2001-02-{3 + when:02d}T10:00:00+00:00"
    return {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
        "DVC_NO_ANALYTICS": "1",
        "DVC_NO_UPDATER": "1",
        "GIT_AUTHOR_NAME": "Ana Reviewer",
        "GIT_AUTHOR_EMAIL": "ana@example.invalid",
        "GIT_COMMITTER_NAME": "Ana Reviewer",
        "GIT_COMMITTER_EMAIL": "ana@example.invalid",
        "GIT_AUTHOR_DATE": date,
        "GIT_COMMITTER_DATE": date,
        "GIT_CONFIG_NOSYSTEM": "1",
    }


def sh(
    cwd: Path, *args: str, check: bool = True, env: dict[str, str] | None = None, when: int = 0
) -> subprocess.CompletedProcess[str]:
    """:func:`tests.conftest.sh` as the reviewer Ana, on day ``when``."""
    return run_tool(cwd, *args, check=check, env=env or git_env(when))


def arkai(repo: Path, *args: str) -> tuple[int, str, str]:
    """The CLI in-process (fast): exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["--repo", str(repo), *args])
    return code, out.getvalue(), err.getvalue()


def ok(repo: Path, *args: str) -> str:
    code, out, err = arkai(repo, *args)
    assert code == 0, f"arkai {args} -> {code}\n{out}\n{err}"
    return out


def use_hook_provider(repo: Path) -> None:
    """Deterministic extraction: the `command` provider with tests/fixtures/review/hook.py."""
    path = repo / "params.yaml"
    params = yaml.safe_load(path.read_text(encoding="utf-8"))
    params["extract"].update(
        provider="command",
        patterns={"default": ["extract_claims", "extract_entities"]},
        verify=False,
    )
    params["providers"]["command"]["command"] = [sys.executable, str(HOOK)]
    path.write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")


def new_repo(path: Path) -> Path:
    sh(path.parent, "arkai", "init", str(path))
    sh(path, "git", "symbolic-ref", "HEAD", "refs/heads/main")
    sh(path, "git", "config", "user.name", "Ana Reviewer")
    sh(path, "git", "config", "user.email", "ana@example.invalid")
    use_hook_provider(path)
    return path


def commit(repo: Path, message: str, tag: str, when: int) -> None:
    sh(repo, "git", "add", "-A", when=when)
    sh(repo, "git", "commit", "-qm", message, when=when)
    sh(repo, "git", "tag", tag, when=when)


def pipeline(repo: Path) -> None:
    ok(repo, "extract", "--quiet")
    ok(repo, "validate", "--report", "reports/validation.json")


def write_source(tmp: Path, name: str, text: str) -> Path:
    p = tmp / name
    p.write_text(text, encoding="utf-8")
    return p


def item_dir(repo: Path, title: str) -> Path:
    return next((repo / "library").glob(f"*/{title} (*)"))


def claim_id(repo: Path, title: str, startswith: str) -> str:
    ev = repo / "extracted" / item_dir(repo, title).relative_to(repo / "library") / "evidence.jsonl"
    for line in ev.read_text(encoding="utf-8").splitlines():
        obj = json.loads(line)
        if obj["claim"].startswith(startswith):
            return str(obj["id"])
    raise AssertionError(f"no claim starting {startswith!r} in {title}")


class Story:
    """The repository, its tags, and the outputs captured along the way."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self.outputs: dict[str, str] = {}
        self.ids: dict[str, str] = {}

    def commits(self) -> dict[str, str]:
        out = sh(self.repo, "git", "show-ref", "--tags", "-d").stdout
        return {
            ref.rsplit("/", 1)[-1].removesuffix("^{}"): sha
            for sha, ref in (line.split() for line in out.splitlines())
        }


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> Story:
    tmp = tmp_path_factory.mktemp("review")
    repo = new_repo(tmp / "kb")
    s = Story(repo)
    commit(repo, "Scaffold the library", "c1", 0)

    ok(
        repo,
        "add",
        str(write_source(tmp, "alpha.txt", ALPHA)),
        str(write_source(tmp, "beta.txt", BETA)),
    )
    commit(repo, "Add Alpha and Beta", "c2", 1)

    pipeline(repo)
    commit(repo, "Extract", "c3", 2)
    s.ids["alpha_hive"] = claim_id(repo, "Alpha", "HiveSense")
    s.ids["alpha_varroa"] = claim_id(repo, "Alpha", "The Varroa")
    s.ids["beta_hash_c3"] = claim_id(repo, "Beta", "Every query")

    alpha_t = item_dir(repo, "Alpha") / "transcript.md"
    alpha_t.write_text(
        alpha_t.read_text(encoding="utf-8")
        + "\nAmara keeps bees in Lisbon. Porto joined in May.\n",
        encoding="utf-8",
    )
    beta_t = item_dir(repo, "Beta") / "transcript.md"
    beta_t.write_text(
        "Caches need hashes.\n" + beta_t.read_text(encoding="utf-8"), encoding="utf-8"
    )
    # Edited but not re-extracted: Beta's spans are stale.
    s.outputs["diff_stale.txt"] = ok(repo, "diff")
    code, out, err = arkai(repo, "validate")
    assert code == 1
    s.outputs["validate_stale.txt"] = out + err
    pipeline(repo)
    s.outputs["validate_ok.txt"] = ok(repo, "validate", "--verbose")
    commit(repo, "Edit both transcripts", "c4", 3)
    s.ids["beta_hash_c4"] = claim_id(repo, "Beta", "Every query")

    s.outputs["review_reject.txt"] = ok(
        repo,
        "review",
        s.ids["alpha_hive"][:10],
        "--reject",
        "--note",
        'weighs the "hive", not the bees',
    )
    s.outputs["review_accept.txt"] = ok(repo, "review", s.ids["alpha_varroa"], "--accept")
    ok(repo, "review", s.ids["beta_hash_c4"], "--accept", "--by", "li")
    s.outputs["review_alpha.yaml"] = (item_dir(repo, "Alpha") / "review.yaml").read_text("utf-8")
    pipeline(repo)
    commit(repo, "Review three claims", "c5", 4)
    s.outputs["pending.txt"] = ok(repo, "review", "--pending")
    s.outputs["pending.json"] = ok(repo, "review", "--pending", "--json")

    sh(repo, "git", "rm", "-rq", str(item_dir(repo, "Beta").relative_to(repo)))
    pipeline(repo)
    commit(repo, "Remove Beta", "c6", 5)
    return s


# -- normalising and comparing ------------------------------------------------------------


def normalise(text: str, s: Story) -> str:
    for tag, sha in sorted(s.commits().items()):
        text = text.replace(sha, f"<{tag}>").replace(sha[:7], f"<{tag}:short>")
    text = text.replace(datetime.now(UTC).date().isoformat(), "<TODAY>")
    text = text.replace(str(s.repo.parent), "<TMP>")
    return text


def check_golden(name: str, text: str, s: Story) -> None:
    path = FIXTURES / name
    got = normalise(text, s)
    if UPDATE:
        path.write_text(got, encoding="utf-8")
    assert path.is_file(), f"{path} missing: run with ARKAI_UPDATE_GOLDEN=1 to write it"
    assert got == path.read_text(encoding="utf-8"), f"{name} differs from its golden file"


DIFFS = {
    "diff_c2_c3.txt": ("c2", "c3", "text"),
    "diff_c3_c4.json": ("c3", "c4", "json"),
    "diff_c4_c5.md": ("c4", "c5", "markdown"),
    "diff_c5_c6.txt": ("c5", "c6", "text"),
    "diff_c1_c6_range.md": ("c1...c6", None, "markdown"),
}


@pytest.mark.parametrize("name", sorted(DIFFS))
def test_diff_golden(story: Story, name: str) -> None:
    a, b, fmt = DIFFS[name]
    args = ["diff", a, *([b] if b else []), "--format", fmt]
    check_golden(name, ok(story.repo, *args), story)


@pytest.mark.parametrize(
    "name",
    [
        "diff_stale.txt",
        "validate_stale.txt",
        "validate_ok.txt",
        "review_reject.txt",
        "review_accept.txt",
        "review_alpha.yaml",
        "pending.txt",
        "pending.json",
    ],
)
def test_captured_golden(story: Story, name: str) -> None:
    check_golden(name, story.outputs[name], story)


LOGS = {
    "log_alpha.txt": ("Alpha", []),
    "log_beta_removed.json": ("Beta", ["--json"]),
    "log_claim_rejected.txt": ("alpha_hive", []),
    "log_claim_moved.txt": ("beta_hash_c3", []),
    "log_claim_reverse.txt": ("beta_hash_c4", ["--reverse"]),
}


def ident(s: Story, key: str) -> str:
    """A claim's ID prefix (9 characters), or an item's content ID (from the c5 tree)."""
    if key in s.ids:
        return s.ids[key][:9]
    tree = sh(s.repo, "git", "ls-tree", "--name-only", "c5", "library/transcripts/").stdout
    folder = next(line for line in tree.splitlines() if f"/{key} (" in line)
    meta = json.loads(sh(s.repo, "git", "show", f"c5:{folder}/metadata.json").stdout)
    return str(meta["id"])


@pytest.mark.parametrize("name", sorted(LOGS))
def test_log_golden(story: Story, name: str) -> None:
    key, extra = LOGS[name]
    check_golden(name, ok(story.repo, "log", ident(story, key), *extra), story)


# -- properties ----------------------------------------------------------------------------


def test_diff_and_log_touch_nothing(story: Story) -> None:
    repo = story.repo
    before = (
        sh(repo, "git", "status", "--porcelain").stdout,
        (repo / ".git/HEAD").read_text(),
        (repo / ".git/index").read_bytes(),
    )
    ok(repo, "diff", "c1", "c6", "--format", "json")
    ok(repo, "diff", "c2")
    ok(repo, "log", story.ids["alpha_hive"])
    after = (
        sh(repo, "git", "status", "--porcelain").stdout,
        (repo / ".git/HEAD").read_text(),
        (repo / ".git/index").read_bytes(),
    )
    assert before == after
    assert before[0] == ""


def test_diff_json_is_consistent(story: Story) -> None:
    data = json.loads(ok(story.repo, "diff", "c3", "c4", "--json"))
    counts = data["counts"]
    assert counts["items"] == {"added": 0, "removed": 0, "changed": 2, "unchanged": 0}
    assert counts["claims"]["moved"] == 2  # Beta's two claims got new IDs
    alpha = next(i for i in data["items"] if i["title"] == "Alpha")
    changed = alpha["claims"]["changed"]
    assert [c["changes"]["status"] for c in changed] == [["resolved", "ambiguous"]]
    ents = {(e["name"], tuple(e["mentions"])) for e in alpha["entities"]["changed"]}
    assert ("Amara", (1, 2)) in ents
    assert any(e["name"] == "Porto" for e in alpha["entities"]["added"])


def test_worktree_is_the_default_right_side(story: Story) -> None:
    repo = story.repo
    out = ok(repo, "diff")
    assert "no changes" in out and "→ WORKTREE (working tree)" in out
    code, _, _ = arkai(repo, "diff", "--exit-code")
    assert code == 0
    code, _, _ = arkai(repo, "diff", "c5", "--exit-code")
    assert code == 1


def stable_key(story: Story, eid: str) -> str:
    """The stable claim ID ``review.yaml`` files a review under (no offsets)."""
    from arkai.adapters.review import review_key
    from arkai.adapters.store import read_evidence

    for ev in (story.repo / "extracted").rglob("evidence.jsonl"):
        for line in read_evidence(ev):
            if line.id == eid:
                return review_key(line)
    raise AssertionError(f"no evidence line {eid}")


def test_review_file_format_is_what_load_review_reads(story: Story) -> None:
    from arkai.adapters.review import load_review

    path = item_dir(story.repo, "Alpha") / "review.yaml"
    reviews = load_review(path)
    hive, varroa = (stable_key(story, story.ids[k]) for k in ("alpha_hive", "alpha_varroa"))
    assert reviews[hive]["status"] == "rejected"
    assert reviews[hive]["note"] == 'weighs the "hive", not the bees'
    assert reviews[hive]["by"] == "Ana Reviewer"
    assert reviews[varroa]["status"] == "accepted"
    ev = (
        story.repo
        / "extracted"
        / item_dir(story.repo, "Alpha").relative_to(story.repo / "library")
        / "evidence.jsonl"
    )
    marked = {json.loads(x)["id"]: json.loads(x).get("review") for x in ev.read_text().splitlines()}
    assert marked[story.ids["alpha_hive"]]["status"] == "rejected"


def test_review_errors(story: Story) -> None:
    repo = story.repo
    assert arkai(repo, "review", "0123456789abcdef", "--accept")[0] == 5
    assert arkai(repo, "review", "0123", "--accept")[0] == 2
    assert arkai(repo, "review", story.ids["alpha_hive"])[0] == 2
    assert arkai(repo, "review", "--pending", story.ids["alpha_hive"])[0] == 2
    assert arkai(repo, "log", "ffffffffffff")[0] == 5
    assert arkai(repo, "diff", "no-such-rev")[0] == 5


def test_before_the_first_commit(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "kb")
    ok(repo, "add", str(write_source(tmp_path, "alpha.txt", ALPHA)))
    pipeline(repo)
    out = ok(repo, "diff")
    assert "items     1 added" in out and "A " in out
    meta = json.loads((item_dir(repo, "Alpha") / "metadata.json").read_text(encoding="utf-8"))
    log = ok(repo, "log", meta["id"])
    assert "working tree  (uncommitted)" in log and "added library/transcripts/Alpha" in log


def test_review_rewrites_only_its_line(tmp_path: Path, story: Story) -> None:
    """A hand-edited review.yaml keeps its comments and other entries."""
    repo = story.repo
    path = item_dir(repo, "Alpha") / "review.yaml"
    original = path.read_text(encoding="utf-8")
    try:
        hand = "# reviewed on paper first\n" + original.replace("claims:\n", "claims:\n  # keep\n")
        path.write_text(hand, encoding="utf-8")
        ok(repo, "review", story.ids["alpha_hive"], "--accept", "--by", "bo")
        text = path.read_text(encoding="utf-8")
        assert text.startswith("# reviewed on paper first\nclaims:\n  # keep\n")
        assert (
            f"{stable_key(story, story.ids['alpha_hive'])}: {{status: accepted, by: bo, at: "
            in text
        )
        assert text.count("\n") == hand.count("\n")
        # The uncommitted change shows in the claim's log, as the working tree.
        log = ok(repo, "log", story.ids["alpha_hive"])
        assert log.split("\n\n")[1].startswith("working tree  (uncommitted)")
        assert "review changed: rejected by Ana Reviewer" in log and "→ accepted by bo" in log
    finally:
        path.write_text(original, encoding="utf-8")


# -- merging two branches -------------------------------------------------------------------


def dvc_repo(tmp: Path) -> Path:
    """A scaffolded repo whose pipeline is extract → validate (the index stage, which needs
    models, is tested elsewhere), built with real `dvc repro`, one item on main."""
    repo = new_repo(tmp / "kb")
    path = repo / "dvc.yaml"
    pipeline_def = yaml.safe_load(path.read_text(encoding="utf-8"))
    pipeline_def["stages"] = {
        k: v for k, v in pipeline_def["stages"].items() if k in ("extract", "validate")
    }
    # Without the condense stage, nothing writes the manifest of condensed/ that validate reads.
    pipeline_def["stages"]["validate"]["deps"].remove("index/manifests/condensed.tsv")
    path.write_text(yaml.safe_dump(pipeline_def, sort_keys=False), encoding="utf-8")
    ok(repo, "add", str(write_source(tmp, "alpha.txt", ALPHA)))
    sh(repo, "dvc", "repro")
    sh(repo, "git", "add", "-A")
    sh(repo, "git", "commit", "-qm", "Alpha")
    return repo


@pytest.fixture(scope="module")
def base_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Built once; tests work on copies."""
    return dvc_repo(tmp_path_factory.mktemp("base"))


def copy_repo(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest, symlinks=True)
    return dest


@pytest.mark.slow
def test_two_branches_adding_items_merge(base_repo: Path, tmp_path: Path) -> None:
    repo = copy_repo(base_repo, tmp_path / "kb")
    gamma = write_source(
        tmp_path, "gamma.txt", "Porto keeps bees too. Lisbon has more hives. Amara visits both.\n"
    )
    for branch, source in (("beta", write_source(tmp_path, "beta.txt", BETA)), ("gamma", gamma)):
        sh(repo, "git", "checkout", "-qb", branch, "main")
        ok(repo, "add", str(source))
        sh(repo, "dvc", "repro")
        sh(repo, "git", "add", "-A")
        sh(repo, "git", "commit", "-qm", f"Add {branch}")

    sh(repo, "git", "checkout", "-q", "beta")
    merge = sh(repo, "git", "merge", "--no-edit", "gamma", check=False)
    assert merge.returncode == 1
    conflicted = sh(repo, "git", "diff", "--name-only", "--diff-filter=U").stdout.split()
    # Only the derived, library-wide files conflict; each item's extraction merged cleanly.
    assert sorted(conflicted) == ["dvc.lock", "reports/validation.json"], merge.stdout
    for name in conflicted:
        assert "<<<<<<<" not in (repo / name).read_text()  # merge=binary: our side, intact
    assert len(list((repo / "extracted").rglob("evidence.jsonl"))) == 3

    # The documented resolution (docs/review.md): re-derive, add, commit.
    sh(repo, "dvc", "repro")
    sh(repo, "git", "add", "-A")
    sh(repo, "git", "commit", "--no-edit", "-q")

    assert sh(repo, "git", "status", "--porcelain").stdout == ""
    sh(repo, "arkai", "validate")
    status = json.loads(sh(repo, "dvc", "status", "--json", "extract", "validate").stdout)
    assert status == {"extract": ["always changed"]}  # run on every repro (docs/scale.md)
    report = json.loads((repo / "reports/validation.json").read_text())
    assert report["items"] == 3 and report["stale"] == 0
    # evidence.jsonl stays canonical: sorted by span start, one compact JSON object a line.
    for ev in (repo / "extracted").rglob("evidence.jsonl"):
        lines = ev.read_text(encoding="utf-8").splitlines()
        starts = [json.loads(x)["span"]["utf8_byte_offset"][0] for x in lines]
        assert starts == sorted(starts)
        assert all(
            x
            == json.dumps(json.loads(x), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
            for x in lines
        )
    alpha = item_dir(repo, "Alpha")
    meta = json.loads((alpha / "metadata.json").read_text(encoding="utf-8"))
    log = sh(repo, "arkai", "log", meta["id"]).stdout
    assert f"added {alpha.relative_to(repo)}" in log


# -- the CI script against a clone ----------------------------------------------------------


@pytest.fixture(scope="module")
def pr_template(base_repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clone (origin: the base repo, with main) on a branch that adds an item: a PR."""
    tmp = tmp_path_factory.mktemp("pr")
    clone = tmp / "clone"
    sh(tmp, "git", "clone", "-q", str(base_repo), str(clone))
    sh(clone, "git", "config", "user.name", "Ana Reviewer")
    sh(clone, "git", "checkout", "-qb", "feature")
    ok(clone, "add", str(write_source(tmp, "beta.txt", BETA)))
    sh(clone, "dvc", "repro")
    sh(clone, "git", "add", "-A")
    sh(clone, "git", "commit", "-qm", "Add Beta")
    return clone


@pytest.fixture
def pr_clone(pr_template: Path, tmp_path: Path) -> Path:
    return copy_repo(pr_template, tmp_path / "clone")


def run_script(clone: Path, summary: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**git_env(), "GITHUB_STEP_SUMMARY": str(summary), **env}
    return sh(clone, "bash", "scripts/ci/validate.sh", check=False, env=full)


@pytest.mark.slow
def test_validate_script_on_a_pull_request(pr_clone: Path, tmp_path: Path) -> None:
    clone = pr_clone
    summary = tmp_path / "summary.md"
    proc = run_script(
        clone,
        summary,
        GITHUB_BASE_REF="main",
        GITHUB_EVENT_NAME="pull_request",
        GITHUB_REPOSITORY="octo/kb",
        GITHUB_SERVER_URL="https://github.com",
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = summary.read_text(encoding="utf-8")
    head = sh(clone, "git", "rev-parse", "HEAD").stdout.strip()
    assert "✅ `arkai validate`" in text and "✅ `dvc.lock` is current" in text
    assert "### arkai diff" in text and "**Items** 1 added" in text
    assert "<details>" in text and "<b>Beta</b>" in text
    assert f"https://github.com/octo/kb/blob/{head}/library/transcripts/Beta%20%28" in text


@pytest.mark.slow
def test_validate_script_fails_on_stale_and_outdated_lock(pr_clone: Path, tmp_path: Path) -> None:
    clone = pr_clone
    transcript = item_dir(clone, "Beta") / "transcript.md"
    transcript.write_text("Prepended.\n" + transcript.read_text(encoding="utf-8"), encoding="utf-8")
    sh(clone, "git", "commit", "-qam", "Edit without re-running the pipeline")
    summary = tmp_path / "summary.md"
    before = sh(clone, "git", "rev-parse", "HEAD").stdout
    proc = run_script(clone, summary, ARKAI_DIFF_BASE="0" * 40)
    assert proc.returncode == 1
    assert "failed: arkai validate dvc status" in proc.stderr
    text = summary.read_text(encoding="utf-8")
    assert "❌ `arkai validate` failed" in text and "❌ `dvc.lock` is out of date" in text
    assert "### arkai diff" in text  # a push to a new branch: HEAD~1..HEAD
    assert "STALE" in text
    assert sh(clone, "git", "status", "--porcelain").stdout == ""
    assert sh(clone, "git", "rev-parse", "HEAD").stdout == before


def _stub_arkai(tmp: Path, body: str) -> Path:
    stub = tmp / "stub-bin"
    stub.mkdir(exist_ok=True)
    script = stub / "arkai"
    script.write_text(f"#!/usr/bin/env bash\n{body}\n", encoding="utf-8")
    script.chmod(0o755)
    return stub


def test_site_script_builds_and_marks_no_jekyll(tmp_path: Path) -> None:
    repo = tmp_path / "kb"
    (repo / "scripts/ci").mkdir(parents=True)
    (repo / "scripts/ci/site.sh").write_bytes((ROOT / "scripts/ci/site.sh").read_bytes())
    stub = _stub_arkai(tmp_path, 'echo "$@" > args.txt; mkdir -p site; echo hi > site/index.html')
    env = {**git_env(), "PATH": f"{stub}{os.pathsep}{os.environ['PATH']}"}
    proc = sh(repo, "bash", "scripts/ci/site.sh", env=env)
    assert "site built in site/" in proc.stdout
    assert (repo / "args.txt").read_text().split() == ["site", "build", "--clean"]
    assert (repo / "site/.nojekyll").is_file()

    stub = _stub_arkai(tmp_path, "true")
    (repo / "site/index.html").unlink()
    env = {**git_env(), "PATH": f"{stub}{os.pathsep}{os.environ['PATH']}"}
    proc = sh(repo, "bash", "scripts/ci/site.sh", env=env, check=False)
    assert proc.returncode == 1 and "index.html was not built" in proc.stderr


@pytest.mark.slow
def test_site_script_with_the_real_site_build(base_repo: Path, tmp_path: Path) -> None:
    repo = copy_repo(base_repo, tmp_path / "kb")
    proc = sh(repo, "bash", "scripts/ci/site.sh", check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (repo / "site/index.html").is_file() and (repo / "site/.nojekyll").is_file()
