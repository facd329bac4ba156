"""Child processes that speak JSON on stdin/stdout: the one place arkai starts such a command
(providers ``command`` and ``fabric``, and hooks) with a deadline and a clean kill.

The child runs in its own process group, so a timeout or a stop request (SIGTERM/SIGINT,
:mod:`arkai.adapters.interrupt`) kills it and everything it started.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import shlex
import signal
import subprocess
import threading
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


#: How much of a child's standard error is kept: its tail, enough for a traceback's last lines.
STDERR_KEEP = 64 * 1024


def run_process(
    argv: Sequence[str],
    stdin: bytes,
    *,
    timeout: float,
    label: str,
    max_output: int | None = None,
) -> tuple[int, bytes, bytes]:
    """Run ``argv`` in its own process group with ``stdin``; return ``(returncode, stdout,
    stderr)`` (the tail of stderr: :data:`STDERR_KEEP`). ``timeout`` bounds the whole run: then
    the group is killed and a :class:`ProcessError` with ``timed_out=True`` raised; so is one
    that prints more than ``max_output`` bytes on stdout. A stop request kills it too and
    raises :class:`~arkai.adapters.interrupt.Interrupted`. An executable that cannot be
    started raises a :class:`ProcessError`. A child may exit without reading its input."""
    try:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        raise ProcessError(f"{label}: cannot run {argv[0]!r}: {exc.strerror or exc}") from None
    deadline = time.monotonic() + max(timeout, 0.001)
    feeder = threading.Thread(target=_feed, args=(proc, stdin), daemon=True)
    feeder.start()
    try:
        out, err = _collect(proc, label, deadline, max_output)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise ProcessError(
            f"{label}: no answer within {timeout:g}s (timed out; process killed)", timed_out=True
        ) from None
    except BaseException:
        _kill_group(proc)
        raise
    finally:
        for pipe in (proc.stdout, proc.stderr):
            with contextlib.suppress(OSError):
                if pipe is not None:
                    pipe.close()
        feeder.join(timeout=5)
    return proc.returncode, out, err


def _feed(proc: subprocess.Popen[bytes], data: bytes) -> None:
    """Write ``data`` to the child's stdin and close it."""
    assert proc.stdin is not None
    with contextlib.suppress(OSError):
        proc.stdin.write(data)
    with contextlib.suppress(OSError):
        proc.stdin.close()


def _collect(
    proc: subprocess.Popen[bytes], label: str, deadline: float, max_output: int | None
) -> tuple[bytes, bytes]:
    """Read stdout and the tail of stderr until both close, then wait for the exit; past
    ``deadline`` raise TimeoutExpired. Checks for a stop request every ``interrupt.POLL_S``."""
    assert proc.stdout is not None and proc.stderr is not None
    out, err = bytearray(), bytearray()
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        sel.register(proc.stderr, selectors.EVENT_READ)
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired(proc.args, 0)
            for key, _ in sel.select(min(left, interrupt.POLL_S)):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    sel.unregister(key.fileobj)
                elif key.fileobj is proc.stdout:
                    out += chunk
                    if max_output is not None and len(out) > max_output:
                        raise ProcessError(
                            f"{label}: printed more than {max_output} bytes; stopped"
                        )
                else:
                    err = (err + chunk)[-STDERR_KEEP:]
            interrupt.check(label)
    while proc.poll() is None:
        left = deadline - time.monotonic()
        if left <= 0:
            raise subprocess.TimeoutExpired(proc.args, 0)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=min(left, interrupt.POLL_S))
        interrupt.check(label)
    return bytes(out), bytes(err)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill the child's whole process group (what it started too), then reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)


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
