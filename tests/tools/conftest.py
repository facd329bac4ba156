"""A small indexed library in a git repo, built once per test module (the items of
tests/cli/test_search.py, the real ``index`` stage with that module's fake embedder)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from arkai.adapters import events
from arkai.adapters.repo import Repo
from arkai.ops.init import init_repo
from arkai.tools.audit import AUDIT_DIR
from tests.cli.test_search import ITEMS, FakeEmbedder, _write_item
from tests.conftest import tool_env


def read_audit(root: Path) -> list[dict[str, Any]]:
    """Every audit line the tools wrote under ``root``, oldest file first."""
    return [line for path in sorted((root / AUDIT_DIR).glob("*.jsonl"))
            for line in events.read_events(path)]  # fmt: skip


def build_library(root: Path) -> dict[str, Any]:
    from arkai.ops.index import run_index
    from arkai.search import embed

    init_repo(root, git=False)
    info = {spec["title"]: _write_item(root, spec) for spec in ITEMS}
    with pytest.MonkeyPatch.context() as mp:
        fake = FakeEmbedder()
        mp.setattr(embed, "get_embedder", lambda name="default", **kw: fake)
        run_index(Repo.at(root))
    from arkai.cli import main

    assert main(["--repo", str(root), "memory", "build", "--quiet"]) == 0  # the real embedder
    env = tool_env()
    for cmd in (["git", "init", "-q", "-b", "main"], ["git", "add", "-A"],
                ["git", "commit", "-q", "-m", "library"]):  # fmt: skip
        subprocess.run(cmd, cwd=root, env=env, check=True, capture_output=True)
    return {"root": root, **info}


@pytest.fixture(scope="module")
def toollib(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    yield build_library(tmp_path_factory.mktemp("toollib") / "kr")
