"""``arkai add`` while ``dvc repro`` runs: the pipeline ends having seen every item present at
its end, and ``arkai validate`` reports an item with no extraction (issue 10).

The second ``add`` happens inside the extract stage, after it listed the library — the
``command`` provider used here runs it on its first call — so the test does not depend on
timing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from arkai.ops.init import init_repo
from tests.conftest import ROOT, sh, tool_env

HOOK = ROOT / "tests" / "fixtures" / "decisions" / "add_during_extract.py"
#: The subprocesses run this checkout's code (the stage scripts import arkai).
ENV = tool_env(PYTHONPATH=os.environ.get("PYTHONPATH") or str(ROOT / "src"))
BIN = Path(sys.executable).parent


def ok(cwd: Path, *args: str) -> str:
    proc = sh(cwd, *args, env=ENV, check=False, timeout=600)
    assert proc.returncode == 0, f"{args} -> {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout + proc.stderr


def cli(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    code = "import sys; from arkai.cli import main; raise SystemExit(main(sys.argv[1:]))"
    return sh(repo, sys.executable, "-c", code, "--repo", str(repo), *args, env=ENV, check=False,
              timeout=600)  # fmt: skip


@pytest.mark.slow
def test_an_item_added_during_the_extract_stage_is_extracted(tmp_path: Path) -> None:
    repo = tmp_path / "kb"
    init_repo(repo, git=True)
    late = tmp_path / "late.txt"
    late.write_text("Late arrivals still count. They came during the run.\n", encoding="utf-8")
    first = tmp_path / "first.txt"
    first.write_text("The first item is here. It was listed.\n", encoding="utf-8")
    params = yaml.safe_load((repo / "params.yaml").read_text(encoding="utf-8"))
    params["extract"].update(
        provider="command", verify=False,
        patterns={"default": ["extract_claims", "extract_entities"]},
    )  # fmt: skip
    marker = tmp_path / "added-once"
    params["providers"]["command"]["command"] = [
        sys.executable, str(HOOK), str(repo), str(late), str(marker)
    ]  # fmt: skip
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    stages = yaml.safe_load((repo / "dvc.yaml").read_text(encoding="utf-8"))
    stages["stages"] = {k: v for k, v in stages["stages"].items() if k in ("extract", "validate")}
    # Without the condense stage, nothing writes the manifest of condensed/ that validate reads.
    stages["stages"]["validate"]["deps"].remove("index/manifests/condensed.tsv")
    (repo / "dvc.yaml").write_text(yaml.safe_dump(stages, sort_keys=False), encoding="utf-8")
    assert cli(repo, "add", str(first), "--quiet").returncode == 0

    ok(repo, "dvc", "repro")
    assert marker.is_file(), "the provider added the second item during the stage"
    markers = sorted((repo / "extracted").rglob("extraction.json"))
    assert len(markers) == 2, "the item that arrived mid-run was extracted"
    assert all(json.loads(m.read_text())["status"] == "ok" for m in markers)
    proc = cli(repo, "validate", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["summary"]["items"] == 2

    # Nothing is left for a later run; and an item that arrives after the run is seen by it.
    # (extract runs on every repro, "always changed": no per-item folder is walked by DVC)
    status = json.loads(sh(repo, "dvc", "status", "--json", env=ENV).stdout)
    assert status == {"extract": ["always changed"]}, status
    third = tmp_path / "third.txt"
    third.write_text("A third item arrives after the run.\n", encoding="utf-8")
    assert cli(repo, "add", str(third), "--quiet").returncode == 0
    proc = cli(repo, "validate")
    assert proc.returncode == 1 and "not extracted yet" in proc.stdout
    ok(repo, "dvc", "repro")
    assert len(list((repo / "extracted").rglob("extraction.json"))) == 3
    assert cli(repo, "validate").returncode == 0
