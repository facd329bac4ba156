"""``openai``: any OpenAI-compatible chat-completions endpoint (OpenAI, Ollama, llama.cpp, vLLM,
LM Studio) over ``urllib`` — no SDK.

Configuration (``params.yaml`` → ``providers.openai``; the environment overrides two keys):

- ``base_url`` — default ``https://api.openai.com/v1``; env ``ARKAI_OPENAI_BASE_URL`` wins.
- ``model`` — default model when a request names none; env ``ARKAI_OPENAI_MODEL`` wins.
- ``api_key_env`` — the *name* of the environment variable holding the key (default
  ``OPENAI_API_KEY``). The key is read from the environment at each call, sent only as
  ``Authorization: Bearer …``, and never stored, logged or put in an error. No key (local
  servers) means no ``Authorization`` header. A literal ``api_key`` in the config is refused.
- ``temperature`` (default 0), ``max_tokens`` (default: not sent); a request's
  ``options["temperature"]`` / ``options["max_tokens"]`` win.
- ``json_mode`` — ``auto`` (default): send a ``json_schema`` response format when the request
  has a schema, and if the server answers 400 naming ``response_format``, retry once without it
  and stop sending it from this provider instance on (a refused array schema stops only array
  schemas); ``json_schema``: always send it (when a schema is given); ``json_object``: send
  ``{"type": "json_object"}`` for object schemas only (nothing for array schemas); ``off``:
  never send a response format. Schemas are sent without ``x-…`` extension keywords.
- ``context_chars`` (default 24,000) — what :meth:`OpenAIProvider.context_chars` answers.
- ``extra_headers`` — a mapping of extra HTTP headers.

Errors are :class:`~arkai.providers.base.ProviderError`: 408, 429, 5xx, timeouts, connection
failures and malformed bodies are ``retryable``; 429 raises :class:`RateLimitError` carrying the
server's ``Retry-After`` in seconds. ``timeout`` is a total deadline for the call (connect,
headers, body and the one fallback retry): a server trickling its answer is cut off at it, and a
stop request (SIGTERM/SIGINT, ``adapters.interrupt``) ends the call at once. Redirects are not
followed (they could carry the key to another host); loopback servers are contacted without any
proxy.
"""

from __future__ import annotations

import http.client as http_client
import json
import os
import re
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from datetime import UTC, datetime
from email.message import Message
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit

from arkai.adapters import http
from arkai.adapters.params import positive_number, whole_number
from arkai.errors import InvalidInputError
from arkai.providers.base import ProviderError, Request, Response, excerpt, usage_counts

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "gpt-4o-mini"
DEFAULT_KEY_ENV = "OPENAI_API_KEY"
DEFAULT_CONTEXT_CHARS = 24_000
JSON_MODES = ("auto", "json_schema", "json_object", "off")
#: A response body larger than this is refused (a chat completion is a few KB).
MAX_BODY_BYTES = 16 * 1024 * 1024
_RETRYABLE_STATUS = frozenset({408, 429})
_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})


class RateLimitError(ProviderError):
    """HTTP 429: always retryable; ``retry_after`` is the server's ``Retry-After`` in seconds
    (``None`` when it sent none)."""

    def __init__(self, message: str, *, retry_after: float | None, status: int = 429) -> None:
        super().__init__(message, retryable=True, status=status)
        self.retry_after = retry_after


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Refuse redirects: urllib would forward ``Authorization`` to wherever they point."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


class OpenAIProvider:
    """One chat-completions call per :meth:`complete`; see the module docstring for config."""

    name = "openai"

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        cfg = dict(config or {})
        if "api_key" in cfg:
            raise InvalidInputError(
                "providers.openai.api_key: keys are not read from params; put the key in the "
                f"environment variable named by api_key_env (default {DEFAULT_KEY_ENV})"
            )
        base_url = os.environ.get("ARKAI_OPENAI_BASE_URL") or _str(cfg, "base_url")
        self.base_url = _normalise_base_url(base_url or DEFAULT_BASE_URL)
        self.model = os.environ.get("ARKAI_OPENAI_MODEL") or _str(cfg, "model") or DEFAULT_MODEL
        self.api_key_env = _str(cfg, "api_key_env") or DEFAULT_KEY_ENV
        self.temperature = positive_number(cfg, "providers.openai.temperature", 0.0, zero=True)
        self.max_tokens: int | None = None
        if cfg.get("max_tokens") is not None:
            self.max_tokens = whole_number(cfg, "providers.openai.max_tokens", 1)
        self.json_mode = _str(cfg, "json_mode") or "auto"
        if self.json_mode not in JSON_MODES:
            raise InvalidInputError(
                f"providers.openai.json_mode: {self.json_mode!r} is not one of "
                + ", ".join(JSON_MODES)
            )
        self._context_chars = whole_number(
            cfg, "providers.openai.context_chars", DEFAULT_CONTEXT_CHARS
        )
        headers = cfg.get("extra_headers") or {}
        if not isinstance(headers, Mapping):
            raise InvalidInputError("providers.openai.extra_headers: expected a mapping")
        self.extra_headers = {str(k): str(v) for k, v in headers.items()}
        self.url = self.base_url + "/chat/completions"
        host = urlsplit(self.url).hostname or ""
        handlers: list[urllib.request.BaseHandler] = [_NoRedirect()]
        if host in _LOOPBACK or host.startswith("127."):
            handlers.append(urllib.request.ProxyHandler({}))
        self._opener = http.build_opener(*handlers)
        # Root kinds ("object", "other") whose json_schema response format the server refused
        # (json_mode auto); remembered for the life of this instance.
        self._refused: set[str] = set()

    def __repr__(self) -> str:
        return f"OpenAIProvider(base_url={self.base_url!r}, model={self.model!r})"

    def context_chars(self, model: str | None) -> int:
        return self._context_chars

    def complete(self, request: Request, *, timeout: float) -> Response:
        deadline = time.monotonic() + max(timeout, 0.001)
        key = (os.environ.get(self.api_key_env) or "").strip() or None
        model = request.model or self.model
        payload = self._payload(request, model)
        status, headers, data = self._post(payload, key, deadline, timeout)
        kind = _root_kind(request.schema)
        if (
            status in (400, 422)
            and self.json_mode == "auto"
            and "response_format" in payload
            and _mentions_response_format(data)
        ):
            self._refused.update(("object", "other") if kind == "object" else ("other",))
            del payload["response_format"]
            status, headers, data = self._post(payload, key, deadline, timeout)
        if status != 200:
            raise self._http_error(status, headers, data, key, model)
        return self._response(data, key, model, payload)

    # -- request ------------------------------------------------------------------------

    def _payload(self, request: Request, model: str) -> dict[str, Any]:
        messages = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        messages.append({"role": "user", "content": request.framed_input})
        payload: dict[str, Any] = {
            "model": model,
            "messages": messages,
            "temperature": request.options.get("temperature", self.temperature),
        }
        max_tokens = request.options.get("max_tokens", self.max_tokens)
        if max_tokens is not None:
            payload["max_tokens"] = max_tokens
        fmt = self._response_format(request)
        if fmt is not None:
            payload["response_format"] = fmt
        return payload

    def _response_format(self, request: Request) -> dict[str, Any] | None:
        schema = request.schema
        if schema is None or self.json_mode == "off":
            return None
        kind = _root_kind(schema)
        if self.json_mode == "json_object":
            return {"type": "json_object"} if kind == "object" else None
        if self.json_mode == "auto" and kind in self._refused:
            return None
        name = re.sub(r"[^A-Za-z0-9_-]", "_", request.pattern)[:64] or "output"
        return {
            "type": "json_schema",
            "json_schema": {"name": name, "schema": _standard(schema), "strict": False},
        }

    def _post(
        self, payload: dict[str, Any], key: str | None, deadline: float, timeout: float
    ) -> tuple[int, Message, bytes]:
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": "arkai (openai provider)",
            **self.extra_headers,
        }
        if key:
            headers["Authorization"] = f"Bearer {key}"
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        req = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        try:
            got = http.exchange(
                self._opener, req, deadline=deadline, max_bytes=MAX_BODY_BYTES, what="openai"
            )
        except http.BodyTooLarge:
            raise ProviderError(
                f"openai: malformed response from {self._shown_url()}: body larger than "
                f"{MAX_BODY_BYTES} bytes",
                retryable=True,
            ) from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError):
                raise self._timeout(timeout) from None
            raise ProviderError(
                f"openai: cannot reach {self._shown_url()}: {_scrub(str(exc.reason), key)}",
                retryable=True,
            ) from None
        except TimeoutError:
            raise self._timeout(timeout) from None
        except (OSError, http_client.HTTPException) as exc:
            raise ProviderError(
                f"openai: connection to {self._shown_url()} failed: "
                f"{_scrub(str(exc) or type(exc).__name__, key)}",
                retryable=True,
            ) from None
        except ValueError as exc:  # e.g. "unknown url type"
            raise ProviderError(
                f"openai: bad base_url {self._shown_url()!r}: {exc}", retryable=False
            ) from None
        return got.status, got.headers, got.data

    # -- response -----------------------------------------------------------------------

    def _response(
        self, data: bytes, key: str | None, model: str, payload: dict[str, Any]
    ) -> Response:
        where = self._shown_url()
        try:
            body = json.loads(data)
        except (ValueError, RecursionError):
            raise ProviderError(
                f"openai: malformed response from {where}: not JSON "
                f"({_scrub(excerpt(data, 200), key)!r})",
                retryable=True,
                status=200,
            ) from None
        choices = body.get("choices") if isinstance(body, dict) else None
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise ProviderError(
                f"openai: malformed response from {where}: no choices", retryable=True, status=200
            )
        choice = choices[0]
        message = choice.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        finish = choice.get("finish_reason")
        if not isinstance(content, str):
            refusal = message.get("refusal") if isinstance(message, dict) else None
            why = f"refused: {refusal}" if refusal else f"finish_reason {finish!r}"
            raise ProviderError(
                f"openai: the model returned no message content ({_scrub(str(why), key)})",
                retryable=False,
                status=200,
            )
        answered = body.get("model")
        fmt = payload.get("response_format")
        return Response(
            text=content,
            model=answered if isinstance(answered, str) and answered else model,
            usage=usage_counts(body.get("usage")),
            meta={
                "finish_reason": finish,
                "response_format": fmt["type"] if isinstance(fmt, dict) else None,
            },
        )

    def _http_error(
        self, status: int, headers: Message, data: bytes, key: str | None, model: str
    ) -> ProviderError:
        prefix = f"openai: HTTP {status} from {self._shown_url()}"
        detail = _scrub(_error_detail(data), key)
        if status == 429:
            return RateLimitError(
                f"{prefix}: rate limited" + (f" ({detail})" if detail else ""),
                retry_after=_retry_after(headers),
            )
        if status in _RETRYABLE_STATUS or status >= 500:
            return ProviderError(
                f"{prefix}: server error" + (f" ({detail})" if detail else ""),
                retryable=True,
                status=status,
            )
        if status in (401, 403):
            what = "invalid API key?" if key else "no API key sent;"
            msg = f"{prefix}: {what} set {self.api_key_env}"
        elif status == 404:
            msg = f"{prefix}: wrong base_url (it usually ends in /v1) or unknown model {model!r}?"
        elif 300 <= status < 400:
            msg = f"{prefix}: redirects are not followed; set base_url to the final address"
        else:
            msg = prefix
        if detail:
            msg += f" (server said: {detail})"
        return ProviderError(msg, retryable=False, status=status)

    def _timeout(self, timeout: float) -> ProviderError:
        return ProviderError(
            f"openai: no answer from {self._shown_url()} within {timeout:g}s (timed out)",
            retryable=True,
        )

    def _shown_url(self) -> str:
        """The endpoint with any credential in it (``user:password@``, a key in the query)
        replaced."""
        from arkai.core.redact import without_credentials  # (its rules load detect-secrets)

        return without_credentials(self.url)


def _str(cfg: Mapping[str, Any], key: str) -> str | None:
    value = cfg.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise InvalidInputError(f"providers.openai.{key}: expected a string, got {value!r}")
    return value


def _normalise_base_url(url: str) -> str:
    url = url.strip().rstrip("/")
    url = url.removesuffix("/chat/completions")
    if urlsplit(url).scheme not in ("http", "https"):
        raise InvalidInputError(f"providers.openai.base_url: expected an http(s) URL, got {url!r}")
    return url


def _root_kind(schema: Mapping[str, Any] | None) -> str:
    if schema is None:
        return "none"
    if schema.get("type") == "object" or ("type" not in schema and "properties" in schema):
        return "object"
    return "other"


_NAMED = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})


def _standard(node: Any, names: bool = False) -> Any:
    """``node`` without ``x-…`` extension keywords (arkai's ``x-verbatim``), which strict
    servers refuse; property names are kept whatever they are."""
    if isinstance(node, dict):
        return {
            k: _standard(v, not names and k in _NAMED)
            for k, v in node.items()
            if names or not str(k).startswith("x-")
        }
    if isinstance(node, list):
        return [_standard(v) for v in node]
    return node


def _mentions_response_format(data: bytes) -> bool:
    text = data.decode("utf-8", errors="replace").lower()
    return "response_format" in text or "json_schema" in text or "response format" in text


def _error_detail(data: bytes) -> str:
    """The server's error message: OpenAI's ``{"error": {"message"}}``, Ollama's
    ``{"error": "..."}``, or the start of the body."""
    try:
        body = json.loads(data)
    except (ValueError, RecursionError):
        return excerpt(data, 200)
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return excerpt(err["message"].encode("utf-8"), 200)
        if isinstance(err, str):
            return excerpt(err.encode("utf-8"), 200)
        if isinstance(body.get("message"), str):
            return excerpt(body["message"].encode("utf-8"), 200)
    return excerpt(data, 200)


def _scrub(text: str, key: str | None) -> str:
    """``text`` with the API key (and any prefix of it a server echoes back) masked."""
    if key:
        text = text.replace(key, "***")
        if len(key) >= 12:
            # Servers echo partial keys ("sk-abcd****wxyz"): mask any 8-char slice of it.
            for i in range(len(key) - 7):
                if key[i : i + 8] in text:
                    text = text.replace(key[i : i + 8], "***")
    return text


def _retry_after(headers: Message | None) -> float | None:
    """Seconds from ``Retry-After`` (seconds or an HTTP date) or ``retry-after-ms``."""
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())
