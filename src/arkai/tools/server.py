"""``arkai mcp``: the tool registry as an MCP server (the official ``mcp`` SDK) over stdio or
Streamable HTTP on 127.0.0.1. Every ``tools/call`` goes through
:meth:`~arkai.tools.registry.Registry.invoke` and answers with the envelope, as JSON text and as
structured content (the declared output schema is the envelope around the tool's output)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import socket
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.transport_security import TransportSecuritySettings

from arkai.adapters.repo import Repo
from arkai.errors import ResourceLimitError
from arkai.tools.auth import ROLE_KEY, BearerGate
from arkai.tools.policy import EDITOR
from arkai.tools.registry import Caller, Limits, Registry

NAME = "arkai"
#: The longest JSON-RPC line read from stdin (bytes).
MAX_LINE = 16 * 1024 * 1024


@dataclass(frozen=True)
class ServeOptions:
    allow_write: bool = False
    limits: Limits = field(default_factory=Limits)


def _caller(ctx: Any, base: Caller) -> Caller:
    """The stdio caller, or over HTTP the role the bearer gate found for this request."""
    request = getattr(ctx, "request", None)
    state = getattr(request, "scope", {}).get("state", {}) if request is not None else {}
    role = state.get(ROLE_KEY) if isinstance(state, dict) else None
    return replace(base, role=role) if role else base


def build_server(repo: Repo, registry: Registry, base: Caller, opts: ServeOptions) -> Server[Any]:
    from arkai import __version__

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        caller = _caller(ctx, base)
        return types.ListToolsResult(
            tools=[
                types.Tool.model_validate(t.declaration(), by_alias=True, by_name=True)
                for t in registry.visible(caller)
            ]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        caller = _caller(ctx, base)
        args: Any = params.arguments if params.arguments is not None else {}
        envelope = await anyio.to_thread.run_sync(
            lambda: registry.invoke(repo, params.name, args, caller, limits=opts.limits)
        )
        body = envelope.to_dict()
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(body, ensure_ascii=False))],
            structured_content=body,
            is_error=not envelope.ok,
        )

    return Server(NAME, version=__version__, on_list_tools=list_tools, on_call_tool=call_tool)


async def _until_signal(scope: anyio.CancelScope) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for _ in signals:
            scope.cancel()
            return


class _StdinLines:
    """Lines of stdin read by the event loop (a pipe, socket or terminal; anything else — a
    regular file — on a worker thread). The SDK's own reader blocks a worker thread in
    ``readline``, which the interpreter waits for at exit: a SIGTERM would then hang until the
    client closed the pipe."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw
        self.reader: asyncio.StreamReader | None = None
        self.threaded = False

    def __aiter__(self) -> _StdinLines:
        return self

    async def __anext__(self) -> str:
        if self.reader is None and not self.threaded:
            loop = asyncio.get_running_loop()
            reader = asyncio.StreamReader(limit=MAX_LINE)
            try:
                await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), self.raw)
                self.reader = reader
            except (ValueError, OSError):
                self.threaded = True
        if self.reader is not None:
            line = await self.reader.readline()
        else:
            line = await anyio.to_thread.run_sync(self.raw.readline)
        if not line:
            raise StopAsyncIteration
        return str(line.decode("utf-8", errors="replace"))


def serve_stdio(repo: Repo, registry: Registry, opts: ServeOptions) -> None:
    """Serve on stdin/stdout until the client closes them or a SIGTERM/SIGINT arrives."""
    from mcp.server.stdio import stdio_server

    caller = Caller(role=EDITOR, transport="stdio", allow_write=opts.allow_write)
    server = build_server(repo, registry, caller, opts)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_until_signal, tg.cancel_scope)
            lines: Any = _StdinLines(sys.stdin.buffer)
            async with stdio_server(stdin=lines) as (read, write):
                await server.run(read, write, server.create_initialization_options())
            tg.cancel_scope.cancel()

    anyio.run(main)


def http_app(
    repo: Repo, registry: Registry, opts: ServeOptions, tokens: Mapping[str, str], port: int
) -> Any:
    """The Starlette app behind the bearer gate; Host and Origin must name 127.0.0.1 or
    localhost on ``port`` (DNS-rebinding protection, the SDK's check)."""
    caller = Caller(role="viewer", transport="http", allow_write=opts.allow_write)
    server = build_server(repo, registry, caller, opts)
    hosts = [f"127.0.0.1:{port}", f"localhost:{port}"]
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=hosts,
        allowed_origins=[f"http://{h}" for h in hosts],
    )
    app = server.streamable_http_app(transport_security=security, host="127.0.0.1")
    return BearerGate(app, tokens)


def serve_http(
    repo: Repo, registry: Registry, opts: ServeOptions, tokens: Mapping[str, str], port: int,
    *, ready: Any = None,
) -> None:  # fmt: skip
    """Serve Streamable HTTP on 127.0.0.1:``port`` (``/mcp``) until SIGTERM/SIGINT; then
    close the socket and return."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError as exc:
        sock.close()
        raise ResourceLimitError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror}") from None
    port = sock.getsockname()[1]
    app = http_app(repo, registry, opts, tokens, port)
    config = uvicorn.Config(app, log_level="warning", lifespan="on", access_log=False)

    class _Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Any:  # our own handler below stops it
            yield

    userver = _Server(config)

    async def main() -> None:
        async def stop_on_signal() -> None:
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for _ in signals:
                    userver.should_exit = True
                    return

        async with anyio.create_task_group() as tg:
            tg.start_soon(stop_on_signal)
            if ready is not None:
                ready(port)
            await userver.serve(sockets=[sock])
            tg.cancel_scope.cancel()

    try:
        anyio.run(main)
    finally:
        sock.close()
