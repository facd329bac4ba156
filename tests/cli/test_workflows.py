"""The GitHub Actions workflows, their scripts and ``.gitattributes``: linted (actionlint,
shellcheck), identical in this repo and in what ``arkai init`` writes, and wired together."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from arkai.ops.init import init_repo, scaffold_files
from tests.conftest import ROOT

BIN = Path(sys.executable).parent
WORKFLOWS = (".github/workflows/validate.yml", ".github/workflows/site.yml")
SCRIPTS = ("scripts/ci/install.sh", "scripts/ci/validate.sh", "scripts/ci/site.sh")
OURS = (*WORKFLOWS, *SCRIPTS, ".gitattributes")


def tool(name: str) -> str | None:
    """A linter from this environment's bin folder (pip-installed) or PATH."""
    local = BIN / name
    return str(local) if local.is_file() else shutil.which(name)


@pytest.mark.parametrize("rel", OURS)
def test_repo_copy_is_the_scaffold(rel: str) -> None:
    assert rel in scaffold_files(), f"{rel} is not in src/arkai/scaffold"
    assert (ROOT / rel).read_bytes() == scaffold_files()[rel], f"{rel}: the copies differ"


def test_init_writes_them(tmp_path: Path) -> None:
    result = init_repo(tmp_path / "kb", git=False)
    for rel in OURS:
        assert rel in result["created"]
        assert (tmp_path / "kb" / rel).is_file()


def test_actionlint() -> None:
    actionlint = tool("actionlint")
    if actionlint is None:
        pytest.skip("actionlint is not installed (it comes with the dev extras)")
    files = [str(ROOT / w) for w in WORKFLOWS]
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
    shellcheck = tool("shellcheck")
    if shellcheck is None:
        pytest.skip("shellcheck is not installed")
    proc = subprocess.run(
        [shellcheck, *(str(ROOT / s) for s in SCRIPTS)], capture_output=True, text=True
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


def test_site_workflow_deploys_pages_from_main() -> None:
    wf = load(WORKFLOWS[1])
    on = wf.get("on", wf.get(True))
    assert isinstance(on, dict) and on["push"] == {"branches": ["main"]}
    uses = [str(s.get("uses", "")) for s in steps(wf)]
    assert any(u.startswith("actions/upload-pages-artifact") for u in uses)
    assert any(u.startswith("actions/deploy-pages") for u in uses)


def test_validate_script_checks_only_the_stages_in_git() -> None:
    text = (ROOT / "scripts/ci/validate.sh").read_text(encoding="utf-8")
    assert "dvc status --json extract validate" in text
    assert "--format markdown" in text and "GITHUB_STEP_SUMMARY" in text


@pytest.mark.parametrize(
    ("pyproject", "package", "expected"),
    [
        ('[project]\nname = "arkai"\n', None, "-e ."),
        (None, None, " arkai"),
        (None, "arkai==0.1.0", " arkai==0.1.0"),
    ],
)
def test_install_script_picks_the_package(
    tmp_path: Path, pyproject: str | None, package: str | None, expected: str
) -> None:
    (tmp_path / "scripts/ci").mkdir(parents=True)
    shutil.copy(ROOT / "scripts/ci/install.sh", tmp_path / "scripts/ci/install.sh")
    if pyproject:
        (tmp_path / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    env = {**os.environ, "ARKAI_CI_DRY_RUN": "1"}
    env.pop("ARKAI_PACKAGE", None)
    if package:
        env["ARKAI_PACKAGE"] = package
    proc = subprocess.run(
        ["bash", "scripts/ci/install.sh"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("python -m pip install")
    assert proc.stdout.rstrip().endswith(expected)
    assert "download.pytorch.org/whl/cpu" in proc.stdout


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
