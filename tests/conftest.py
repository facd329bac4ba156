"""Shared fixtures: paths to the sample sources and the shared real data, and fresh repos."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from arkai.cli import main
from arkai.ops.init import init_repo

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"
SHARED_DATA = ROOT.parent / "shared" / "data"
TRANSCRIPTS = SHARED_DATA / "transcripts"

os.environ.setdefault("DVC_NO_ANALYTICS", "1")
os.environ.setdefault("DVC_NO_UPDATER", "1")


@pytest.fixture
def kr(tmp_path: Path) -> Path:
    """A scaffolded knowledge repo without git/DVC (fast; for CLI and operation tests)."""
    path = tmp_path / "kr"
    init_repo(path, git=False)
    return path


Runner = Callable[..., tuple[int, str, str]]


@pytest.fixture
def arkai(capsys: pytest.CaptureFixture[str]) -> Runner:
    """Run the CLI in-process: ``code, out, err = arkai("--repo", p, "add", f)``."""

    def run(*args: Any) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main([str(a) for a in args])
        out, err = capsys.readouterr()
        return code, out, err

    return run


def load_json(text: str) -> Any:
    return json.loads(text)
