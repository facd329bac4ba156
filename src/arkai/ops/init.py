"""``arkai init``: scaffold a knowledge repo that ``dvc repro`` builds at once."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path

from arkai import __version__
from arkai.adapters.fs import atomic_write_bytes
from arkai.errors import ArkaiError
from arkai.model.record import AsDict

#: Scaffold files whose stored name differs from the name in the repo.
#: ``dvc.yaml`` is stored as ``dvc.yaml.in`` so DVC never mistakes the scaffold inside this
#: package for a pipeline of the repo it is installed in.
_RENAMES = {"gitignore": ".gitignore", "dvcignore": ".dvcignore", "dvc.yaml.in": "dvc.yaml"}
_KEEP_DIRS = ("library", "extracted", "condensed", "reports")
#: The branch ``git init`` creates when git's ``init.defaultBranch`` is not set.
DEFAULT_BRANCH = "main"
#: The pip requirement the CI workflows install (scripts/ci/install.sh) unless the repository
#: variable ``ARKAI_PACKAGE`` overrides it: the arkai that scaffolded the repo.
REQUIREMENTS = "requirements.txt"


def requirements_text(version: str = __version__) -> bytes:
    return (
        "# The arkai that scaffolded this repository (`arkai init`). CI installs exactly this\n"
        "# (scripts/ci/install.sh); the repository variable ARKAI_PACKAGE overrides it.\n"
        f"arkai=={version}\n"
    ).encode()


def scaffold_files() -> dict[str, bytes]:
    """Relative path → bytes of every file ``arkai init`` writes."""
    base = resources.files("arkai") / "scaffold"
    out: dict[str, bytes] = {}

    def walk(node: Traversable, prefix: str) -> None:
        for child in sorted(node.iterdir(), key=lambda c: c.name):
            if child.name == "__pycache__":
                continue
            rel = f"{prefix}{child.name}"
            if child.is_dir():
                walk(child, rel + "/")
            else:
                out[_RENAMES.get(rel, rel)] = child.read_bytes()

    walk(base, "")
    out[REQUIREMENTS] = requirements_text()
    return out


def default_branch(cwd: Path) -> str:
    """git's ``init.defaultBranch`` where the user set one, else ``main``."""
    proc = subprocess.run(
        ["git", "config", "--get", "init.defaultBranch"],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.stdout.strip() or DEFAULT_BRANCH


def _run(cmd: list[str], cwd: Path) -> None:
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        raise ArkaiError(f"`{' '.join(cmd)}` failed in {cwd}: {proc.stderr.strip()[:500]}")


@dataclass(frozen=True)
class InitResult(AsDict):
    """``arkai init``: where the repo is and which scaffold files were written or kept."""

    path: str
    created: list[str]
    kept: list[str]
    """Files already there (never overwritten)."""


def init_repo(directory: Path, *, git: bool = True) -> InitResult:
    """Write the scaffold into ``directory`` without overwriting anything already there,
    then ``git init`` and ``dvc init`` where they are missing."""
    directory = directory.resolve()
    if directory.exists() and not directory.is_dir():
        raise ArkaiError(f"{directory}: exists and is not a directory")
    directory.mkdir(parents=True, exist_ok=True)
    created: list[str] = []
    kept: list[str] = []
    for rel, data in scaffold_files().items():
        target = directory / rel
        if target.exists():
            kept.append(rel)
            continue
        atomic_write_bytes(target, data)
        created.append(rel)
    for name in _KEEP_DIRS:
        keep = directory / name / ".gitkeep"
        if not (directory / name).exists():
            atomic_write_bytes(keep, b"")
            created.append(f"{name}/.gitkeep")
    if git:
        if not (directory / ".git").exists():
            _run(["git", "init", "-q", "-b", default_branch(directory)], directory)
            created.append(".git/")
        if not (directory / ".dvc").exists():
            _run([sys.executable, "-m", "dvc", "init", "-q"], directory)
            _run([sys.executable, "-m", "dvc", "config", "core.analytics", "false"], directory)
            created.append(".dvc/")
    return InitResult(str(directory), created, kept)
