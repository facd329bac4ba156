"""HTTP GET for sources: timeouts, a size cap, http(s) only, and errors that name the URL."""

from __future__ import annotations

import socket
import urllib.error
import urllib.request
from dataclasses import dataclass
from urllib.parse import urlsplit

from arkai import __version__
from arkai.errors import ArkaiError, InvalidInputError, ResourceLimitError

USER_AGENT = f"arkai/{__version__} (+knowledge library)"
DEFAULT_TIMEOUT = 20.0
DEFAULT_MAX_BYTES = 50_000_000


class FetchError(ArkaiError):
    """The network said no: unreachable host, timeout, HTTP error status."""


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


def fetch(
    url: str,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    max_bytes: int = DEFAULT_MAX_BYTES,
    accept: str = "*/*",
) -> Response:
    """GET ``url``, following redirects. Raises FetchError / ResourceLimitError naming ``url``."""
    scheme = urlsplit(url).scheme.lower()
    if scheme not in ("http", "https"):
        raise InvalidInputError(f"{url}: only http(s) URLs can be fetched")
    req = urllib.request.Request(url, headers={"User-Agent": USER_AGENT, "Accept": accept})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            length = resp.headers.get("Content-Length")
            if length and length.isdigit() and int(length) > max_bytes:
                raise ResourceLimitError(f"{url}: response is {int(length)} bytes, over the limit")
            data = resp.read(max_bytes + 1)
            if len(data) > max_bytes:
                raise ResourceLimitError(f"{url}: response is over {max_bytes} bytes")
            final = urlsplit(resp.geturl()).scheme.lower()
            if final not in ("http", "https"):
                raise FetchError(f"{url}: redirected to a non-http(s) URL")
            ctype = resp.headers.get_content_type() or "application/octet-stream"
            return Response(
                url=resp.geturl(),
                status=resp.status,
                content_type=ctype.lower(),
                charset=resp.headers.get_content_charset(),
                data=data,
            )
    except urllib.error.HTTPError as exc:
        raise FetchError(f"{url}: HTTP {exc.code} {exc.reason}") from None
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, socket.timeout | TimeoutError):
            raise FetchError(f"{url}: timed out after {timeout:g} s") from None
        raise FetchError(
            f"{url}: network error ({reason})", hint="check the URL or your connection"
        ) from None
    except TimeoutError:
        raise FetchError(f"{url}: timed out after {timeout:g} s") from None
    except (ConnectionError, OSError) as exc:
        raise FetchError(f"{url}: network error ({exc})") from None
