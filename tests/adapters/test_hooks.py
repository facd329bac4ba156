"""``run_hook``: JSON in, JSON out, and every way a hook can fail, with real executables."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from arkai.adapters.hooks import STDERR_TAIL, HookError, run_hook
from arkai.errors import EXIT_PIPELINE


def hook(tmp_path: Path, body: str) -> list[str]:
    path = tmp_path / "hook.py"
    path.write_text(f"#!{sys.executable}\nimport json, os, sys, time\n{body}\n", encoding="utf-8")
    path.chmod(0o755)
    return [str(path)]


def test_json_in_json_out(tmp_path: Path) -> None:
    cmd = hook(
        tmp_path,
        "req = json.load(sys.stdin)\nprint(json.dumps({'echo': req, 'argv': sys.argv[1:]}))",
    )
    assert run_hook([*cmd, "x"], {"query": "ünïcode"}, 10) == {
        "echo": {"query": "ünïcode"},
        "argv": ["x"],
    }


@pytest.mark.parametrize(
    ("body", "expect"),
    [
        (
            "sys.stderr.write('boom\\n' * 2); sys.exit(7)",
            "hook hook.py: exited with status 7; stderr: boom\nboom",
        ),
        ("print('not json')", "hook hook.py: output is not JSON"),
        ("print('[1, 2]')", "hook hook.py: output must be a JSON object, got list"),
        ("sys.stdout.buffer.write(b'\\xff\\xfe')", "hook hook.py: output is not JSON"),
        ("os.kill(os.getpid(), 9)", "hook hook.py: killed by signal 9"),
    ],
)
def test_failures_name_the_hook_and_the_problem(tmp_path: Path, body: str, expect: str) -> None:
    with pytest.raises(HookError) as err:
        run_hook(hook(tmp_path, body), {}, 10)
    assert str(err.value).startswith(expect)
    assert err.value.exit_code == EXIT_PIPELINE


def test_stderr_is_cut_to_its_tail(tmp_path: Path) -> None:
    with pytest.raises(HookError) as err:
        run_hook(hook(tmp_path, "sys.stderr.write('x' * 5000 + 'END'); sys.exit(1)"), {}, 10)
    msg = str(err.value)
    assert msg.endswith("END") and len(msg) < STDERR_TAIL + 100


def test_missing_or_empty_command(tmp_path: Path) -> None:
    with pytest.raises(HookError, match="hook nope: cannot run"):
        run_hook([str(tmp_path / "nope")], {}, 10)
    with pytest.raises(HookError, match="non-empty list"):
        run_hook([], {}, 10)


def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    """The hook starts a grandchild that holds stdout open; both are gone after the timeout."""
    pidfile = tmp_path / "child.pid"
    body = (
        "import subprocess\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
        f"open({str(pidfile)!r}, 'w').write(str(child.pid))\n"
        "time.sleep(120)"
    )
    with pytest.raises(HookError, match=r"hook hook.py: no answer within 1s \(timed out"):
        run_hook(hook(tmp_path, body), {}, 1)
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 30  # a hang guard; the kill is immediate
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        # A killed child of the killed hook is reparented and reaped by init; poll until then.
        if Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z":
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"the hook's child {pid} still runs")


def test_runaway_output_is_stopped_at_the_limit(tmp_path: Path) -> None:
    body = "chunk = b'x' * 65536\nwhile True:\n    sys.stdout.buffer.write(chunk)"
    with pytest.raises(HookError, match=r"hook hook.py: printed more than \d+ bytes; stopped"):
        run_hook(hook(tmp_path, body), {}, 60)


def test_a_hook_that_never_reads_its_input(tmp_path: Path) -> None:
    """A large payload and a hook that answers without reading it: no deadlock, no error."""
    assert run_hook(hook(tmp_path, "print('{}')"), {"x": "y" * 1_000_000}, 30) == {}
