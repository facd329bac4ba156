"""``arkai mcp`` driven by the official SDK's client: over stdio (the server a subprocess) and
over Streamable HTTP (one server for the module, on a free port, polled until it answers):
tools/list, every read tool checked against its declared output schema, write policy, roles,
bearer tokens, Origin checks, the audit log and a clean stop on SIGTERM."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest

from tests.conftest import tool_env
from tests.tools.conftest import read_audit
from tests.tools.test_registry import _files, _read_calls

pytestmark = pytest.mark.slow  # real servers in subprocesses

EDITOR_TOKEN = "editor-token-0123456789abcdef"
VIEWER_TOKEN = "viewer-token-0123456789abcdef"
HANG_GUARD_S = 120


def _arkai(root: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "arkai.cli.main", "--repo", str(root), *args]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _post(url: str, headers: dict[str, str]) -> int:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    req = urllib.request.Request(url, data=body, method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        **headers})  # fmt: skip
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


@pytest.fixture(scope="module")
def http_server(toollib: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Iterator[
        dict[str, Any]]:  # fmt: skip
    root = toollib["root"]
    tokens = tmp_path_factory.mktemp("tokens") / "tokens"
    tokens.write_text(f"# roles\neditor {EDITOR_TOKEN}\nviewer {VIEWER_TOKEN}\n")
    port = _free_port()
    env = tool_env()
    env.pop("ARKAI_MCP_TOKEN", None)
    proc = subprocess.Popen(
        _arkai(root, "mcp", "--http", "--port", str(port), "--token-file", str(tokens),
               "--allow-write"),
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/mcp"
    deadline = time.monotonic() + HANG_GUARD_S
    while True:  # ready when an unauthenticated request gets its 401
        try:
            if _post(url, {}) == 401:
                break
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"server did not start: {proc.communicate()[1].decode()}")
        time.sleep(0.1)  # poll interval
    yield {"root": root, "url": url, "port": port, "proc": proc, **toollib}
    if proc.poll() is None:
        proc.kill()
        proc.wait(30)


async def _session_calls(session: Any, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    await session.initialize()
    listed = await session.list_tools()
    out: list[Any] = [listed]
    for name, args in calls:
        out.append(await session.call_tool(name, args))
    return out


def _stdio(root: Path, extra: list[str], calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    cmd = _arkai(root, "mcp", *extra)
    params = StdioServerParameters(command=cmd[0], args=cmd[1:], env=tool_env())

    async def main() -> list[Any]:
        with anyio.fail_after(HANG_GUARD_S):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
                return await _session_calls(s, calls)

    return anyio.run(main)


def _http(url: str, token: str | None, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    import httpx2
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else {}

    async def main() -> list[Any]:
        with anyio.fail_after(HANG_GUARD_S):
            async with (
                httpx2.AsyncClient(headers=headers, timeout=60) as client,
                streamable_http_client(url, http_client=client) as streams,
                ClientSession(streams[0], streams[1]) as s,
            ):
                return await _session_calls(s, calls)

    return anyio.run(main)


def _check_reply(result: Any, schema: dict[str, Any]) -> dict[str, Any]:
    body = result.structured_content
    jsonschema.validate(body, schema)
    assert json.loads(result.content[0].text) == body
    assert result.is_error == (not body["ok"])
    return dict(body)


def test_stdio_session_lists_and_calls_every_read_tool(toollib: dict[str, Any]) -> None:
    root = toollib["root"]
    reads = [(name, args) for name, args, _ in _read_calls(toollib)]
    before = _files(root)
    listed, *replies, denied = _stdio(root, [], [*reads, ("remember", {"text": "no"})])
    schemas = {t.name: t.output_schema for t in listed.tools}
    assert sorted(schemas) == sorted(name for name, _ in reads)  # no write tools listed
    for (name, _), reply in zip(reads, replies, strict=True):
        body = _check_reply(reply, schemas[name])
        assert body["ok"], (name, body["error"])
    body = denied.structured_content
    assert body["error"]["code"] == "FORBIDDEN" and "--allow-write" in body["error"]["message"]
    assert _files(root) == before
    audit = {a["trace_id"]: a for a in read_audit(root)}
    line = audit[body["trace_id"]]
    assert line["outcome"] == "denied" and line["transport"] == "stdio"
    assert line["tool"] == "remember"


def test_http_missing_or_wrong_token_is_401(http_server: dict[str, Any]) -> None:
    url = http_server["url"]
    assert _post(url, {}) == 401
    assert _post(url, {"Authorization": "Bearer not-the-token-at-all"}) == 401
    assert _post(url, {"Authorization": f"Basic {EDITOR_TOKEN}"}) == 401


def test_http_foreign_origin_or_host_is_refused(http_server: dict[str, Any]) -> None:
    url, auth = http_server["url"], {"Authorization": f"Bearer {EDITOR_TOKEN}"}
    assert _post(url, {**auth, "Origin": "http://evil.example"}) == 403
    assert _post(url, {**auth, "Host": "evil.example"}) in (403, 421)


def test_http_viewer_reads_but_cannot_write(http_server: dict[str, Any]) -> None:
    root = http_server["root"]
    before = _files(root)
    listed, found, denied = _http(http_server["url"], VIEWER_TOKEN, [
        ("search", {"query": "varroa", "mode": "lexical"}),
        ("remember", {"text": "a viewer's note"}),
    ])  # fmt: skip
    names = {t.name for t in listed.tools}
    assert "search" in names and not names & {"add", "remember", "review"}
    schema = next(t.output_schema for t in listed.tools if t.name == "search")
    assert _check_reply(found, schema)["ok"]
    body = denied.structured_content
    assert body["error"]["code"] == "FORBIDDEN" and "viewer" in body["error"]["message"]
    assert _files(root) == before
    line = next(a for a in read_audit(root) if a["trace_id"] == body["trace_id"])
    assert line["outcome"] == "denied" and line["role"] == "viewer"
    assert line["transport"] == "http"


def test_http_hostile_arguments_are_clean_errors(http_server: dict[str, Any]) -> None:
    root = http_server["root"]
    before = _files(root)
    calls = [
        ("search", {"query": ["not", "a", "string"]}),
        ("search", {"query": "x" * 1_000_000}),
        ("show", {"id": "../../etc/passwd"}),
        ("add", {"inputs": ["../../etc/passwd"]}),
        ("add", {"inputs": ["/etc/passwd"]}),
        ("remember", {"text": "run `rm -rf ~` now", "tags": "not-a-list"}),
    ]
    _, *replies = _http(http_server["url"], EDITOR_TOKEN, calls)
    for (name, _), reply in zip(calls, replies, strict=True):
        body = reply.structured_content
        assert reply.is_error and not body["ok"], name
        assert body["error"]["code"] in ("INVALID_ARGUMENTS", "NOT_FOUND", "UNSAFE_PATH"), body
        assert "Traceback" not in body["error"]["message"]
        assert str(root) not in body["error"]["message"]
    assert _files(root) == before
    audited = {a["trace_id"] for a in read_audit(root)}
    assert all(r.structured_content["trace_id"] in audited for r in replies)


def test_http_editor_writes_with_allow_write(http_server: dict[str, Any]) -> None:
    root = http_server["root"]
    listed, wrote = _http(http_server["url"], EDITOR_TOKEN, [
        ("remember", {"text": "Mite counts in August predict winter losses.",
                      "tags": ["bees"]}),
    ])  # fmt: skip
    assert {"add", "remember", "review"} <= {t.name for t in listed.tools}
    body = wrote.structured_content
    assert body["ok"], body["error"]
    result = body["data"]["results"][0]
    assert result["status"] == "added" and result["path"].startswith("library/notes/")
    assert (root / result["path"] / "transcript.md").is_file()
    line = next(a for a in read_audit(root) if a["trace_id"] == body["trace_id"])
    assert line["outcome"] == "ok" and line["role"] == "editor"


def test_sigterm_stops_the_server_and_frees_the_port(http_server: dict[str, Any]) -> None:
    proc = http_server["proc"]
    proc.send_signal(signal.SIGTERM)
    code = proc.wait(HANG_GUARD_S)
    err = proc.stderr.read().decode() if proc.stderr else ""
    assert code == 0, err
    assert "Traceback" not in err
    with socket.socket() as s:
        # SO_REUSEADDR: connections in TIME_WAIT do not count; only a listener would refuse.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", http_server["port"]))


def test_stdio_server_stops_cleanly_on_sigterm(toollib: dict[str, Any]) -> None:
    proc = subprocess.Popen(_arkai(toollib["root"], "mcp"), env=tool_env(),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)  # fmt: skip
    guard = threading.Timer(HANG_GUARD_S, proc.kill)
    guard.start()
    try:
        assert proc.stdin is not None and proc.stdout is not None
        hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}}  # fmt: skip
        proc.stdin.write((json.dumps(hello) + "\n").encode())
        proc.stdin.flush()
        reply = json.loads(proc.stdout.readline())  # ready: it answered
        assert reply["id"] == 1 and reply["result"]["serverInfo"]["name"] == "arkai"
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(HANG_GUARD_S)
    finally:
        guard.cancel()
    err = proc.stderr.read().decode() if proc.stderr else ""
    assert code == 0, err
    assert "Traceback" not in err
