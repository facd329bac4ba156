"""Child processes that speak JSON on stdin/stdout: the one place arkai starts such a command
(providers ``command`` and ``fabric``, and hooks) with a deadline and a clean kill.

The child runs in its own process group, so a timeout or a stop request (SIGTERM/SIGINT,
:mod:`arkai.adapters.interrupt`) kills it and everything it started.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

from arkai.adapters import interrupt
from arkai.errors import ArkaiError, InvalidInputError


class ProcessError(ArkaiError):
    """A child process could not be started, or gave no answer in time (``timed_out``)."""

    def __init__(self, message: str, *, timed_out: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out


def run_process(
    argv: Sequence[str], stdin: bytes, *, timeout: float, label: str
) -> tuple[int, bytes, bytes]:
    """Run ``argv`` in its own process group with ``stdin``; return ``(returncode, stdout,
    stderr)``. ``timeout`` bounds the whole run: then the group is killed and a
    :class:`ProcessError` with ``timed_out=True`` raised. A stop request kills it too and
    raises :class:`~arkai.adapters.interrupt.Interrupted`. An executable that cannot be
    started raises a :class:`ProcessError`."""
    kwargs: dict[str, Any] = {}
    if sys.platform == "win32":
        kwargs["creationflags"] = subprocess.CREATE_NEW_PROCESS_GROUP
    else:
        kwargs["start_new_session"] = True
    try:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            **kwargs,
        )
    except OSError as exc:
        raise ProcessError(f"{label}: cannot run {argv[0]!r}: {exc.strerror or exc}") from None
    deadline = time.monotonic() + max(timeout, 0.001)
    pending: bytes | None = stdin
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                _kill_group(proc)
                raise ProcessError(
                    f"{label}: no answer within {timeout:g}s (timed out; process killed)",
                    timed_out=True,
                )
            try:
                # Short slices, so a stop request is seen within interrupt.POLL_S.
                out, err = proc.communicate(pending, timeout=min(interrupt.POLL_S, left))
                break
            except subprocess.TimeoutExpired:
                pending = None  # already handed over; communicate keeps feeding it
                interrupt.check(label)
    except BaseException:
        _kill_group(proc)
        raise
    return proc.returncode, out, err


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    if sys.platform == "win32":
        proc.kill()
    else:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    try:
        proc.communicate(timeout=5)
    except subprocess.TimeoutExpired:
        # A descendant left the group and still holds the pipes: stop waiting for it.
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        proc.kill()
        proc.wait()


def last_line(data: bytes, limit: int = 300) -> str:
    """The last non-blank line of a process's stderr, shortened to ``limit`` characters."""
    lines = [ln.strip() for ln in data.decode("utf-8", errors="replace").splitlines()]
    lines = [ln for ln in lines if ln]
    if not lines:
        return ""
    line = lines[-1]
    return line if len(line) <= limit else line[: limit - 1] + "…"


def parse_argv(value: Any, where: str) -> list[str]:
    """A command from config: a non-empty list of strings, or a string split like a shell."""
    if isinstance(value, str):
        try:
            argv = shlex.split(value)
        except ValueError as exc:
            raise InvalidInputError(f"{where}: cannot split {value!r}: {exc}") from None
    elif isinstance(value, list | tuple) and all(isinstance(a, str | int | float) for a in value):
        argv = [str(a) for a in value]
    else:
        raise InvalidInputError(f"{where}: expected a list of strings or a string")
    if not argv:
        raise InvalidInputError(f"{where}: empty command")
    return argv
