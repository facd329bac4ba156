"""Every CLI command has help text and an entry in docs/cli.md."""

from __future__ import annotations

from collections.abc import Iterator

import click
import pytest

from arkai.cli import cli
from tests.conftest import ROOT


def commands(group: click.Group, prefix: str = "") -> Iterator[tuple[str, click.Command]]:
    for name, cmd in sorted(group.commands.items()):
        full = f"{prefix}{name}"
        yield full, cmd
        if isinstance(cmd, click.Group):
            yield from commands(cmd, full + " ")


ALL = list(commands(cli))


def test_there_are_commands() -> None:
    names = {n for n, _ in ALL}
    assert {"add", "init", "extract", "validate", "evidence show", "evidence reanchor"} <= names


@pytest.mark.parametrize(("name", "cmd"), ALL, ids=[n for n, _ in ALL])
def test_command_has_help_and_docs(name: str, cmd: click.Command) -> None:
    assert (cmd.help or "").strip(), f"`arkai {name}` has no help text"
    docs = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert f"### `arkai {name}" in docs, f"`arkai {name}` is not documented in docs/cli.md"


def test_architecture_map_is_generated_from_the_tree() -> None:
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "architecture.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
