"""The README's 5-minute tour is a tested script: every command runs, in order, in a fresh
knowledge repo, and exits as its comment says (``# exit N``; 0 otherwise). Evidence and content
IDs in the tour must exist there — when extraction changes, this test names the line to fix."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT, tool_env

pytestmark = pytest.mark.slow

_EXIT = re.compile(r"#.*\bexit (\d+)")


def tour_commands(readme: str) -> list[str]:
    """The commands of the tour's bash block, continuation lines joined."""
    block = readme.split("## A 5-minute tour", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    commands: list[str] = []
    pending = ""
    for raw in block.splitlines():
        line = pending + raw
        if line.rstrip().endswith("\\") and "#" not in line:
            pending = line.rstrip()[:-1] + " "
            continue
        pending = ""
        if line.strip():
            commands.append(line.strip())
    return commands


def expected_exit(command: str) -> int:
    m = _EXIT.search(command)
    return int(m.group(1)) if m else 0


def test_the_tour_parses() -> None:
    cmds = tour_commands((ROOT / "README.md").read_text(encoding="utf-8"))
    assert cmds[0].startswith("source .venv/bin/activate")
    assert any(c.startswith("arkai init /tmp/kb") for c in cmds)
    assert any(expected_exit(c) == 1 for c in cmds)  # the drift step


def test_the_readme_tour_runs_as_written(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    kb = tmp_path / "kb"
    lines = ["set -u"]
    for n, cmd in enumerate(tour_commands(readme), 1):
        cmd = cmd.replace("/tmp/kb", str(kb)).replace("~/arkai/samples", str(ROOT / "samples"))
        want = expected_exit(cmd)
        lines.append(cmd)
        quoted = cmd.replace("'", "'\\''")
        lines.append(
            f"rc=$?; [ $rc -eq {want} ] || {{ echo 'tour command {n} exited '$rc', "
            f"expected {want}: {quoted}' >&2; exit 99; }}"
        )
    env = tool_env(EDITOR="true", VISUAL="")  # `arkai evidence open` runs the editor
    proc = subprocess.run(
        ["bash", "-c", "\n".join(lines)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
