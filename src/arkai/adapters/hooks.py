"""Hooks (seed 003's hook protocol): any executable that reads one JSON object on stdin and
answers with one JSON object on stdout.

:func:`run_hook` is the one runner every hook goes through (``agent``, query expansion,
rerank). Each failure — the command cannot be started, it times out, it exits non-zero, its
stdout is not one JSON object — raises :class:`HookError` whose message names the hook command
and the problem; the caller decides whether to degrade to the built-in path or to stop.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from arkai.adapters.interrupt import Interrupted
from arkai.adapters.process import ProcessError, last_line, run_process
from arkai.errors import EXIT_PIPELINE, ArkaiError

#: The largest answer a hook may write to stdout (bytes).
MAX_REPLY_BYTES = 4 * 1024 * 1024


class HookError(ArkaiError):
    """A hook failed: not startable, timed out, non-zero exit, or an answer that is not one
    JSON object. ``timed_out`` tells a timeout apart."""

    exit_code = EXIT_PIPELINE

    def __init__(self, message: str, *, timed_out: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out


def run_hook(cmd: Sequence[str], payload: Mapping[str, Any], timeout_s: float) -> dict[str, Any]:
    """Send ``payload`` as JSON to ``cmd`` on stdin and return the JSON object it prints."""
    if not cmd or not all(isinstance(a, str) and a for a in cmd):
        raise HookError("hook: the command must be a non-empty list of non-empty strings")
    label = f"hook {os.path.basename(cmd[0])}"
    try:
        stdin = json.dumps(payload, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (TypeError, ValueError) as exc:
        raise HookError(f"{label}: the payload is not JSON: {exc}") from None
    try:
        code, out, err = run_process(cmd, stdin, timeout=timeout_s, label=label)
    except Interrupted:
        raise
    except ProcessError as exc:
        raise HookError(exc.message, timed_out=exc.timed_out) from None
    if code != 0:
        why = last_line(err) or "no message on stderr"
        raise HookError(f"{label}: exited with status {code}: {why}")
    if len(out) > MAX_REPLY_BYTES:
        raise HookError(f"{label}: answer of {len(out)} bytes exceeds {MAX_REPLY_BYTES}")
    try:
        reply = json.loads(out.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        shown = last_line(out, 120) or "nothing"
        raise HookError(f"{label}: stdout is not JSON ({exc}); it printed: {shown}") from None
    if not isinstance(reply, dict):
        raise HookError(f"{label}: expected one JSON object on stdout, got {type(reply).__name__}")
    return reply
