"""Running DVC: the one place arkai starts ``dvc repro`` (a subprocess of this interpreter)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import yaml

from arkai.errors import InvalidInputError, LibraryError

__all__ = ["dvc_message", "repro", "run_dvc", "stage_names"]


def stage_names(root: Path) -> list[str]:
    """The stages of the repo's ``dvc.yaml``, in file order."""
    path = root / "dvc.yaml"
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except FileNotFoundError:
        raise LibraryError(f"no dvc.yaml in {root}", hint="`arkai init` scaffolds one") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise LibraryError(f"{path}: not valid YAML ({exc})") from None
    stages = data.get("stages") if isinstance(data, dict) else None
    if not isinstance(stages, dict):
        raise LibraryError(f"{path}: no `stages` mapping")
    return [str(s) for s in stages]


def repro(root: Path, stages: Sequence[str] = (), *, force: bool = False) -> int:
    """``dvc repro [STAGE…]`` in ``root`` with this interpreter's DVC; its output goes to the
    terminal; returns its exit code. Unknown stage names are refused before DVC starts."""
    known = stage_names(root)
    unknown = [s for s in stages if s not in known]
    if unknown:
        raise InvalidInputError(
            f"unknown stage(s): {', '.join(unknown)}", hint=f"the stages are {', '.join(known)}"
        )
    cmd = [sys.executable, "-m", "dvc", "repro", *(["--force"] if force else []), *stages]
    return subprocess.run(cmd, cwd=root, check=False).returncode


def run_dvc(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``dvc ARGS…`` in ``root`` with this interpreter's DVC, output captured (not raised on a
    non-zero exit: the caller decides what a failure means)."""
    cmd = [sys.executable, "-m", "dvc", *args]
    return subprocess.run(cmd, cwd=root, capture_output=True, text=True, check=False)


def dvc_message(proc: subprocess.CompletedProcess[str]) -> str:
    """DVC's own error line(s) of a failed call, without its log prefixes."""
    lines = [ln.removeprefix("ERROR: ").strip() for ln in (proc.stderr or proc.stdout).splitlines()]
    return " ".join(ln for ln in lines if ln) or f"dvc exited with {proc.returncode}"
