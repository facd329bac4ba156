"""The one hook runner: JSON in, JSON out, every failure a HookError naming the problem."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from arkai.adapters.hooks import HookError, run_hook


def _script(tmp_path: Path, body: str) -> list[str]:
    path = tmp_path / "hook.py"
    path.write_text("import json, sys\n" + body, encoding="utf-8")
    return [sys.executable, str(path)]


def test_echoes_a_json_object(tmp_path: Path) -> None:
    cmd = _script(tmp_path, "d = json.load(sys.stdin)\nprint(json.dumps({'got': d['query']}))\n")
    assert run_hook(cmd, {"query": "käse"}, 30) == {"got": "käse"}


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ("sys.stderr.write('boom\\n'); sys.exit(3)\n", "exited with status 3: boom"),
        ("print('not json')\n", "stdout is not JSON"),
        ("print('[1, 2]')\n", "expected one JSON object"),
        ("print('')\n", "stdout is not JSON"),
    ],
)
def test_failures_are_hook_errors(tmp_path: Path, body: str, needle: str) -> None:
    with pytest.raises(HookError) as info:
        run_hook(_script(tmp_path, body), {}, 30)
    assert needle in info.value.message
    assert "hook python" in info.value.message


def test_timeout_kills_and_says_so(tmp_path: Path) -> None:
    cmd = _script(tmp_path, "import time\ntime.sleep(60)\n")
    with pytest.raises(HookError) as info:
        run_hook(cmd, {}, 0.5)
    assert info.value.timed_out
    assert "timed out" in info.value.message


def test_missing_executable(tmp_path: Path) -> None:
    with pytest.raises(HookError, match="cannot run"):
        run_hook([str(tmp_path / "nope")], {}, 5)


def test_rejects_empty_command() -> None:
    with pytest.raises(HookError, match="non-empty"):
        run_hook([], {}, 5)
