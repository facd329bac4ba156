"""Bearer tokens for ``arkai mcp --http``: where they come from and the ASGI gate that checks
them. Tokens come from the environment (``ARKAI_MCP_TOKEN`` — role editor,
``ARKAI_MCP_VIEWER_TOKEN`` — role viewer) or a file (``--token-file``: one token a line,
``TOKEN`` or ``ROLE TOKEN``; blank lines and ``#`` comments skipped) — never from a command
line flag, which every user of the machine could read in the process list."""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from pathlib import Path
from typing import Any

from arkai.errors import InvalidInputError
from arkai.tools.policy import EDITOR, ROLES, VIEWER

ENV_EDITOR = "ARKAI_MCP_TOKEN"
ENV_VIEWER = "ARKAI_MCP_VIEWER_TOKEN"
MIN_TOKEN = 16
#: Where the gate puts the caller's role for the tool handlers (``request.state``).
ROLE_KEY = "arkai_role"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def _add(tokens: dict[str, str], token: str, role: str, where: str) -> None:
    if role not in ROLES:
        raise InvalidInputError(f"{where}: unknown role {role!r}; use {' or '.join(ROLES)}")
    if len(token) < MIN_TOKEN or any(c.isspace() for c in token):
        raise InvalidInputError(
            f"{where}: a token must be at least {MIN_TOKEN} characters without spaces"
        )
    tokens[token] = role


def load_tokens(token_file: Path | None, environ: Mapping[str, str]) -> dict[str, str]:
    """Token → role, from the file (when given) and the environment."""
    tokens: dict[str, str] = {}
    if token_file is not None:
        try:
            text = token_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidInputError(f"{token_file}: cannot read the token file: {exc}") from None
        for n, line in enumerate(text.splitlines(), 1):
            parts = line.split()
            if not parts or parts[0].startswith("#"):
                continue
            if len(parts) > 2:
                raise InvalidInputError(f"{token_file}:{n}: expected TOKEN or ROLE TOKEN")
            role, token = (parts[0], parts[1]) if len(parts) == 2 else (EDITOR, parts[0])
            _add(tokens, token, role, f"{token_file}:{n}")
    for name, role in ((ENV_EDITOR, EDITOR), (ENV_VIEWER, VIEWER)):
        if environ.get(name):
            _add(tokens, environ[name].strip(), role, name)
    return tokens


def role_of(tokens: Mapping[str, str], header: str) -> str | None:
    """The role of the bearer token in an ``Authorization`` header (constant-time compare)."""
    scheme, _, given = header.partition(" ")
    if scheme.lower() != "bearer" or not given.strip():
        return None
    given_b = given.strip().encode("utf-8")
    found = None
    for token, role in tokens.items():
        if hmac.compare_digest(token.encode("utf-8"), given_b):
            found = role
    return found


class BearerGate:
    """ASGI middleware: a request without a known bearer token gets 401; otherwise its role
    goes to ``scope["state"]["arkai_role"]``."""

    def __init__(self, app: ASGIApp, tokens: Mapping[str, str]) -> None:
        self.app = app
        self.tokens = dict(tokens)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        header = ""
        for key, value in scope.get("headers", []):
            if key == b"authorization":
                header = value.decode("latin-1")
        role = role_of(self.tokens, header)
        if role is None:
            body = json.dumps(
                {"error": {"code": "UNAUTHORIZED", "message": "a valid bearer token is required"}}
            ).encode()
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"www-authenticate", b'Bearer realm="arkai"'),
                        (b"content-length", str(len(body)).encode()),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        scope.setdefault("state", {})[ROLE_KEY] = role
        await self.app(scope, receive, send)
