"""HTTP for sources and providers: one total deadline per exchange, a size cap, http(s) only, and
errors that name the URL.

A socket timeout bounds each ``recv``, not the exchange: a server trickling one byte a second
never trips it. :func:`exchange` therefore runs every request under a watchdog that shuts the
exchange's sockets down at the deadline or as soon as a stop is requested
(``adapters.interrupt``), then raises :class:`DeadlineExceeded` or
:class:`~arkai.adapters.interrupt.Interrupted` — whatever the connection had delivered. Openers
must come from :func:`build_opener` so their connections register with the watchdog.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from email.message import Message
from typing import Any
from urllib.parse import urlsplit

from arkai import __version__
from arkai.adapters import interrupt
from arkai.errors import ArkaiError, InvalidInputError, ResourceLimitError

USER_AGENT = f"arkai/{__version__} (+knowledge library)"
DEFAULT_TIMEOUT = 20.0
DEFAULT_MAX_BYTES = 50_000_000


class FetchError(ArkaiError):
    """The network said no: unreachable host, timeout, HTTP error status."""


class DeadlineExceeded(TimeoutError):
    """The whole exchange (connect, headers, body) did not finish within its time."""


class BodyTooLarge(ResourceLimitError):
    """The response body is over the size cap."""


@dataclass(frozen=True, slots=True)
class Response:
    """A completed GET."""

    url: str
    """The final URL, after redirects."""
    status: int
    content_type: str
    """Media type without parameters, lower-case (``text/html``)."""
    charset: str | None
    data: bytes


@dataclass(frozen=True, slots=True)
class Exchange:
    """One finished request: the status (error statuses included), headers and whole body."""

    url: str
    status: int
    reason: str
    headers: Message
    data: bytes


class _Guard:
    """Shuts down the sockets of one exchange at its deadline or on a stop request."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.fired: str | None = None
        self._socks: list[socket.socket] = []
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="arkai-http-guard", daemon=True)
        self._thread.start()

    def add(self, sock: socket.socket) -> None:
        # A duplicate descriptor of our own: shutting it down ends the connection even after
        # TLS wrapping, and its number cannot be reused by someone else's socket meanwhile.
        with self._lock:
            if self._done.is_set():
                return
            self._socks.append(sock.dup())
            if self.fired:
                self._shutdown()

    def _watch(self) -> None:
        while not self._done.wait(min(interrupt.POLL_S, max(0.0, self._left()))):
            if interrupt.stop_requested():
                self._fire("stop")
            elif time.monotonic() >= self.deadline:
                self._fire("deadline")
            if self.fired:
                return

    def _left(self) -> float:
        return self.deadline - time.monotonic()

    def _fire(self, why: str) -> None:
        with self._lock:
            if self._done.is_set():
                return
            self.fired = why
            self._shutdown()

    def _shutdown(self) -> None:
        for sock in self._socks:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        with self._lock:
            self._done.set()
            for sock in self._socks:
                with contextlib.suppress(OSError):
                    sock.close()
            self._socks.clear()
        self._thread.join()


_local = threading.local()


def _create_connection(*args: Any, **kwargs: Any) -> socket.socket:
    sock = socket.create_connection(*args, **kwargs)
    guard: _Guard | None = getattr(_local, "guard", None)
    if guard is not None:
        guard.add(sock)
    return sock


class _HTTPConnection(http.client.HTTPConnection):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = _create_connection


class _HTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = _create_connection


class _HTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_HTTPConnection, req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_HTTPSConnection, req)


def build_opener(*handlers: urllib.request.BaseHandler) -> urllib.request.OpenerDirector:
    """``urllib.request.build_opener`` whose connections :func:`exchange` can cut."""
    return urllib.request.build_opener(_HTTPHandler(), _HTTPSHandler(), *handlers)


@contextlib.contextmanager
def _guarded(deadline: float) -> Iterator[_Guard]:
    guard = _Guard(deadline)
    previous = getattr(_local, "guard", None)
    _local.guard = guard
    try:
        yield guard
    finally:
        _local.guard = previous
        guard.close()


def exchange(
    opener: urllib.request.OpenerDirector,
    req: urllib.request.Request,
    *,
    deadline: float,
    max_bytes: int,
    what: str,
) -> Exchange:
    """Send ``req`` and read the whole answer before the monotonic ``deadline``.

    HTTP error statuses are returned, not raised. Raises :class:`DeadlineExceeded`,
    :class:`~arkai.adapters.interrupt.Interrupted`, :class:`BodyTooLarge`; connection failures
    come through as ``urllib.error.URLError`` / ``OSError`` / ``http.client.HTTPException``.
    ``what`` names the request in messages.
    """
    interrupt.check(what)
    with _guarded(deadline) as guard:
        try:
            result = _send(opener, req, guard, max_bytes, what)
        except (OSError, http.client.HTTPException, ValueError):
            if guard.fired is None:
                raise
            result = None
        if guard.fired == "stop":
            raise interrupt.Interrupted(f"{what}: stopped by a signal")
        if guard.fired == "deadline" or result is None:
            raise DeadlineExceeded(f"{what}: no complete answer in time")
        return result


def _send(
    opener: urllib.request.OpenerDirector,
    req: urllib.request.Request,
    guard: _Guard,
    max_bytes: int,
    what: str,
) -> Exchange:
    remaining = guard.deadline - time.monotonic()
    if remaining <= 0:
        raise DeadlineExceeded(f"{what}: no time left")
    try:
        resp = opener.open(req, timeout=remaining)
    except urllib.error.HTTPError as exc:
        with contextlib.closing(exc):
            try:
                data = _read(exc, max_bytes, what)
            except (OSError, http.client.HTTPException, BodyTooLarge):
                data = b""
        return Exchange(exc.geturl() or req.full_url, int(exc.code), str(exc.reason),
                        exc.headers, data)  # fmt: skip
    with resp:
        return Exchange(resp.geturl(), int(resp.status), str(resp.reason), resp.headers,
                        _read(resp, max_bytes, what))  # fmt: skip


def _read(resp: Any, max_bytes: int, what: str) -> bytes:
    length = resp.headers.get("Content-Length") if resp.headers is not None else None
    if length and length.isdigit() and int(length) > max_bytes:
        raise BodyTooLarge(f"{what}: response is {int(length)} bytes, over the limit")
    chunks: list[bytes] = []
    total = 0
    while chunk := resp.read(65536):
        total += len(chunk)
        if total > max_bytes:
            raise BodyTooLarge(f"{what}: response is over {max_bytes} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def fetch(
    url: str,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    max_bytes: int = DEFAULT_MAX_BYTES,
    accept: str = "*/*",
) -> Response:
    """GET ``url``, following redirects, all within ``timeout`` seconds. Raises FetchError /
    ResourceLimitError naming ``url``."""
    scheme = urlsplit(url).scheme.lower()
    if scheme not in ("http", "https"):
        raise InvalidInputError(f"{url}: only http(s) URLs can be fetched")
    req = urllib.request.Request(url, headers={"User-Agent": USER_AGENT, "Accept": accept})
    deadline = time.monotonic() + max(timeout, 0.001)
    try:
        got = exchange(build_opener(), req, deadline=deadline, max_bytes=max_bytes, what=url)
    except DeadlineExceeded:
        raise FetchError(f"{url}: timed out after {timeout:g} s") from None
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, TimeoutError):
            raise FetchError(f"{url}: timed out after {timeout:g} s") from None
        raise FetchError(
            f"{url}: network error ({reason})", hint="check the URL or your connection"
        ) from None
    except TimeoutError:
        raise FetchError(f"{url}: timed out after {timeout:g} s") from None
    except (OSError, http.client.HTTPException) as exc:
        raise FetchError(f"{url}: network error ({exc or type(exc).__name__})") from None
    if not 200 <= got.status < 300:  # 3xx here: a redirect loop or one without a Location
        raise FetchError(f"{url}: HTTP {got.status} {got.reason}")
    if urlsplit(got.url).scheme.lower() not in ("http", "https"):
        raise FetchError(f"{url}: redirected to a non-http(s) URL")
    return Response(
        url=got.url,
        status=got.status,
        content_type=(got.headers.get_content_type() or "application/octet-stream").lower(),
        charset=got.headers.get_content_charset(),
        data=got.data,
    )
