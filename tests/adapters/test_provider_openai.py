"""The ``openai`` provider end to end against a real local HTTP server (``fake_llm``)."""

from __future__ import annotations

import json
import threading
import time
import traceback
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

import arkai
from arkai.errors import InvalidInputError
from arkai.patterns.model import first_violation
from arkai.providers.base import ProviderError, Request, Response
from arkai.providers.openai import OpenAIProvider, RateLimitError
from tests.adapters.fake_llm import FakeLLM, fake_llm_fixture, from_schema, sentences  # noqa: F401

PATTERNS = Path(arkai.__file__).parent / "scaffold" / "patterns"
KEY = "sk-test-SECRET-0123456789abcdefghijklmnop"
TEXT = (
    "[00:00:01] Alice: Honey bees communicate the location of flowers with a waggle dance. "
    "The angle of the dance encodes the direction relative to the sun. "
    "Nobody taught them this behaviour."
)
CLAIMS_SCHEMA: dict[str, Any] = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["claim", "quote"],
        "properties": {"claim": {"type": "string"}, "quote": {"type": "string"}},
    },
}
ENTITIES_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["entities"],
    "properties": {"entities": {"type": "array", "items": {"type": "object"}}},
}


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "ARKAI_OPENAI_BASE_URL", "ARKAI_OPENAI_MODEL", "MY_KEY"):
        monkeypatch.delenv(name, raising=False)


def provider(fake: FakeLLM, **config: Any) -> OpenAIProvider:
    return OpenAIProvider({"base_url": fake.base_url, "model": "fake-1", **config})


def claims_request(**kw: Any) -> Request:
    return Request(
        pattern="extract_claims",
        system="You extract claims with verbatim quotes.",
        input=TEXT,
        **kw,
    )


def test_ok_answers_from_the_input(fake_llm: FakeLLM) -> None:
    resp = provider(fake_llm).complete(claims_request(), timeout=5)
    claims = json.loads(resp.text)
    assert [c["quote"] for c in claims] == [
        "Honey bees communicate the location of flowers with a waggle dance.",
        "The angle of the dance encodes the direction relative to the sun.",
    ]
    assert all(c["quote"] in TEXT for c in claims)
    assert resp.model == "fake-1"
    assert resp.usage["prompt_tokens"] > 0 and resp.usage["total_tokens"] > 0
    assert resp.meta["finish_reason"] == "stop"


def test_request_body_and_headers(fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    prov = provider(fake_llm, temperature=0.3, max_tokens=500, extra_headers={"X-Team": "kb"})
    prov.complete(claims_request(model="other-model", options={"max_tokens": 64}), timeout=5)
    (req,) = fake_llm.chat_requests
    assert req.path == "/v1/chat/completions"
    assert req.authorization == f"Bearer {KEY}"
    assert req.headers["x-team"] == "kb"
    assert req.headers["content-type"] == "application/json"
    assert req.body["model"] == "other-model"
    assert req.body["temperature"] == 0.3
    assert req.body["max_tokens"] == 64
    assert req.body["messages"] == [
        {"role": "system", "content": "You extract claims with verbatim quotes."},
        {"role": "user", "content": TEXT},
    ]
    assert "response_format" not in req.body  # no schema, nothing to enforce


def test_defaults_no_key_no_authorization(fake_llm: FakeLLM) -> None:
    OpenAIProvider({"base_url": fake_llm.base_url + "/"}).complete(
        Request("summarize", "", "One two three four five."), timeout=5
    )
    (req,) = fake_llm.chat_requests
    assert req.authorization is None
    assert req.body["temperature"] == 0
    assert req.body["model"] == "gpt-4o-mini"
    assert "max_tokens" not in req.body
    assert [m["role"] for m in req.body["messages"]] == ["user"]  # empty system left out


def test_key_from_the_named_env_var_only(
    fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong-one")
    monkeypatch.setenv("MY_KEY", KEY)
    provider(fake_llm, api_key_env="MY_KEY").complete(claims_request(), timeout=5)
    assert fake_llm.chat_requests[0].authorization == f"Bearer {KEY}"
    with pytest.raises(InvalidInputError, match="api_key_env") as info:
        OpenAIProvider({"api_key": KEY})
    assert KEY not in str(info.value)


def test_env_overrides_base_url_and_model(
    fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARKAI_OPENAI_BASE_URL", fake_llm.base_url_for("fenced"))
    monkeypatch.setenv("ARKAI_OPENAI_MODEL", "env-model")
    prov = OpenAIProvider({"base_url": "http://127.0.0.1:9/v1", "model": "params-model"})
    resp = prov.complete(claims_request(), timeout=5)
    assert fake_llm.chat_requests[0].body["model"] == "env-model"
    assert resp.text.startswith("Sure!") and "```json" in resp.text


def test_config_errors() -> None:
    with pytest.raises(InvalidInputError, match="json_mode"):
        OpenAIProvider({"json_mode": "yaml"})
    with pytest.raises(InvalidInputError, match="base_url"):
        OpenAIProvider({"base_url": "ftp://example.invalid/v1"})
    with pytest.raises(InvalidInputError, match="temperature"):
        OpenAIProvider({"temperature": "hot"})
    assert OpenAIProvider({"context_chars": 5000}).context_chars(None) == 5000
    assert OpenAIProvider().context_chars("x") == 24_000


# -- structured output -------------------------------------------------------------------------


def test_json_schema_mode(fake_llm: FakeLLM) -> None:
    prov = provider(fake_llm, json_mode="json_schema")
    resp = prov.complete(claims_request(schema=CLAIMS_SCHEMA), timeout=5)
    fmt = fake_llm.chat_requests[0].body["response_format"]
    assert fmt == {
        "type": "json_schema",
        "json_schema": {"name": "extract_claims", "schema": CLAIMS_SCHEMA, "strict": False},
    }
    assert resp.meta["response_format"] == "json_schema"
    assert isinstance(json.loads(resp.text), list)


def test_extension_keywords_are_not_sent(fake_llm: FakeLLM) -> None:
    quote = {"type": "string", "x-verbatim": True}
    schema = {"type": "object", "x-note": 1, "properties": {"quote": quote, "x-odd": quote}}
    provider(fake_llm).complete(Request("summarize", "Summarise.", TEXT, schema=schema), timeout=5)
    sent = fake_llm.chat_requests[0].body["response_format"]["json_schema"]["schema"]
    assert sent == {
        "type": "object",
        "properties": {"quote": {"type": "string"}, "x-odd": {"type": "string"}},
    }
    assert quote == {"type": "string", "x-verbatim": True}  # the request's schema untouched


def test_json_object_mode_only_for_object_schemas(fake_llm: FakeLLM) -> None:
    prov = provider(fake_llm, json_mode="json_object")
    entities = Request("extract_entities", "Find entities.", TEXT, schema=ENTITIES_SCHEMA)
    prov.complete(entities, timeout=5)
    prov.complete(claims_request(schema=CLAIMS_SCHEMA), timeout=5)
    first, second = fake_llm.chat_requests
    assert first.body["response_format"] == {"type": "json_object"}
    assert "response_format" not in second.body


def test_off_mode_sends_no_response_format(fake_llm: FakeLLM) -> None:
    provider(fake_llm, json_mode="off").complete(claims_request(schema=CLAIMS_SCHEMA), timeout=5)
    assert "response_format" not in fake_llm.chat_requests[0].body


def test_auto_falls_back_once_and_remembers(fake_llm: FakeLLM) -> None:
    fake_llm.set_mode("reject_response_format")
    prov = provider(fake_llm)  # json_mode auto
    entities = Request("extract_entities", "Find entities.", TEXT, schema=ENTITIES_SCHEMA)
    resp = prov.complete(entities, timeout=5)
    assert "entities" in json.loads(resp.text)
    assert resp.meta["response_format"] is None
    first, second = fake_llm.chat_requests
    assert first.body["response_format"]["type"] == "json_schema"
    assert "response_format" not in second.body
    prov.complete(entities, timeout=5)
    prov.complete(claims_request(schema=CLAIMS_SCHEMA), timeout=5)
    assert len(fake_llm.chat_requests) == 4  # no more rejected tries
    assert all("response_format" not in r.body for r in fake_llm.chat_requests[2:])


def test_auto_sends_json_schema_when_accepted(fake_llm: FakeLLM) -> None:
    prov = provider(fake_llm)
    prov.complete(claims_request(schema=CLAIMS_SCHEMA), timeout=5)
    prov.complete(claims_request(schema=CLAIMS_SCHEMA), timeout=5)
    assert [r.body["response_format"]["type"] for r in fake_llm.chat_requests] == [
        "json_schema",
        "json_schema",
    ]


def test_explicit_json_schema_rejected_is_not_retried(fake_llm: FakeLLM) -> None:
    fake_llm.set_mode("reject_response_format")
    prov = provider(fake_llm, json_mode="json_schema")
    with pytest.raises(ProviderError) as info:
        prov.complete(claims_request(schema=CLAIMS_SCHEMA), timeout=5)
    assert info.value.status == 400 and not info.value.retryable
    assert "response_format" in str(info.value)
    assert len(fake_llm.chat_requests) == 1


# -- failures --------------------------------------------------------------------------------------


def test_rate_limit_is_retryable_with_retry_after(fake_llm: FakeLLM) -> None:
    fake_llm.set_mode("rate_limit_then_ok")
    prov = provider(fake_llm)
    with pytest.raises(RateLimitError) as info:
        prov.complete(claims_request(), timeout=5)
    assert info.value.retryable and info.value.status == 429
    assert info.value.retry_after == 0.0
    # the same input again: the fake now answers
    assert json.loads(prov.complete(claims_request(), timeout=5).text)


def test_retry_after_seconds_and_absent(fake_llm: FakeLLM) -> None:
    fake_llm.set_mode("rate_limit")
    fake_llm.retry_after = "2.5"
    with pytest.raises(RateLimitError) as info:
        provider(fake_llm).complete(claims_request(), timeout=5)
    assert info.value.retry_after == 2.5
    fake_llm.retry_after = ""
    with pytest.raises(RateLimitError) as info:
        provider(fake_llm).complete(claims_request(), timeout=5)
    assert info.value.retry_after is None


def test_server_error_is_retryable(fake_llm: FakeLLM) -> None:
    fake_llm.set_mode("server_error_then_ok")
    prov = provider(fake_llm)
    with pytest.raises(ProviderError) as info:
        prov.complete(claims_request(), timeout=5)
    assert info.value.retryable and info.value.status == 500
    assert not isinstance(info.value, RateLimitError)
    prov.complete(claims_request(), timeout=5)


def test_unauthorized_is_not_retryable_and_never_shows_the_key(
    fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    fake_llm.set_mode("unauthorized")  # the fake echoes the token back, as real servers do
    with pytest.raises(ProviderError) as info:
        provider(fake_llm).complete(claims_request(), timeout=5)
    err = info.value
    assert err.status == 401 and not err.retryable
    assert str(err).startswith(f"openai: HTTP 401 from {fake_llm.base_url}/chat/completions: ")
    assert "invalid API key? set OPENAI_API_KEY" in str(err)
    assert_key_absent(err)


def test_unauthorized_without_key_says_so(fake_llm: FakeLLM) -> None:
    fake_llm.set_mode("unauthorized")
    with pytest.raises(ProviderError, match="no API key sent; set OPENAI_API_KEY"):
        provider(fake_llm).complete(claims_request(), timeout=5)


def test_not_found(fake_llm: FakeLLM) -> None:
    fake_llm.set_mode("not_found")
    with pytest.raises(ProviderError, match="unknown model 'fake-1'") as info:
        provider(fake_llm).complete(claims_request(), timeout=5)
    assert info.value.status == 404 and not info.value.retryable


def test_hang_times_out_in_time(fake_llm: FakeLLM) -> None:
    fake_llm.set_mode("hang")
    start = time.monotonic()
    with pytest.raises(ProviderError, match="timed out") as info:
        provider(fake_llm).complete(claims_request(), timeout=0.5)
    assert time.monotonic() - start < 30  # the server hangs 60 s: the timeout fired
    assert info.value.retryable


@pytest.mark.parametrize("mode", ["bad_json_body", "no_choices"])
def test_malformed_bodies_are_retryable(fake_llm: FakeLLM, mode: str) -> None:
    fake_llm.set_mode(mode)
    with pytest.raises(ProviderError, match="malformed response") as info:
        provider(fake_llm).complete(claims_request(), timeout=5)
    assert info.value.retryable


def test_null_content_is_an_error(fake_llm: FakeLLM) -> None:
    fake_llm.set_mode("null_content")
    with pytest.raises(ProviderError, match="no message content"):
        provider(fake_llm).complete(claims_request(), timeout=5)


def test_malformed_json_content_is_passed_through(fake_llm: FakeLLM) -> None:
    """Truncated JSON in a well-formed completion is the runner's to repair, not an error."""
    fake_llm.set_mode("malformed")
    resp = provider(fake_llm).complete(claims_request(), timeout=5)
    with pytest.raises(ValueError):
        json.loads(resp.text)


def test_connection_refused_is_retryable(fake_llm: FakeLLM) -> None:
    base = fake_llm.base_url
    fake_llm.stop()
    with pytest.raises(ProviderError, match="cannot reach") as info:
        OpenAIProvider({"base_url": base}).complete(claims_request(), timeout=2)
    assert info.value.retryable


@pytest.mark.parametrize(
    ("auth", "shown"),
    [
        ("me:s3cretPassw0rd@", "me:[REDACTED:url_password]@"),  # a password before the @
        ("", ""),
    ],
)
def test_an_endpoint_is_named_without_its_credentials(
    fake_llm: FakeLLM, auth: str, shown: str
) -> None:
    """The errors name the endpoint, never a password or a key in its URL."""
    base = fake_llm.base_url
    fake_llm.stop()
    url = base.replace("http://", f"http://{auth}", 1) + "?api-key=k3yK3yK3yK3yK3y"
    with pytest.raises(ProviderError, match="cannot reach") as info:
        OpenAIProvider({"base_url": url}).complete(claims_request(), timeout=2)
    message = str(info.value)
    assert "s3cretPassw0rd" not in message and "k3yK3yK3yK3yK3y" not in message
    host = base.removeprefix("http://")
    assert f"http://{shown}{host}?api-key=[REDACTED:" in message


class _Redirect(BaseHTTPRequestHandler):
    """Answers every POST with a redirect elsewhere (where the key must not follow)."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(307)
        self.send_header("Location", "http://127.0.0.1:9/steal")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_redirects_are_not_followed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Redirect)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}/v1"
        with pytest.raises(ProviderError, match="redirects are not followed") as info:
            OpenAIProvider({"base_url": base}).complete(claims_request(), timeout=2)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    assert info.value.status == 307 and not info.value.retryable


def test_key_never_leaks(fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever the provider returns or raises, in every mode, never contains the key."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    prov = provider(fake_llm)
    seen: list[Any] = [prov, vars(prov)]
    modes = ["ok", "fenced", "paraphrase", "unauthorized", "not_found", "rate_limit",
             "server_error", "bad_json_body", "no_choices", "null_content", "hang"]  # fmt: skip
    for mode in modes:
        fake_llm.set_mode(mode)
        try:
            seen.append(prov.complete(claims_request(schema=CLAIMS_SCHEMA), timeout=0.3))
        except ProviderError as exc:
            seen.append(exc)
    assert any(isinstance(x, Response) for x in seen)
    for item in seen:
        if isinstance(item, BaseException):
            assert_key_absent(item)
        else:
            assert KEY not in repr(item) and KEY[8:24] not in repr(item)


def assert_key_absent(err: BaseException) -> None:
    texts = [str(err), repr(err), repr(err.args), repr(vars(err))]
    texts += traceback.format_exception(err)
    for text in texts:
        assert KEY not in text
        assert KEY[8:24] not in text


# -- the fake itself -------------------------------------------------------------------------------


def test_fake_modes_by_marker_rule_and_header(fake_llm: FakeLLM) -> None:
    prov = provider(fake_llm, extra_headers={"X-Fake-Mode": "paraphrase"})
    resp = prov.complete(claims_request(), timeout=5)
    assert all(c["quote"] not in TEXT for c in json.loads(resp.text))
    fake_llm.set_mode("fenced", when="waggle")
    assert "```json" in provider(fake_llm).complete(claims_request(), timeout=5).text
    marked = Request("extract_claims", "Extract claims.", "[[fake_llm:malformed]] " + TEXT)
    text = provider(fake_llm).complete(marked, timeout=5).text
    with pytest.raises(ValueError):
        json.loads(text)
    assert [r.mode for r in fake_llm.chat_requests] == ["paraphrase", "fenced", "malformed"]
    assert {r.pattern for r in fake_llm.chat_requests} == {"extract_claims"}
    with pytest.raises(ValueError, match="unknown fake_llm mode"):
        fake_llm.set_mode("sometimes")


def test_fake_entities_and_verdicts(fake_llm: FakeLLM) -> None:
    prov = provider(fake_llm)
    find = Request("extract_entities", "Find the named entities.", TEXT)
    ents = json.loads(prov.complete(find, timeout=5).text)
    names = [e["name"] for e in ents["entities"]]
    assert "Honey" in names or "Alice" in names
    assert all(m["quote"] in TEXT for e in ents["entities"] for m in e["mentions"])
    payload = json.dumps({"claims": [{"id": "c1", "claim": "x", "quote": "waggle dance"},
                                     {"id": "c2", "claim": "y", "quote": "not there"}],
                          "transcript": TEXT})  # fmt: skip
    check = Request("validate_claims", "Give each claim a verdict.", payload)
    verdicts = json.loads(prov.complete(check, timeout=5).text)
    assert [v["verdict"] for v in verdicts] == ["grounded", "unsupported"]


SIX = ["extract_claims", "extract_entities", "extract_wisdom", "summarize", "condense_chat",
       "validate_claims"]  # fmt: skip


@pytest.mark.parametrize("json_mode", ["off", "auto"])
@pytest.mark.parametrize("name", SIX)
def test_fake_answers_the_real_patterns(fake_llm: FakeLLM, name: str, json_mode: str) -> None:
    """Each shipped pattern, its input embedded in the prompt as the runner does: the fake
    recognises it and answers valid output whose quotes are verbatim."""
    folder = PATTERNS / name
    schema = yaml.safe_load((folder / "pattern.yaml").read_text(encoding="utf-8"))["output"]
    text = TEXT
    if name == "validate_claims":
        claims = [{"id": "c1", "claim": "Bees dance.", "quote": "a waggle dance"},
                  {"id": "c2", "claim": "Bees sing.", "quote": "bees sing"}]  # fmt: skip
        text = "CLAIMS:\n" + json.dumps(claims) + "\n\nTRANSCRIPT:\n" + TEXT
    system = (folder / "system.md").read_text(encoding="utf-8").replace("{{input}}", text)
    prov = provider(fake_llm, json_mode=json_mode)
    value = json.loads(prov.complete(Request(name, system, "", schema=schema), timeout=5).text)
    assert fake_llm.chat_requests[0].pattern == name
    assert first_violation(schema, value) is None
    if name == "validate_claims":
        assert [v["verdict"] for v in value] == ["grounded", "unsupported"]
        return
    quotes = list(_quotes(value))
    assert quotes and all(q in TEXT for q in quotes)


def _quotes(value: Any, key: str = "") -> Iterator[str]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _quotes(v, k)
    elif isinstance(value, list):
        for v in value:
            yield from _quotes(v, key)
    elif isinstance(value, str) and key in ("quote", "quotes"):
        yield value


def test_fake_schema_driven_answer() -> None:
    schema = {
        "type": "object",
        "properties": {
            "summary": {"type": "string"},
            "points": {"type": "array", "items": {"type": "object", "properties": {
                "text": {"type": "string"}, "quote": {"type": "string"},
                "weight": {"type": "number", "maximum": 0.5}}}},
            "kind": {"enum": ["talk", "chat"]},
        },
    }  # fmt: skip
    value = from_schema(schema, sentences(TEXT))
    assert value["kind"] == "talk"
    assert len(value["points"]) == 2 and value["points"][0]["weight"] == 0.5
    assert all(p["quote"] in TEXT for p in value["points"])
