"""A fake OpenAI-compatible chat-completions server on 127.0.0.1, for tests of providers and of
the extraction runner (retries, circuit breaker, output repair).

It answers *from the request*. The input is the last user message, or — when that is empty, as
when arkai embeds the input in the rendered system prompt — the text after ``INPUT:`` under the
prompt's ``# INPUT`` heading (:attr:`FakeRequest.input`). For the known patterns the answer is
built from the input, so quotes really are substrings of it:

- ``extract_claims`` — the first :attr:`FakeLLM.claims_per_call` (2) sentences of the input
  (of 6–45 words when there are such; see :func:`sentences`), each
  as ``{"claim": s, "quote": s, "confidence": 0.9}`` (a JSON array);
- ``extract_entities`` — up to 3 capitalised names: ``{"entities": [{"name", "type",
  "confidence", "mentions": [{"quote": name}]}]}``;
- ``validate_claims`` — the input is ``CLAIMS:`` + a JSON list of ``{"id", "claim", "quote"}``
  + ``TRANSCRIPT:`` + the transcript (or one JSON object ``{"claims", "transcript"}``); each
  claim gets ``{"id", "verdict": "grounded" | "unsupported", "note"}`` (a JSON array);
- ``summarize`` / ``extract_wisdom`` / ``condense_chat`` — the shapes of arkai's
  ``pattern.yaml`` files, every ``quote`` an input sentence (see :func:`_guess`);
- any other pattern whose request carries a ``json_schema`` response format: a value built from
  that schema (strings are input sentences, enums their first value, numbers 0.9 within bounds,
  arrays two items); anything else: the first two sentences as plain text.

Register your own answer with ``fake.answer("summarize", lambda text, req: {...})``.

The pattern is taken from, in order: an ``X-Fake-Pattern`` header, the ``json_schema`` name of
``response_format``, a pattern name written in the system prompt, words of the system prompt's
instructions (before any ``# INPUT``): "verdict"/"grounded", "entity"/"entities", "claim(s)",
"wisdom"/"insight(s)", "decisions", "summar…" — checked in that order.

**Modes** decide *how* it answers. The first that applies wins:

1. header ``X-Fake-Mode: <mode>`` (e.g. through ``providers.openai.extra_headers``);
2. a path prefix: ``fake.base_url_for("fenced")`` is ``http://127.0.0.1:PORT/mode/fenced/v1``
   (handy as ``providers.openai.base_url`` / ``ARKAI_OPENAI_BASE_URL``);
3. a marker ``[[fake_llm:<mode>]]`` anywhere in a message (sentences holding it are never used
   as quotes);
4. rules added with ``fake.set_mode(mode, when="substring of the input")``;
5. the default, ``fake.set_mode(mode)`` (initially ``ok``).

=========================  =================================================================
mode                       answer
=========================  =================================================================
``ok``                     200, content is the JSON value
``fenced``                 200, the JSON inside a ```json fence with chatter around it
``malformed``              200, the JSON cut off two thirds of the way (invalid)
``paraphrase``             200, like ``ok`` but every ``quote`` (and ``quotes`` item) reworded
``null_content``           200, ``message.content`` is null
``no_choices``             200, ``"choices": []``
``bad_json_body``          200, an HTML page instead of JSON
``reject_response_format`` 400 naming ``response_format`` when the request has one, else ``ok``
``rate_limit``             429 with ``Retry-After: {fake.retry_after}`` (default ``0``)
``server_error``           500
``unauthorized``           401, echoing the bearer token in the message (as some servers do)
``not_found``              404 (unknown model)
``hang``                   no answer until the server stops (or ``fake.hang_seconds`` pass)
``trickle``                like ``ok``, but the whole answer is sent one byte every
                           ``fake.trickle_interval`` seconds (default 1: "1 byte/s")
``A_then_B[_then_C…]``     per input (pattern + input text): 1st call mode A, 2nd B, …; the
                           last repeats. ``rate_limit_then_ok``, ``server_error_then_ok``,
                           ``malformed_then_ok``, ``hang_then_ok``, ``server_error_then_server_
                           error_then_ok`` …
=========================  =================================================================

Concurrency: :attr:`FakeLLM.in_flight` counts completions being answered now and
:attr:`FakeLLM.max_in_flight` the most at once; while :attr:`FakeLLM.gate` holds an unset
``threading.Event``, every completion waits for it (at most ``hang_seconds``) before answering;
:attr:`FakeLLM.latency` (seconds, default 0) makes every completion take that long, as a real
model's answers do (bench/ray_extract.py).

Every request is recorded in :attr:`FakeLLM.requests` (headers with lower-cased names, parsed
JSON body, the mode and pattern chosen); ``fake.chat_requests`` keeps only completions.

Use the fixture (import it under its function name; pytest registers it as ``fake_llm``)::

    from tests.adapters.fake_llm import FakeLLM, fake_llm_fixture  # noqa: F401

    def test_x(fake_llm: FakeLLM) -> None:
        fake_llm.set_mode("rate_limit_then_ok")
        provider = OpenAIProvider({"base_url": fake_llm.base_url, "model": "m"})
        ...
        assert len(fake_llm.chat_requests) == 2

or ``with FakeLLM() as fake: ...``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.adapters.httpserver import LoopbackServer

Answerer = Callable[[str, "FakeRequest"], Any]
MODES = (
    "ok",
    "fenced",
    "malformed",
    "paraphrase",
    "null_content",
    "no_choices",
    "bad_json_body",
    "reject_response_format",
    "rate_limit",
    "server_error",
    "unauthorized",
    "not_found",
    "hang",
    "trickle",
)
KNOWN_PATTERNS = (
    "validate_claims",
    "extract_entities",
    "extract_claims",
    "extract_wisdom",
    "condense_chat",
    "summarize",
)
MARKER = re.compile(r"\[\[fake_llm:([a-z_]+)\]\]")
_SENTENCE = re.compile(r"[^\s.!?][^.!?\n]*[.!?]")
_PREFIX = re.compile(
    r"^(?:\[[\d:.,]+\]\s*|\(?\d{1,2}:\d{2}(?::\d{2})?\)?\s*)?(?:[A-Z][\w .'-]{0,30}:\s+)?"
)
_NAME = re.compile(r"\b[A-Z][A-Za-z0-9]+(?:[ -][A-Z][A-Za-z0-9]+)*")
_KEYWORDS = (
    (re.compile(r"\bverdicts?\b|\bgrounded\b"), "validate_claims"),
    (re.compile(r"\bentit(?:y|ies)\b"), "extract_entities"),
    (re.compile(r"\bclaims?\b"), "extract_claims"),
    (re.compile(r"\bwisdom\b|\binsights?\b"), "extract_wisdom"),
    (re.compile(r"\bdecisions\b"), "condense_chat"),
    (re.compile(r"\bsummar"), "summarize"),
)
_STOP_WORDS = (
    "The A An I We It This That These Those And But So Or In On Of To You He She They Our My "
    "Your What When Why How If Yes No Okay Well Now Then There Here Speaker Today Also Let Is "
    "Are Was Were For With As At By From Not Do Does Did One Two First Next"
)
_STOP = frozenset(_STOP_WORDS.split())


@dataclass(frozen=True)
class FakeRequest:
    """One request as the server saw it."""

    method: str
    path: str
    """Path as sent, including any ``/mode/<mode>`` prefix."""
    headers: dict[str, str]
    """Header names lower-cased (urllib sends ``Authorization``, ``X-fake-mode`` …)."""
    body: Any
    """The parsed JSON body (``None`` when there was none or it was not JSON)."""
    raw: bytes
    mode: str
    """The mode chosen for this request (a step of an ``A_then_B`` sequence, resolved)."""
    pattern: str
    """The pattern recognised (``unknown`` when none was)."""

    @property
    def messages(self) -> list[dict[str, Any]]:
        msgs = self.body.get("messages") if isinstance(self.body, dict) else None
        return [m for m in msgs if isinstance(m, dict)] if isinstance(msgs, list) else []

    @property
    def user(self) -> str:
        """The last user message's text."""
        for m in reversed(self.messages):
            if m.get("role") == "user":
                return _text(m.get("content"))
        return ""

    @property
    def input(self) -> str:
        """The text the pattern runs on: the user message, or, when that is empty (arkai embeds
        the input in the system prompt), what follows ``INPUT:`` after the ``# INPUT`` heading."""
        if self.user.strip():
            return self.user
        system = self.system
        head = system.find("# INPUT")
        start = system.find("INPUT:", head + len("# INPUT") if head >= 0 else 0)
        return system[start + len("INPUT:") :].lstrip("\n") if start >= 0 else ""

    @property
    def system(self) -> str:
        return "\n".join(
            _text(m.get("content")) for m in self.messages if m.get("role") == "system"
        )

    @property
    def model(self) -> str | None:
        return self.body.get("model") if isinstance(self.body, dict) else None

    @property
    def response_format(self) -> Any:
        return self.body.get("response_format") if isinstance(self.body, dict) else None

    @property
    def authorization(self) -> str | None:
        return self.headers.get("authorization")


class FakeLLM(LoopbackServer):
    """A ``ThreadingHTTPServer`` on ``127.0.0.1`` and a free port; see the module docstring."""

    def __init__(self, *, mode: str = "ok") -> None:
        self.default_mode = _check_mode(mode)
        self.rules: list[tuple[str, str]] = []
        """``(substring, mode)``: the first whose substring is in the input applies."""
        self.answerers: dict[str, Answerer] = {}
        self.requests: list[FakeRequest] = []
        self.claims_per_call = 2
        self.retry_after = "0"
        """The ``Retry-After`` header value of ``rate_limit`` answers (``""``: none sent)."""
        self.hang_seconds = 60.0
        self.trickle_interval = 1.0
        self.in_flight = 0
        self.max_in_flight = 0
        self.gate: threading.Event | None = None
        self.latency = 0.0
        self._calls: dict[tuple[str, str, str], int] = {}
        self._lock = threading.Lock()
        super().__init__()

    # -- configuration -------------------------------------------------------------------

    def set_mode(self, mode: str, *, when: str | None = None) -> None:
        """Answer in ``mode`` by default, or (``when`` given) whenever the input
        contains ``when``."""
        _check_mode(mode)
        if when is None:
            self.default_mode = mode
        else:
            self.rules.append((when, mode))

    def answer(self, pattern: str, fn: Answerer) -> None:
        """Answer ``pattern`` with ``fn(user_text, request)`` (any JSON value, or a str sent
        as is)."""
        self.answerers[pattern] = fn

    def reset(self) -> None:
        """Forget recorded requests, per-input call counts, rules; back to mode ``ok``."""
        with self._lock:
            self.requests.clear()
            self._calls.clear()
        self.rules.clear()
        self.default_mode = "ok"

    @property
    def chat_requests(self) -> list[FakeRequest]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    # -- lifecycle -----------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1`` — what ``providers.openai.base_url`` takes."""
        return f"http://127.0.0.1:{self.port}/v1"

    def base_url_for(self, mode: str) -> str:
        """A base URL whose requests are all answered in ``mode``."""
        return f"http://127.0.0.1:{self.port}/mode/{_check_mode(mode)}/v1"

    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        owner = self

        class Handler(_Handler):
            fake = owner

        return Handler

    # -- used by the handler -------------------------------------------------------------

    def _choose_mode(self, path: str, headers: dict[str, str], body: Any, pattern: str) -> str:
        probe = FakeRequest("POST", path, headers, body, b"", "", pattern)
        mode = headers.get("x-fake-mode")
        if not mode:
            m = re.match(r"/mode/([a-z_]+)/", path)
            mode = m.group(1) if m else None
        if not mode:
            for msg in probe.messages:
                found = MARKER.search(_text(msg.get("content")))
                if found:
                    mode = found.group(1)
                    break
        if not mode:
            text = probe.input
            mode = next((m for sub, m in self.rules if sub in text), None)
        mode = mode or self.default_mode
        steps = mode.split("_then_")
        if len(steps) == 1:
            return mode
        key = (mode, pattern, hashlib.sha256(probe.input.encode("utf-8")).hexdigest())
        with self._lock:
            n = self._calls.get(key, 0)
            self._calls[key] = n + 1
        return steps[min(n, len(steps) - 1)]

    def _record(self, request: FakeRequest) -> None:
        with self._lock:
            self.requests.append(request)


def _check_mode(mode: str) -> str:
    for step in mode.split("_then_"):
        if step not in MODES:
            raise ValueError(f"unknown fake_llm mode {step!r}; known: {', '.join(MODES)}")
    return mode


def _text(content: Any) -> str:
    """A message's content as text (a string, or OpenAI's list of ``{"type": "text"}`` parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


# -- answers ---------------------------------------------------------------------------------


def detect_pattern(headers: dict[str, str], body: Any) -> str:
    """Which pattern a request is for (see the module docstring); ``unknown`` if none."""
    if headers.get("x-fake-pattern"):
        return headers["x-fake-pattern"]
    req = FakeRequest("POST", "", headers, body, b"", "", "")
    fmt = req.response_format
    if isinstance(fmt, dict) and isinstance(fmt.get("json_schema"), dict):
        name = fmt["json_schema"].get("name")
        if isinstance(name, str) and name:
            return name
    # Only the instructions: a rendered prompt may go on with the input after "# INPUT".
    system = req.system.split("# INPUT")[0][:4000].lower()
    for name in KNOWN_PATTERNS:
        if name in system:
            return name
    for words, name in _KEYWORDS:
        if words.search(system):
            return name
    return "unknown"


def sentences(text: str) -> list[str]:
    """Sentences of ``text`` that are verbatim substrings of it (timestamps and speaker labels
    at their start left out), never holding a mode marker: those of 6 to 45 words (arkai's
    default claim lengths) first, then shorter ones, then whole lines."""
    good: list[str] = []
    short: list[str] = []
    for m in _SENTENCE.finditer(text):
        s = m.group(0)
        s = s[_PREFIX.match(s).end() :]  # type: ignore[union-attr]
        if "[[" in s or "]]" in s or s.startswith("#"):
            continue
        words = len(s.split())
        if 6 <= words <= 45:
            good.append(s)
        elif words >= 3:
            short.append(s)
    out = good + short
    if len(out) < 2:
        for line in text.splitlines():
            line = line.strip()
            if len(line.split()) >= 3 and "[[" not in line and line not in out:
                out.append(line)
    if not out:
        stripped = text.strip()
        out.append(stripped[:80] if stripped else "nothing")
    return out


def build_value(fake: FakeLLM, req: FakeRequest) -> Any:
    """The answer's value (before the mode shapes it)."""
    text = req.input
    if req.pattern in fake.answerers:
        return fake.answerers[req.pattern](text, req)
    sents = sentences(text)
    if req.pattern == "extract_claims":
        return [{"claim": s, "quote": s, "confidence": 0.9} for s in sents[: fake.claims_per_call]]
    if req.pattern == "extract_entities":
        return {"entities": _entities(text)}
    if req.pattern == "validate_claims":
        return _verdicts(text)
    if req.pattern in ("summarize", "extract_wisdom", "condense_chat"):
        return _guess(req.pattern, sents)
    fmt = req.response_format
    if isinstance(fmt, dict) and isinstance(fmt.get("json_schema"), dict):
        schema = fmt["json_schema"].get("schema")
        if isinstance(schema, dict):
            return from_schema(schema, sents)
    return _guess(req.pattern, sents)


def _entities(text: str) -> list[dict[str, Any]]:
    seen: dict[str, dict[str, Any]] = {}
    for m in _NAME.finditer(text):
        name = m.group(0)
        if name in _STOP or name in seen or "fake_llm" in name:
            continue
        kind = "org" if name.isupper() else "person" if " " in name else "concept"
        seen[name] = {"name": name, "type": kind, "confidence": 0.8, "mentions": [{"quote": name}]}
        if len(seen) == 3:
            break
    return list(seen.values())


def _verdicts(text: str) -> list[dict[str, Any]]:
    """Verdicts for a ``validate_claims`` input: ``CLAIMS:`` JSON list then ``TRANSCRIPT:``,
    or one JSON object ``{"claims", "transcript"}``."""
    body = text.lstrip()
    claims: Any = None
    transcript = ""
    try:
        if body.startswith("CLAIMS:"):
            claims, end = json.JSONDecoder().raw_decode(body, len("CLAIMS:") + 1)
            rest = body[end:]
            at = rest.find("TRANSCRIPT:")
            transcript = rest[at + len("TRANSCRIPT:") :] if at >= 0 else rest
        else:
            payload = json.loads(body)
            if isinstance(payload, dict):
                claims = payload.get("claims")
                transcript = str(payload.get("transcript", ""))
    except ValueError:
        return []
    out = []
    for claim in claims if isinstance(claims, list) else []:
        if not isinstance(claim, dict):
            continue
        quote = str(claim.get("quote", ""))
        ok = bool(quote) and quote in transcript
        out.append(
            {
                "id": claim.get("id"),
                "verdict": "grounded" if ok else "unsupported",
                "note": "quote found in the transcript" if ok else "quote not in the transcript",
            }
        )
    return out


def _guess(pattern: str, sents: list[str]) -> Any:
    """Answers in the shapes of arkai's ``summarize``, ``extract_wisdom`` and ``condense_chat``
    (register an answerer if yours differ)."""
    first, second = sents[0], sents[1 % len(sents)]
    items = [{"text": s, "quote": s} for s in sents[:2]]
    if pattern == "summarize":
        return {"summary": f"{first} {second}", "points": items}
    if pattern == "extract_wisdom":
        return {"summary": first, "ideas": items, "insights": items[:1], "quotes": [first],
                "facts": items[1:], "references": [], "one_sentence_takeaway": first}  # fmt: skip
    if pattern == "condense_chat":
        return {
            "summary": f"{first} {second}",
            "decisions": [{"decision": first, "rationale": "", "quote": first}],
            "discoveries": [{"discovery": second, "implication": "", "quote": second}],
            "procedures": [{"name": "steps", "steps": [first], "quote": first}],
        }
    return f"{first} {second}" if len(sents) > 1 else first


def from_schema(schema: dict[str, Any], sents: list[str]) -> Any:
    """A value valid for (simple) ``schema`` whose strings are input sentences, verbatim."""
    cursor = [0]

    def next_sentence() -> str:
        s = sents[cursor[0] % len(sents)]
        cursor[0] += 1
        return s

    def build(node: Any) -> Any:
        if not isinstance(node, dict):
            return next_sentence()
        if "const" in node:
            return node["const"]
        if isinstance(node.get("enum"), list) and node["enum"]:
            return node["enum"][0]
        for key in ("anyOf", "oneOf", "allOf"):
            if isinstance(node.get(key), list) and node[key]:
                return build(node[key][0])
        kind = node.get("type")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "null")
        if kind is None:
            kind = "object" if "properties" in node else "array" if "items" in node else "string"
        if kind == "object":
            props = node.get("properties") or {}
            return {str(k): build(v) for k, v in props.items()}
        if kind == "array":
            count = max(int(node.get("minItems", 0)), min(2, int(node.get("maxItems", 2))))
            return [build(node.get("items", {})) for _ in range(count)]
        if kind in ("number", "integer"):
            value: float = 0.9 if kind == "number" else 1
            if "maximum" in node:
                value = min(value, node["maximum"])
            if "minimum" in node:
                value = max(value, node["minimum"])
            return value
        if kind == "boolean":
            return True
        if kind == "null":
            return None
        return next_sentence()

    return build(schema)


def paraphrase(quote: str, source: str) -> str:
    """``quote`` slightly reworded, so that it is no longer a substring of ``source``."""
    for old, new in ((" is ", " was "), (" the ", " a "), (" and ", " & "), (" a ", " one ")):
        if old in quote:
            changed = quote.replace(old, new, 1)
            if changed not in source:
                return changed
    words = quote.split()
    changed = " ".join([words[0], "really", *words[1:]]) if words else "really"
    return changed if changed not in source else "Basically, " + quote.lower()


def _paraphrased(value: Any, source: str, key: str = "") -> Any:
    if isinstance(value, dict):
        return {k: _paraphrased(v, source, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_paraphrased(v, source, key) for v in value]
    if isinstance(value, str) and key in ("quote", "quotes"):
        return paraphrase(value, source)
    return value


def render_content(mode: str, value: Any, source: str) -> str:
    """The assistant message's text for ``value`` in ``mode``."""
    if mode == "paraphrase":
        value = _paraphrased(value, source)
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if mode == "fenced":
        pretty = value if isinstance(value, str) else json.dumps(value, indent=2)
        return (
            "Sure! Here is the JSON you asked for:\n\n```json\n"
            f"{pretty}\n```\n\nLet me know if you need anything else."
        )
    if mode == "malformed":
        return text[: max(1, len(text) * 2 // 3)]
    return text


# -- the handler -----------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    fake: FakeLLM
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.fake._record(FakeRequest("GET", self.path, headers, None, b"", "ok", "unknown"))
        if path.endswith("/models"):
            self._send(200, {"object": "list", "data": [{"id": "fake-model", "object": "model"}]})
        else:
            self._send(404, {"error": {"message": f"no route {path}", "type": "not_found"}})

    def do_POST(self) -> None:
        fake = self.fake
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        path = urlsplit(self.path).path
        if not path.endswith("/chat/completions"):
            fake._record(FakeRequest("POST", self.path, headers, body, raw, "ok", "unknown"))
            self._send(404, {"error": {"message": f"no route {path}", "type": "not_found"}})
            return
        pattern = detect_pattern(headers, body)
        mode = fake._choose_mode(path, headers, body, pattern)
        req = FakeRequest("POST", self.path, headers, body, raw, mode, pattern)
        fake._record(req)
        if mode not in MODES:
            self._send(400, _error(f"unknown fake_llm mode {mode!r}", "invalid_request"))
            return
        if not isinstance(body, dict) or not req.messages:
            self._send(400, _error("request body must be JSON with messages", "invalid_request"))
            return
        with fake._lock:
            fake.in_flight += 1
            fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
        self._counted = True
        try:
            gate = fake.gate
            if gate is not None:
                gate.wait(fake.hang_seconds)
            if fake.latency > 0:
                fake._stopping.wait(fake.latency)
            self._answer(req)
        finally:
            self._uncount()

    def _uncount(self) -> None:
        """The request is being answered: no longer in flight (before its first byte goes out,
        so a client that sends its next request at once is never counted twice)."""
        if getattr(self, "_counted", False):
            self._counted = False
            with self.fake._lock:
                self.fake.in_flight -= 1

    def _answer(self, req: FakeRequest) -> None:
        fake, mode = self.fake, req.mode
        if mode == "hang":
            if fake._stopping.wait(fake.hang_seconds):
                self.close_connection = True
                return  # stopping: drop the connection unanswered
            mode = "ok"
        if mode == "trickle":
            data = json.dumps(self._completion(req, "ok")).encode("utf-8")
            head = ("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n")  # fmt: skip
            self._uncount()
            fake.trickle(self.wfile, head.encode("ascii") + data, fake.trickle_interval)
            self.close_connection = True
            return
        if mode == "rate_limit":
            extra = {"Retry-After": fake.retry_after} if fake.retry_after else {}
            self._send(429, _error("Rate limit reached; slow down", "rate_limit_exceeded"), extra)
        elif mode == "server_error":
            self._send(500, _error("The server had an error processing your request", "server"))
        elif mode == "unauthorized":
            token = (req.authorization or "").removeprefix("Bearer ")
            self._send(401, _error(f"Incorrect API key provided: {token}", "invalid_api_key"))
        elif mode == "not_found":
            self._send(404, _error(f"The model '{req.model}' does not exist", "model_not_found"))
        elif mode == "bad_json_body":
            self._send_bytes(200, b"<html><body>502 upstream hiccup</body></html>", "text/html")
        elif mode == "reject_response_format" and req.response_format is not None:
            self._send(
                400,
                {
                    "error": {
                        "message": "Invalid parameter: 'response_format' is not supported "
                        "with this model.",
                        "type": "invalid_request_error",
                        "param": "response_format",
                    }
                },
            )
        else:
            self._send(200, self._completion(req, mode))

    def _completion(self, req: FakeRequest, mode: str) -> dict[str, Any]:
        content: str | None = None
        if mode not in ("null_content", "no_choices"):
            content = render_content(mode, build_value(self.fake, req), req.input)
        prompt = sum(len(_text(m.get("content"))) for m in req.messages) // 4 + 1
        completion = len(content or "") // 4 + 1
        choices = [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ]
        return {
            "id": f"chatcmpl-fake-{len(self.fake.requests)}",
            "object": "chat.completion",
            "created": 0,
            "model": req.model or "fake-model",
            "choices": [] if mode == "no_choices" else choices,
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }

    def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        self._send_bytes(status, data, "application/json", headers)

    def _send_bytes(
        self, status: int, data: bytes, ctype: str, headers: dict[str, str] | None = None
    ) -> None:
        self._uncount()
        with contextlib.suppress(OSError):
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)
        self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests read :attr:`FakeLLM.requests` instead."""

    def handle(self) -> None:
        with contextlib.suppress(OSError):
            super().handle()


def _error(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": kind}}


@pytest.fixture(name="fake_llm")
def fake_llm_fixture() -> Iterator[FakeLLM]:
    """A started fake LLM server in mode ``ok``; stopped afterwards."""
    with FakeLLM() as fake:
        yield fake
