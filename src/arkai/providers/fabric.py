"""``fabric``: runs Daniel Miessler's ``fabric`` CLI, ``fabric --pattern NAME [--model M]``, with
the input on stdin; the output is what it prints.

fabric applies *its own* copy of the pattern (``~/.config/fabric/patterns/NAME/system.md``), so
the request's rendered system prompt is not sent — except when the request's input is empty
(the runner embedded the input in the system prompt), then that prompt is the stdin. Install
arkai's patterns in fabric's folder (same layout) to use custom ones.

Configuration (``params.yaml`` → ``providers.fabric``):

- ``binary`` — the executable (default ``fabric``; a name looked up on ``PATH``, or a path).
- ``model`` — passed as ``--model`` when a request names none (optional).
- ``extra_args`` — more arguments, a list or a string split like a shell (optional).
- ``context_chars`` (default 24,000) — what :meth:`FabricProvider.context_chars` answers.

A missing binary is a non-retryable ProviderError; a timeout kills the process group and is
retryable; a non-zero exit is an error carrying stderr's last line, retryable when that line
looks like a rate limit, a server error or a timeout (or the exit status is 75).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Mapping
from typing import Any

from arkai.adapters.params import whole_number
from arkai.adapters.process import last_line, parse_argv
from arkai.errors import InvalidInputError
from arkai.providers.base import ProviderError, Request, Response
from arkai.providers.command import EX_TEMPFAIL, run_process

DEFAULT_BINARY = "fabric"
DEFAULT_CONTEXT_CHARS = 24_000
_TRANSIENT = re.compile(
    r"\b(429|5\d\d)\b|rate.?limit|too many requests|timed? ?out|timeout|temporar|overloaded"
    r"|connection (reset|refused)",
    re.IGNORECASE,
)


class FabricProvider:
    """One ``fabric`` process per :meth:`complete`; see the module docstring for config."""

    name = "fabric"

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        cfg = dict(config or {})
        binary = cfg.get("binary") or DEFAULT_BINARY
        if not isinstance(binary, str):
            raise InvalidInputError("providers.fabric.binary: expected a string")
        self.binary = binary
        model = cfg.get("model")
        self.model = str(model) if model else None
        extra = cfg.get("extra_args")
        self.extra_args = parse_argv(extra, "providers.fabric.extra_args") if extra else []
        self._context_chars = whole_number(
            cfg, "providers.fabric.context_chars", DEFAULT_CONTEXT_CHARS
        )

    def __repr__(self) -> str:
        return f"FabricProvider(binary={self.binary!r}, model={self.model!r})"

    def context_chars(self, model: str | None) -> int:
        return self._context_chars

    def complete(self, request: Request, *, timeout: float) -> Response:
        exe = shutil.which(self.binary)
        if exe is None:
            raise ProviderError(
                "fabric CLI not found on PATH; install it or choose another provider "
                "(extract.provider)",
                retryable=False,
            )
        model = request.model or self.model
        argv = [exe, "--pattern", request.pattern]
        if model:
            argv += ["--model", model]
        argv += self.extra_args
        # The runner embeds the input in the system prompt when the pattern has ``{{input}}``
        # (and sends an empty input); fabric ignores our system prompt, so send that instead.
        text_in = request.framed_input if request.input else request.system
        code, out, err = run_process(argv, text_in.encode("utf-8"), timeout=timeout, label="fabric")
        if code != 0:
            why = last_line(err) or last_line(out) or "no message on stderr"
            raise ProviderError(
                f"fabric: --pattern {request.pattern} exited with status {code}: {why}",
                retryable=code == EX_TEMPFAIL or bool(_TRANSIENT.search(why)),
            )
        text = out.decode("utf-8", errors="replace")
        if not text.strip():
            raise ProviderError(
                f"fabric: --pattern {request.pattern} printed nothing"
                + (f" ({last_line(err)})" if last_line(err) else ""),
                retryable=True,
            )
        return Response(text=text, model=model, meta={"exit_status": code})
