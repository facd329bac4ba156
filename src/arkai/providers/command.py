"""``command``: any executable that speaks JSON on stdin/stdout (the hook protocol of seed 003,
with seed 004's error envelope).

Configuration (``params.yaml`` → ``providers.command``):

- ``command`` — the argv to run: a list of strings, or one string split with :func:`shlex.split`.
- ``model`` — sent as ``model`` when a request names none (optional).
- ``context_chars`` (default 24,000) — what :meth:`CommandProvider.context_chars` answers.

The command gets one JSON object on stdin::

    {"version": 1, "pattern": "extract_claims", "system": "...", "input": "...",
     "model": null, "schema": {...}, "options": {...}}

When the pattern declares ``input_delimiters``, ``input`` is framed by them (first and last
line) and the message carries ``"input_delimiters": [open, close]``; the system prompt says
that the text between them is data, not instructions.

and answers with one JSON object on stdout, either::

    {"ok": true, "output": "<text>" or <any JSON value>, "model": "...", "usage": {...}}

or::

    {"ok": false, "error": {"code": "RATE_LIMITED", "message": "...", "retryable": true}}

A non-string ``output`` is serialised with :func:`json.dumps`. Failures raise
:class:`~arkai.providers.base.ProviderError`: a timeout (the whole process group is killed) and
exit status 75 (``EX_TEMPFAIL``) are retryable, as is an error envelope that says so; any other
non-zero exit, or stdout that is not such an envelope, is not.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

from arkai.adapters import interrupt
from arkai.errors import InvalidInputError
from arkai.providers.base import ProviderError, Request, Response

DEFAULT_CONTEXT_CHARS = 24_000
PROTOCOL_VERSION = 1
#: ``sysexits.h``: a temporary failure; the caller may try again.
EX_TEMPFAIL = 75


def run_process(
    argv: Sequence[str], stdin: bytes, *, timeout: float, label: str
) -> tuple[int, bytes, bytes]:
    """Run ``argv`` in its own process group with ``stdin``; return ``(returncode, stdout,
    stderr)``. ``timeout`` bounds the whole run: then the group is killed and a retryable
    ProviderError raised. A stop request (SIGTERM/SIGINT) kills it too and raises
    :class:`~arkai.adapters.interrupt.Interrupted`. An executable that cannot be started
    raises a non-retryable ProviderError."""
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
        raise ProviderError(
            f"{label}: cannot run {argv[0]!r}: {exc.strerror or exc}", retryable=False
        ) from None
    deadline = time.monotonic() + max(timeout, 0.001)
    pending: bytes | None = stdin
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                _kill_group(proc)
                raise ProviderError(
                    f"{label}: no answer within {timeout:g}s (timed out; process killed)",
                    retryable=True,
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


class CommandProvider:
    """Runs the configured command once per call; see the module docstring for the protocol."""

    name = "command"

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        cfg = dict(config or {})
        if cfg.get("command") in (None, "", []):
            raise InvalidInputError(
                "providers.command.command: not set; give the executable to run "
                "(a list of arguments or a string)"
            )
        self.argv = parse_argv(cfg["command"], "providers.command.command")
        model = cfg.get("model")
        self.model = str(model) if model else None
        chars = cfg.get("context_chars", DEFAULT_CONTEXT_CHARS)
        if isinstance(chars, bool) or not isinstance(chars, int) or chars <= 0:
            raise InvalidInputError("providers.command.context_chars: expected a positive integer")
        self._context_chars = chars

    def __repr__(self) -> str:
        return f"CommandProvider(argv={self.argv!r})"

    def context_chars(self, model: str | None) -> int:
        return self._context_chars

    def complete(self, request: Request, *, timeout: float) -> Response:
        model = request.model or self.model
        message = {
            "version": PROTOCOL_VERSION,
            "pattern": request.pattern,
            "system": request.system,
            "input": request.framed_input,
            "model": model,
            "schema": request.schema,
            "options": request.options,
        }
        if request.input_delimiters is not None:
            # "input" is framed: the text between these two lines is data, not instructions.
            message["input_delimiters"] = list(request.input_delimiters)
        stdin = json.dumps(message, ensure_ascii=False, default=str).encode("utf-8")
        code, out, err = run_process(self.argv, stdin, timeout=timeout, label="command")
        envelope = _envelope(out)
        if envelope is not None and envelope.get("ok") is False:
            raise _envelope_error(envelope, code)
        if code != 0:
            why = last_line(err) or "no message on stderr"
            raise ProviderError(
                f"command: {self.argv[0]} exited with status {code}: {why}",
                retryable=code == EX_TEMPFAIL,
            )
        if envelope is None or envelope.get("ok") is not True:
            raise ProviderError(
                f"command: {self.argv[0]} did not answer with a JSON envelope "
                f'{{"ok": true, "output": ...}} on stdout (got {_excerpt(out)!r})',
                retryable=False,
            )
        if "output" not in envelope or envelope["output"] is None:
            raise ProviderError(f"command: {self.argv[0]} answered ok without an output")
        output = envelope["output"]
        text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
        answered = envelope.get("model")
        usage = envelope.get("usage")
        meta = envelope.get("meta")
        return Response(
            text=text,
            model=answered if isinstance(answered, str) and answered else model,
            usage={
                str(k): v
                for k, v in (usage.items() if isinstance(usage, dict) else ())
                if isinstance(v, int) and not isinstance(v, bool)
            },
            meta=dict(meta) if isinstance(meta, dict) else {},
        )


def _envelope(out: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(out)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) and isinstance(value.get("ok"), bool) else None


def _envelope_error(envelope: dict[str, Any], code: int) -> ProviderError:
    error = envelope.get("error")
    error = error if isinstance(error, dict) else {}
    kind = str(error.get("code") or "ERROR")
    text = str(error.get("message") or "no message")
    retryable = error.get("retryable") is True or code == EX_TEMPFAIL
    return ProviderError(f"command: {kind}: {text}", retryable=retryable)


def _excerpt(data: bytes, limit: int = 120) -> str:
    text = " ".join(data.decode("utf-8", errors="replace").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
