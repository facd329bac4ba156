"""``arkai run`` and ``arkai resume`` on a real git + DVC repo: a failed extract run is
resumed after its cause is fixed, and a finished run has nothing to resume."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import SAMPLES
from tests.func.test_pipeline import sh

pytestmark = pytest.mark.slow


def _set_provider(repo: Path, name: str) -> None:
    params = yaml.safe_load((repo / "params.yaml").read_text())
    params["extract"]["provider"] = name
    params["extract"]["retries"] = 0
    params["providers"]["command"]["command"] = [sys.executable, "-c", "import sys; sys.exit(1)"]
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))


def test_run_fails_then_resume_finishes(tmp_path: Path) -> None:
    repo = tmp_path / "kb"
    sh(tmp_path, "arkai", "init", str(repo))
    sh(repo, "arkai", "add", str(SAMPLES / "note-2026-11-20.md"))
    assert sh(repo, "arkai", "run", "nosuch", check=False).returncode == 2

    _set_provider(repo, "command")  # every provider call fails
    failed = sh(repo, "arkai", "run", "extract", check=False)
    assert failed.returncode == 3, failed.stderr
    assert "arkai resume" in failed.stderr

    plan = json.loads(sh(repo, "arkai", "resume", "--dry-run", "--json").stdout)
    assert plan["pipeline"] == "extract" and plan["stages"] == ["extract"]
    assert plan["status"] == "failed" and plan["dry_run"] is True

    _set_provider(repo, "builtin")  # the cause, fixed
    sh(repo, "arkai", "resume", plan["run_id"][-8:])
    (record,) = (repo / "extracted").rglob("extraction.json")
    assert json.loads(record.read_text())["status"] == "ok"

    # The latest run is the successful resume: nothing left to resume.
    again = sh(repo, "arkai", "resume", check=False)
    assert again.returncode == 2 and "nothing to resume" in again.stderr
    sh(repo, "arkai", "run")  # the whole pipeline
    assert (repo / "reports" / "validation.json").is_file()
