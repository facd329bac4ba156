"""``arkai mcp`` refuses to serve HTTP without a usable token, and ``--list`` reports the
declared surface and its token cost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arkai.core.tokens import count_tokens
from tests.conftest import Runner


@pytest.fixture(autouse=True)
def _no_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ARKAI_MCP_TOKEN", raising=False)
    monkeypatch.delenv("ARKAI_MCP_VIEWER_TOKEN", raising=False)


def test_http_without_a_token_is_a_usage_error(kr: Path, arkai: Runner) -> None:
    code, _, err = arkai("--repo", kr, "mcp", "--http", "--port", "0")
    assert code == 2 and "needs a bearer token" in err and "ARKAI_MCP_TOKEN" in err


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("short\n", "at least 16 characters"),
        ("admin 0123456789abcdef0123\n", "unknown role 'admin'"),
        ("a b c\n", "expected TOKEN or ROLE TOKEN"),
    ],
)
def test_bad_token_files_name_the_line(
    kr: Path, arkai: Runner, tmp_path: Path, content: str, needle: str
) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text(f"# comment\n{content}", encoding="utf-8")
    code, _, err = arkai("--repo", kr, "mcp", "--http", "--token-file", tokens)
    assert code == 2 and needle in err and "tokens:2" in err


def test_list_reports_the_declared_tools_and_their_tokens(arkai: Runner) -> None:
    code, out, _ = arkai("mcp", "--list", "--json")
    assert code == 0
    listing = json.loads(out)
    names = [t["name"] for t in listing["tools"]]
    assert "search" in names and "remember" not in names
    text = json.dumps({"tools": listing["tools"]}, ensure_ascii=False, separators=(",", ":"))
    assert listing["tokens"] == count_tokens(text)
    code, out, _ = arkai("mcp", "--list", "--allow-write", "--json")
    assert {"add", "remember", "review"} <= {t["name"] for t in json.loads(out)["tools"]}
