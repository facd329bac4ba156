"""Work run beside the caller in a forked child (arkai.adapters.beside): its result, its
errors, its death, and the caller's."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from arkai.adapters import beside
from arkai.adapters.beside import Beside, BesideError
from arkai.errors import ArkaiError, LibraryError
from tests.adapters.httpserver import wait_for

#: Generous: the machine may be loaded; nothing here is timed, only waited for.
WAIT_S = 60.0


@pytest.fixture
def forking(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(beside.ENV, "1")
    if not beside.forking():
        pytest.skip("no fork, or one CPU: the work runs in the caller")


def gone(pid: int) -> bool:
    """No such process, or a zombie nobody has reaped yet (dead all the same)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[0] in ("Z", "X")


def test_the_result_comes_back_from_another_process(forking: None) -> None:
    with Beside("test", lambda report: (os.getpid(), b"x" * 2_000_000)) as side:
        side.start()
        assert side.forked
        pid, data = side.join()
    assert pid != os.getpid()
    assert data == b"x" * 2_000_000  # (more than a pipe holds: read while it is written)
    assert side.join() == (pid, data)  # asked again: the same answer


def test_without_fork_the_work_runs_in_the_caller_at_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(beside.ENV, "0")
    assert not beside.forking()
    ran: list[int] = []
    seen: list[tuple[int, int]] = []

    def work(report: beside.Report) -> int:
        report(1, 2)
        ran.append(os.getpid())
        return 7

    side = Beside("test", work)
    side.start(lambda done, total: seen.append((done, total)))
    assert not side.forked and ran == [os.getpid()] and seen == [(1, 2)]
    assert side.join() == 7


def test_progress_is_passed_on_to_the_last_figure(forking: None) -> None:
    def work(report: beside.Report) -> str:
        for n in range(1, 6):
            report(n, 5)
        return "done"

    seen: list[tuple[int, int]] = []
    with Beside("test", work) as side:
        side.start()
        assert side.join(lambda done, total: seen.append((done, total))) == "done"
    assert seen and seen[-1] == (5, 5) and all(t == 5 for _, t in seen)


class Unsendable(ArkaiError):
    def __init__(self, message: str, *, where: str) -> None:  # (not rebuilt from its args)
        super().__init__(f"{message} at {where}")


def raiser(exc: BaseException) -> Callable[[beside.Report], None]:
    def work(report: beside.Report) -> None:
        raise exc

    return work


def test_the_childs_error_is_raised_in_the_caller(forking: None) -> None:
    with Beside("test", raiser(LibraryError("lexical: boom", hint="run --full"))) as side:
        side.start()
        with pytest.raises(LibraryError) as err:
            side.join()
    assert err.value.message == "lexical: boom" and err.value.hint == "run --full"

    with Beside("test", raiser(Unsendable("no pickle", where="here"))) as side:
        side.start()
        with pytest.raises(ArkaiError, match=r"^Unsendable: no pickle at here$"):
            side.join()

    with Beside("test", raiser(KeyboardInterrupt())) as side:
        side.start()
        with pytest.raises(KeyboardInterrupt):
            side.join()


@pytest.mark.parametrize(
    ("end", "said"),
    [
        (lambda: os.kill(os.getpid(), signal.SIGKILL), "killed by signal 9"),
        (lambda: os._exit(3), "exit 3"),
    ],
)
def test_a_child_that_dies_without_an_answer_is_an_error(
    forking: None, end: Callable[[], None], said: str
) -> None:
    with Beside("index: side steps", lambda report: end()) as side:
        side.start()
        with pytest.raises(BesideError, match=rf"^index: side steps: .*\({said}\)$"):
            side.join()


def test_leaving_the_block_kills_a_child_still_running(forking: None, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"

    def work(report: beside.Report) -> None:
        pid_file.write_text(str(os.getpid()))
        time.sleep(WAIT_S * 10)

    with pytest.raises(RuntimeError, match="the caller failed"), Beside("test", work) as side:
        side.start()
        assert wait_for(lambda: pid_file.is_file() and pid_file.read_text() != "", WAIT_S)
        raise RuntimeError("the caller failed")
    pid = int(pid_file.read_text())
    assert gone(pid)


CALLER = """
import os, sys, time
from pathlib import Path
from arkai.adapters.beside import Beside

def work(report):
    Path(sys.argv[1]).write_text(str(os.getpid()))
    time.sleep(600)

side = Beside("test", work)
side.start()
assert side.forked
time.sleep(600)
"""


def test_the_child_dies_with_its_caller(forking: None, tmp_path: Path) -> None:
    """The caller killed outright (no clean-up of its own): the kernel kills the child, which
    would otherwise go on writing files with nobody waiting for it."""
    pid_file = tmp_path / "pid"
    caller = subprocess.Popen([sys.executable, "-c", CALLER, str(pid_file)])
    try:
        assert wait_for(lambda: pid_file.is_file() and pid_file.read_text() != "", WAIT_S)
        child = int(pid_file.read_text())
        assert not gone(child)
        caller.kill()
        caller.wait(WAIT_S)
        assert wait_for(lambda: gone(child), WAIT_S)
    finally:
        if caller.poll() is None:
            caller.kill()
