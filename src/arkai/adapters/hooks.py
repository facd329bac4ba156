"""Hooks: any executable that speaks JSON on stdin and stdout (seed 003, "Hook protocol").

:func:`run_hook` starts ``cmd`` in a process group of its own, writes ``payload`` as one JSON
object to its standard input, and reads one JSON object from its standard output. Whatever goes
wrong — the program is missing or not executable, it exits non-zero, it prints something that is
not a JSON object, it prints more than :data:`MAX_OUTPUT_BYTES` (it is stopped there, so a
runaway hook cannot fill the memory), or it runs past ``timeout_s`` (then its whole process
group is killed) — raises :class:`HookError` naming the hook and the
problem, with the tail of its standard error. Callers decide what a failure means: search degrades
to its built-in path with a warning.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import threading
import time
from typing import Any

from arkai.errors import HookError

__all__ = ["MAX_OUTPUT_BYTES", "STDERR_TAIL", "HookError", "run_hook"]

MAX_OUTPUT_BYTES = 4_000_000
"""The most a hook may print on standard output."""
STDERR_TAIL = 500
"""How many characters of a failed hook's standard error its error quotes."""


def _name(cmd: list[str]) -> str:
    return os.path.basename(cmd[0]) if cmd else "?"


def _tail(data: bytes) -> str:
    text = data.decode("utf-8", errors="replace").strip()
    if not text:
        return ""
    tail = text[-STDERR_TAIL:]
    return f"; stderr: {'…' if len(text) > STDERR_TAIL else ''}{tail}"


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """Kill the hook's whole process group (its children too), then reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)


def _feed(proc: subprocess.Popen[bytes], data: bytes) -> None:
    """Write the payload to the hook's stdin and close it (a hook may exit without reading)."""
    assert proc.stdin is not None
    with contextlib.suppress(OSError):
        proc.stdin.write(data)
    with contextlib.suppress(OSError):
        proc.stdin.close()


def _collect(proc: subprocess.Popen[bytes], name: str, deadline: float) -> tuple[bytes, bytes]:
    """Read stdout (at most MAX_OUTPUT_BYTES) and the tail of stderr until both close, then
    wait for the exit; past ``deadline`` raise (the caller kills the group)."""
    assert proc.stdout is not None and proc.stderr is not None
    out, err = bytearray(), bytearray()
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        sel.register(proc.stderr, selectors.EVENT_READ)
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired(proc.args, 0)
            for key, _ in sel.select(left):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    sel.unregister(key.fileobj)
                elif key.fileobj is proc.stdout:
                    out += chunk
                    if len(out) > MAX_OUTPUT_BYTES:
                        raise HookError(
                            f"hook {name}: printed more than {MAX_OUTPUT_BYTES} bytes; stopped"
                        )
                else:
                    err = (err + chunk)[-4 * STDERR_TAIL :]
    proc.wait(timeout=max(0.0, deadline - time.monotonic()))
    return bytes(out), bytes(err)


def run_hook(cmd: list[str], payload: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    """Run the hook ``cmd`` (an argv list, no shell) on ``payload``; its JSON object reply.

    Raises :class:`HookError` (see the module doc) on any failure.
    """
    if not cmd or not all(isinstance(a, str) and a for a in cmd):
        raise HookError(f"hook {cmd!r}: the command must be a non-empty list of strings")
    name = _name(cmd)
    data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    deadline = time.monotonic() + timeout_s
    try:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        raise HookError(f"hook {name}: cannot start {cmd[0]} ({exc.strerror or exc})") from None
    feeder = threading.Thread(target=_feed, args=(proc, data), daemon=True)
    feeder.start()
    try:
        out, err = _collect(proc, name, deadline)
    except subprocess.TimeoutExpired:
        _kill(proc)
        raise HookError(f"hook {name}: no answer within {timeout_s:g}s; stopped") from None
    except BaseException:
        _kill(proc)
        raise
    finally:
        for pipe in (proc.stdout, proc.stderr):
            with contextlib.suppress(OSError):
                if pipe is not None:
                    pipe.close()
        feeder.join(timeout=5)
    if proc.returncode != 0:
        how = (
            f"killed by signal {-proc.returncode}"
            if proc.returncode < 0
            else f"exited with status {proc.returncode}"
        )
        raise HookError(f"hook {name}: {how}{_tail(err)}")
    try:
        reply = json.loads(out.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        shown = out[:80].decode("utf-8", errors="replace")
        raise HookError(f"hook {name}: output is not JSON ({exc}): {shown!r}{_tail(err)}") from None
    if not isinstance(reply, dict):
        raise HookError(f"hook {name}: output must be a JSON object, got {type(reply).__name__}")
    return reply
