"""A local HTTP server for tests that fetch: loopback only, one thread, stopped cleanly.

Routes map a path to what to answer. A route given as a tuple is ``(status, headers, body)``
where ``body`` is bytes, a str (sent as UTF-8) or a callable taking the :class:`Request` and
returning bytes; :meth:`LocalHTTPServer.route`, :meth:`~LocalHTTPServer.redirect` and
:meth:`~LocalHTTPServer.slow` build routes with less typing. A request's path with its query
(``/a?x=1``) is looked up first, then the path alone; anything else is a 404.

Use the fixture (import it into the test module under its function name; pytest registers it
as ``http_server``)::

    from tests.adapters.httpserver import LocalHTTPServer, http_server_fixture  # noqa: F401

    def test_x(http_server: LocalHTTPServer) -> None:
        http_server.route("/page", body=b"<html>...</html>", content_type="text/html")
        fetch(http_server.url("/page"))

or a context manager: ``with serve({"/": (200, {}, b"hi")}) as srv: ...``.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import urlsplit

import pytest

Body = bytes | str | Callable[["Request"], bytes]
RouteSpec = tuple[int, Mapping[str, str], Body]


@dataclass(frozen=True)
class Request:
    """One request as the server saw it."""

    method: str
    path: str
    """Path with query, as sent (``/a?x=1``)."""
    headers: dict[str, str]


@dataclass
class Route:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: Body = b""
    delay: float = 0.0
    """Seconds to wait before answering (cut short when the server stops)."""
    trickle: float = 0.0
    """Seconds between bytes: the whole answer (status line, headers, body) is sent one byte at
    a time, as a stalling server would (cut short when the server stops)."""


class LoopbackServer:
    """The lifecycle shared by the test servers: a ``ThreadingHTTPServer`` on ``127.0.0.1`` and a
    free port, served from a daemon thread; ``stop`` wakes handlers waiting on ``_stopping``."""

    def __init__(self) -> None:
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        """The request handler, bound to this server object."""
        raise NotImplementedError

    def trickle(self, wfile: Any, data: bytes, interval: float) -> None:
        """Write ``data`` to ``wfile`` one byte every ``interval`` seconds, until done, the
        client hangs up or the server stops."""
        with contextlib.suppress(OSError):
            for i in range(len(data)):
                if i and self._stopping.wait(interval):
                    return
                wfile.write(data[i : i + 1])
                wfile.flush()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("server not started")
        return int(self._server.server_address[1])

    def start(self) -> Self:
        self._stopping.clear()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self.handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Wake waiting handlers, stop serving, close the socket, join the thread."""
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class LocalHTTPServer(LoopbackServer):
    """A ``ThreadingHTTPServer`` on ``127.0.0.1`` and a free port, serving :attr:`routes`."""

    def __init__(self, routes: Mapping[str, RouteSpec | Route] | None = None) -> None:
        self.routes: dict[str, Route] = {}
        self.requests: list[Request] = []
        super().__init__()
        self._lock = threading.Lock()
        for path, spec in (routes or {}).items():
            self.add(path, spec)

    # -- routes --------------------------------------------------------------------------

    def add(self, path: str, spec: RouteSpec | Route) -> None:
        """Serve ``spec`` at ``path`` (a :class:`Route` or ``(status, headers, body)``)."""
        if isinstance(spec, Route):
            self.routes[path] = spec
        else:
            status, headers, body = spec
            self.routes[path] = Route(status, dict(headers), body)

    def route(
        self,
        path: str,
        *,
        body: Body = b"",
        status: int = 200,
        content_type: str | None = "text/html; charset=utf-8",
        headers: Mapping[str, str] | None = None,
        delay: float = 0.0,
        trickle: float = 0.0,
    ) -> None:
        """Serve ``body`` at ``path`` with ``content_type`` (None: no Content-Type header);
        ``trickle``: seconds between the answer's bytes (see :attr:`Route.trickle`)."""
        all_headers = dict(headers or {})
        if content_type is not None:
            all_headers.setdefault("Content-Type", content_type)
        self.routes[path] = Route(status, all_headers, body, delay, trickle)

    def redirect(self, path: str, to: str, status: int = 302) -> None:
        """Answer ``path`` with a redirect to ``to`` (a path on this server or a full URL)."""
        self.routes[path] = Route(status, {"Location": to}, b"")

    def slow(self, path: str, seconds: float, *, body: Body = b"<html>late</html>") -> None:
        """Answer ``path`` only after ``seconds`` (longer than a client's timeout, typically)."""
        self.route(path, body=body, delay=seconds)

    # -- lifecycle -----------------------------------------------------------------------

    def url(self, path: str = "/") -> str:
        """Absolute URL of ``path`` on this server."""
        return f"http://127.0.0.1:{self.port}{path}"

    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        owner = self

        class Handler(_Handler):
            server_owner = owner

        return Handler

    # -- used by the handler -------------------------------------------------------------

    def _lookup(self, raw_path: str) -> Route | None:
        return self.routes.get(raw_path) or self.routes.get(urlsplit(raw_path).path)

    def _record(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)


class _Handler(BaseHTTPRequestHandler):
    server_owner: LocalHTTPServer
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self._answer(with_body=True)

    def do_HEAD(self) -> None:
        self._answer(with_body=False)

    def _answer(self, *, with_body: bool) -> None:
        owner = self.server_owner
        request = Request(self.command, self.path, {k: v for k, v in self.headers.items()})
        owner._record(request)
        route = owner._lookup(self.path)
        if route is None:
            route = Route(404, {"Content-Type": "text/plain"}, b"not found")
        if route.delay and owner._stopping.wait(route.delay):
            return  # stopping: drop the connection unanswered
        body: Any = route.body(request) if callable(route.body) else route.body
        data = body.encode("utf-8") if isinstance(body, str) else bytes(body)
        if route.trickle:
            head = [f"HTTP/1.1 {route.status} X", *(f"{k}: {v}" for k, v in route.headers.items()),
                    f"Content-Length: {len(data)}", "Connection: close", "", ""]  # fmt: skip
            raw = "\r\n".join(head).encode("latin-1") + (data if with_body else b"")
            owner.trickle(self.wfile, raw, route.trickle)
            self.close_connection = True
            return
        with contextlib.suppress(OSError):
            self.send_response(route.status)
            for key, value in route.headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Connection", "close")
            self.end_headers()
            if with_body:
                self.wfile.write(data)
        self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests read :attr:`LocalHTTPServer.requests` instead."""

    def handle(self) -> None:
        with contextlib.suppress(OSError):
            super().handle()


@contextlib.contextmanager
def serve(routes: Mapping[str, RouteSpec | Route] | None = None) -> Iterator[LocalHTTPServer]:
    """A started :class:`LocalHTTPServer`, stopped on exit."""
    server = LocalHTTPServer(routes).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(name="http_server")
def http_server_fixture() -> Iterator[LocalHTTPServer]:
    """A started local server with no routes; add them in the test. Stopped afterwards."""
    with serve() as server:
        yield server


def wait_for(predicate: Callable[[], bool], timeout: float = 2.0) -> bool:
    """Poll ``predicate`` until true or ``timeout`` seconds pass (for asserting on requests)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()
