"""The DVC stage scripts call operations through the one stage runner, never the CLI."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, Runner, sh

STAGE_DIRS = [ROOT / "stages", ROOT / "src" / "arkai" / "scaffold" / "stages"]


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found |= {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return found


@pytest.mark.parametrize("folder", STAGE_DIRS, ids=["repo", "scaffold"])
def test_stage_scripts_call_an_operation_through_the_runner(folder: Path) -> None:
    scripts = sorted(folder.glob("*.py"))
    assert [p.name for p in scripts] == [
        "beliefs.py",
        "condense.py",
        "extract.py",
        "index.py",
        "site.py",
        "validate.py",
    ]
    for script in scripts:
        names = _imports(script)
        assert "arkai.cli.stage.run_stage" in names, script
        assert any(n.startswith("arkai.ops.") for n in names), script
        assert "arkai.cli.main" not in names and "arkai.cli" not in names, script


def _stage(repo: Path, name: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return sh(cwd or repo, sys.executable, repo / "stages" / f"{name}.py", check=False)


def test_validate_stage_writes_its_metric(kr: Path) -> None:
    done = _stage(kr, "validate")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("validate: 0 items, 0 valid"), done.stdout
    report = json.loads((kr / "reports" / "validation.json").read_text(encoding="utf-8"))
    assert report["items"] == 0 and report["ok"] is True


def test_stage_failures_map_to_the_cli_exit_codes(kr: Path, arkai: Runner, tmp_path: Path) -> None:
    code, _, err = arkai("--repo", kr, "remember", "Bees dance to point at flowers.")
    assert code == 0, err
    done = _stage(kr, "validate")  # the note is not extracted yet: validation fails
    assert done.returncode == 1
    assert "1 not extracted" in done.stdout
    assert "arkai: error: some items are unreadable, failed or not extracted" in done.stderr
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    lost = _stage(kr, "validate", cwd=outside)
    assert lost.returncode == 1
    assert lost.stderr.startswith("arkai: error: ") and "not inside an arkai" in lost.stderr
    assert "Traceback" not in lost.stderr
