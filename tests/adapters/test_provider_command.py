"""The ``command`` provider with real hook scripts, and the provider registry."""

from __future__ import annotations

import json
import shlex
import sys
import time
from collections.abc import Mapping
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest

from arkai.adapters import plugins
from arkai.errors import ArkaiError, InvalidInputError
from arkai.providers import registry
from arkai.providers.base import ProviderError, Request, Response
from arkai.providers.command import CommandProvider
from arkai.providers.fabric import FabricProvider
from arkai.providers.openai import OpenAIProvider

SCRIPTS = Path(__file__).resolve().parents[1] / "fixtures" / "providers"
SCHEMA = {"type": "array", "items": {"type": "object"}}


def hook(script: str, *args: str, **config: Any) -> CommandProvider:
    return CommandProvider({"command": [sys.executable, str(SCRIPTS / script), *args], **config})


def request(pattern: str = "echo_request", **kw: Any) -> Request:
    return Request(pattern=pattern, system="Be brief.", input="Bees dance. Ants march.", **kw)


def test_request_on_stdin_follows_the_protocol() -> None:
    resp = hook("echo_hook.py", "--flag").complete(
        request(schema=SCHEMA, options={"temperature": 0, "variables": {"max_claims": "3"}}),
        timeout=10,
    )
    echoed = json.loads(resp.text)
    assert echoed["argv"] == ["--flag"]
    assert echoed["request"] == {
        "version": 1,
        "pattern": "echo_request",
        "system": "Be brief.",
        "input": "Bees dance. Ants march.",
        "model": None,
        "schema": SCHEMA,
        "options": {"temperature": 0, "variables": {"max_claims": "3"}},
    }
    assert resp.model == "echo-1"
    assert resp.usage == {"prompt_tokens": 5, "completion_tokens": 3}  # non-ints dropped


def test_output_string_or_json_value() -> None:
    text = hook("echo_hook.py").complete(request("plain"), timeout=10)
    assert text.text == "Bees dance. Ants march."
    claims = hook("echo_hook.py").complete(request("extract_claims"), timeout=10)
    assert json.loads(claims.text) == [
        {"claim": "Bees dance.", "quote": "Bees dance.", "confidence": 0.5}
    ]


def test_model_from_request_or_config() -> None:
    prov = hook("echo_hook.py", model="cfg-model")
    assert json.loads(prov.complete(request(), timeout=10).text)["request"]["model"] == "cfg-model"
    resp = prov.complete(request(model="req-model"), timeout=10)
    assert json.loads(resp.text)["request"]["model"] == "req-model"
    assert resp.model == "req-model"


def test_command_as_a_string_is_split() -> None:
    cmd = f"{shlex.quote(sys.executable)} {shlex.quote(str(SCRIPTS / 'echo_hook.py'))} 'a b'"
    prov = CommandProvider({"command": cmd})
    assert json.loads(prov.complete(request(), timeout=10).text)["argv"] == ["a b"]


def test_config_errors() -> None:
    with pytest.raises(InvalidInputError, match="not set"):
        CommandProvider({})
    with pytest.raises(InvalidInputError, match="list of strings"):
        CommandProvider({"command": {"run": "x"}})
    with pytest.raises(InvalidInputError, match="cannot split"):
        CommandProvider({"command": "echo 'unclosed"})
    assert CommandProvider({"command": "x", "context_chars": 900}).context_chars(None) == 900


@pytest.mark.parametrize(
    ("mode", "retryable", "message"),
    [
        ("envelope_retryable", True, "command: RATE_LIMITED: upstream says slow down"),
        ("envelope_fatal", False, "command: BAD_INPUT: cannot handle this pattern"),
        ("envelope_exit_1", False, "command: CRASHED: gave up"),
        ("tempfail", True, "exited with status 75: upstream busy, try later"),
        ("crash", False, "exited with status 1: ValueError: boom: the hook crashed"),
    ],
)
def test_failures(mode: str, retryable: bool, message: str) -> None:
    with pytest.raises(ProviderError) as info:
        hook("fail_hook.py", mode).complete(request(), timeout=10)
    assert message in str(info.value)
    assert info.value.retryable is retryable


@pytest.mark.parametrize("mode", ["text", "empty", "list", "no_output"])
def test_garbage_output_is_an_error(mode: str) -> None:
    with pytest.raises(ProviderError) as info:
        hook("garbage_hook.py", mode).complete(request(), timeout=10)
    assert not info.value.retryable
    assert "envelope" in str(info.value) or "without an output" in str(info.value)


def test_missing_executable() -> None:
    prov = CommandProvider({"command": ["/nonexistent/arkai-hook", "x"]})
    with pytest.raises(ProviderError, match="cannot run '/nonexistent/arkai-hook'") as info:
        prov.complete(request(), timeout=5)
    assert not info.value.retryable


def test_timeout_kills_the_process_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    start = time.monotonic()
    with pytest.raises(ProviderError, match="timed out") as info:
        hook("slow_hook.py", str(pidfile)).complete(request(), timeout=2.0)
    assert time.monotonic() - start < 30  # the hook sleeps 60 s: the timeout fired
    assert info.value.retryable
    assert pidfile.exists(), "the hook never started its child"
    child = int(pidfile.read_text())
    deadline = time.monotonic() + 3
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(child), "the hook's child outlived the timeout"


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie waiting for a reaper counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


# -- registry --------------------------------------------------------------------------------------


class Fixed:
    """A third-party plugin that registers a ready object instead of a class."""

    name = "fixed"

    def complete(self, request: Request, *, timeout: float) -> Response:
        return Response(text="fixed")

    def context_chars(self, model: str | None) -> int:
        return 10


FIXED = Fixed()


def fake_entry_points(monkeypatch: pytest.MonkeyPatch, *eps: tuple[str, str]) -> None:
    found = [EntryPoint(name=n, value=v, group=registry.GROUP) for n, v in eps]

    def entry_points(*, group: str) -> list[EntryPoint]:
        assert group == registry.GROUP
        return found

    monkeypatch.setattr(plugins, "entry_points", entry_points)
    registry.get_providers.cache_clear()


@pytest.fixture(autouse=True)
def _fresh_registry() -> Any:
    registry.get_providers.cache_clear()
    yield
    registry.get_providers.cache_clear()


BUILTINS = (
    ("openai", "arkai.providers.openai:OpenAIProvider"),
    ("fabric", "arkai.providers.fabric:FabricProvider"),
    ("command", "arkai.providers.command:CommandProvider"),
)


def test_registry_builds_providers_from_config(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_entry_points(monkeypatch, *BUILTINS, ("fixed", f"{__name__}:FIXED"))
    assert list(registry.get_providers()) == ["command", "fabric", "fixed", "openai"]
    prov = registry.get_provider("openai", {"base_url": "http://127.0.0.1:1/v1", "model": "m"})
    assert isinstance(prov, OpenAIProvider) and prov.model == "m"
    assert isinstance(registry.get_provider("fabric", {}), FabricProvider)
    cmd = registry.get_provider("command", {"command": ["x", "y"]})
    assert isinstance(cmd, CommandProvider) and cmd.argv == ["x", "y"]
    assert registry.get_provider("fixed", {"ignored": True}) is FIXED


def test_registry_unknown_name(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_entry_points(monkeypatch, *BUILTINS)
    with pytest.raises(InvalidInputError, match="unknown provider 'gpt'; known: command, fabric"):
        registry.get_provider("gpt", {})


def test_registry_refuses_two_plugins_with_one_name(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_entry_points(monkeypatch, *BUILTINS, ("openai2", "arkai.providers.openai:OpenAIProvider"))
    with pytest.raises(ArkaiError, match="two provider plugins claim the name 'openai'"):
        registry.get_providers()


def test_registry_reports_a_broken_plugin(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_entry_points(monkeypatch, ("broken", "arkai.providers.no_such_module:Thing"))
    with pytest.raises(ArkaiError, match="provider plugin 'broken'"):
        registry.get_providers()


def test_provider_classes_satisfy_the_factory_type() -> None:
    factories: list[registry.ProviderFactory] = [OpenAIProvider, FabricProvider, CommandProvider]
    configs: list[Mapping[str, Any]] = [{}, {}, {"command": "x"}]
    for make, config in zip(factories, configs, strict=True):
        prov = make(config)
        assert prov.name in ("openai", "fabric", "command")
        assert prov.context_chars(None) == 24_000
