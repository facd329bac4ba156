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

import json
from collections.abc import Mapping, Sequence
from typing import Any

from arkai.adapters import process
from arkai.adapters.params import whole_number
from arkai.adapters.process import last_line, parse_argv
from arkai.errors import InvalidInputError
from arkai.providers.base import ProviderError, Request, Response, excerpt, usage_counts

DEFAULT_CONTEXT_CHARS = 24_000
PROTOCOL_VERSION = 1
#: ``sysexits.h``: a temporary failure; the caller may try again.
EX_TEMPFAIL = 75


def run_process(
    argv: Sequence[str], stdin: bytes, *, timeout: float, label: str
) -> tuple[int, bytes, bytes]:
    """:func:`arkai.adapters.process.run_process` for providers: a timeout raises a retryable
    ProviderError, an executable that cannot be started a non-retryable one."""
    try:
        return process.run_process(argv, stdin, timeout=timeout, label=label)
    except process.ProcessError as exc:
        raise ProviderError(exc.message, retryable=exc.timed_out) from None


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
        self._context_chars = whole_number(
            cfg, "providers.command.context_chars", DEFAULT_CONTEXT_CHARS
        )

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
                f'{{"ok": true, "output": ...}} on stdout (got {excerpt(out, 120)!r})',
                retryable=False,
            )
        if "output" not in envelope or envelope["output"] is None:
            raise ProviderError(f"command: {self.argv[0]} answered ok without an output")
        output = envelope["output"]
        text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
        answered = envelope.get("model")
        meta = envelope.get("meta")
        return Response(
            text=text,
            model=answered if isinstance(answered, str) and answered else model,
            usage=usage_counts(envelope.get("usage")),
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
