"""SIGTERM during a long CPU-bound *builtin* item stops the run inside that item: the pattern
call under way is cut and the item abandoned (no ``extraction.json``: the next run redoes it),
instead of the call being run to its end first, which a thread pool's shutdown used to wait
for."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from arkai.cli import main
from arkai.ops.init import init_repo

pytestmark = pytest.mark.slow

SENTENCES = (
    "The colony keeps its queen warm through the winter by clustering tightly around her.",
    "Anna measured the hive weight every morning and logged it in a shared spreadsheet.",
    "Varroa mites remain the biggest single factor in colony losses across the region.",
    "A clean build of the compiler took fourteen minutes on the old build servers.",
)


def _started(root: Path) -> bool:
    for log in (root / ".arkai" / "runs").glob("*/events.jsonl"):
        for line in log.read_text(encoding="utf-8").splitlines():
            event = json.loads(line)
            if event.get("type") == "StepStarted" and event.get("step") == "extract":
                return True
    return False


def test_sigterm_interrupts_a_long_builtin_item(tmp_path: Path) -> None:
    root = tmp_path / "kr"
    init_repo(root, git=False)
    big = tmp_path / "long-lecture.txt"
    # ≈ 3 MB of prose: the builtin provider works on it for far longer than the stop takes.
    paragraphs = [" ".join(SENTENCES[(i + k) % 4] for k in range(4)) + f" Part {i}." for i in
                  range(9000)]  # fmt: skip
    big.write_text("\n\n".join(paragraphs) + "\n", encoding="utf-8")
    assert main(["--repo", str(root), "add", "-q", str(big)]) == 0
    env = {**os.environ, "ARKAI_REPO": str(root)}
    proc = subprocess.Popen([sys.executable, "-m", "arkai.cli.main", "extract", "--quiet"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.monotonic() + 120  # a hang guard while the run starts
    while not _started(root) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert _started(root), "the run never started the item"
    proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=120)  # a hang guard; the stop takes well under 2 s
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail("SIGTERM did not stop the run")
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    # The item was abandoned, not finished: nothing is committed for it, the next run redoes it.
    assert not list((root / "extracted").rglob("extraction.json"))
    # And the pattern call under way was cut, not completed first: a pool thread used to run
    # it to the end (tens of seconds here) and store its response before the process exited.
    stored = [p for p in (root / ".arkai" / "responses").rglob("*") if p.is_file()]
    assert stored == [], stored


def test_a_stop_signal_wrapped_by_the_interpreter_is_still_an_interrupt(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A stop signal that lands in a descriptor's ``__set_name__`` while a class is made (a
    lazy import at the moment of the signal) is wrapped by the interpreter in a
    ``RuntimeError``: still the run's 130 and the interrupted line, not an unexpected error.
    An error whose causes hold no interrupt stays one."""
    from arkai.adapters.interrupt import StopSignal
    from arkai.cli import INTERRUPTED, guarded

    class Landed:
        def __set_name__(self, owner: type, name: str) -> None:
            raise StopSignal()

    def make_class() -> None:
        type("Unit", (), {"words": Landed()})

    assert guarded(make_class) == 130
    assert INTERRUPTED in capsys.readouterr().err

    def wrapped_error() -> None:
        try:
            raise ValueError("not an interrupt")
        except ValueError as exc:
            raise RuntimeError("wrapped") from exc

    assert guarded(wrapped_error) == 1
    assert "unexpected error: RuntimeError: wrapped" in capsys.readouterr().err
