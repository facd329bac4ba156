"""docs/agents.md's tool reference is generated from the registry and current."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT


def test_tool_reference_is_current() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "agents_doc.py"), "--check"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
