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

import json
import os
from typing import Any

from arkai.adapters.process import ProcessError, run_process
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


def run_hook(cmd: list[str], payload: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    """Run the hook ``cmd`` (an argv list, no shell) on ``payload``; its JSON object reply.

    Raises :class:`HookError` (see the module doc) on any failure.
    """
    if not cmd or not all(isinstance(a, str) and a for a in cmd):
        raise HookError(f"hook {cmd!r}: the command must be a non-empty list of strings")
    name = _name(cmd)
    data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    try:
        code, out, err = run_process(
            cmd, data, timeout=timeout_s, label=f"hook {name}", max_output=MAX_OUTPUT_BYTES
        )
    except ProcessError as exc:
        raise HookError(exc.message) from None
    if code != 0:
        how = f"killed by signal {-code}" if code < 0 else f"exited with status {code}"
        raise HookError(f"hook {name}: {how}{_tail(err)}")
    try:
        reply = json.loads(out.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        shown = out[:80].decode("utf-8", errors="replace")
        raise HookError(f"hook {name}: output is not JSON ({exc}): {shown!r}{_tail(err)}") from None
    if not isinstance(reply, dict):
        raise HookError(f"hook {name}: output must be a JSON object, got {type(reply).__name__}")
    return reply
