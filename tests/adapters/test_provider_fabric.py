"""The ``fabric`` provider against a fake ``fabric`` executable put first on ``PATH``."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from arkai.errors import InvalidInputError
from arkai.providers.base import ProviderError, Request
from arkai.providers.fabric import FabricProvider

FAKE = Path(__file__).resolve().parents[1] / "fixtures" / "providers" / "fake_fabric.py"
TEXT = "Bees dance to point at flowers. The angle gives the direction."

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="a shell-script stand-in")


@pytest.fixture
def fabric_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A ``fabric`` executable (running ``fake_fabric.py``) first on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "fabric"
    exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" "$@"\n')
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return exe


def req(pattern: str, **kw: Any) -> Request:
    return Request(pattern=pattern, system="(ignored by fabric)", input=TEXT, **kw)


def test_runs_the_pattern_with_input_on_stdin(fabric_on_path: Path) -> None:
    resp = FabricProvider().complete(req("extract_claims"), timeout=10)
    assert json.loads(resp.text) == [
        {
            "claim": "Bees dance to point at flowers.",
            "quote": "Bees dance to point at flowers.",
            "confidence": 0.7,
        }
    ]
    assert resp.model is None


def test_arguments(fabric_on_path: Path) -> None:
    prov = FabricProvider({"model": "cfg-model", "extra_args": "--temperature 0.2"})
    echoed = json.loads(prov.complete(req("echo_args"), timeout=10).text)
    assert echoed["argv"] == [
        "--pattern", "echo_args", "--model", "cfg-model", "--temperature", "0.2",
    ]  # fmt: skip
    assert echoed["stdin"] == TEXT
    resp = prov.complete(req("echo_args", model="req-model"), timeout=10)
    assert json.loads(resp.text)["model"] == "req-model"
    assert resp.model == "req-model"
    bare = json.loads(FabricProvider().complete(req("echo_args"), timeout=10).text)
    assert bare["argv"] == ["--pattern", "echo_args"]


def test_embedded_input_is_sent_from_the_system_prompt(fabric_on_path: Path) -> None:
    embedded = Request("echo_args", "# INPUT\n\nINPUT:\n\n" + TEXT, "")
    echoed = json.loads(FabricProvider().complete(embedded, timeout=10).text)
    assert echoed["stdin"] == embedded.system


def test_binary_by_path(fabric_on_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "")
    prov = FabricProvider({"binary": str(fabric_on_path)})
    assert "characters" in prov.complete(req("summarize"), timeout=10).text


def test_not_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ProviderError) as info:
        FabricProvider().complete(req("extract_claims"), timeout=10)
    assert str(info.value) == (
        "fabric CLI not found on PATH; install it or choose another provider (extract.provider)"
    )
    assert not info.value.retryable
    with pytest.raises(ProviderError, match="not found on PATH"):
        FabricProvider({"binary": str(tmp_path / "nope")}).complete(req("x"), timeout=10)


def test_failure_carries_the_last_stderr_line(fabric_on_path: Path) -> None:
    with pytest.raises(ProviderError) as info:
        FabricProvider().complete(req("fail"), timeout=10)
    assert str(info.value) == (
        "fabric: --pattern fail exited with status 1: error: could not find pattern fail"
    )
    assert not info.value.retryable


def test_rate_limit_in_stderr_is_retryable(fabric_on_path: Path) -> None:
    with pytest.raises(ProviderError, match="429 Too Many Requests") as info:
        FabricProvider().complete(req("rate_limited"), timeout=10)
    assert info.value.retryable


def test_empty_output_is_a_retryable_error(fabric_on_path: Path) -> None:
    with pytest.raises(ProviderError, match="printed nothing") as info:
        FabricProvider().complete(req("silent"), timeout=10)
    assert info.value.retryable


def test_timeout(fabric_on_path: Path) -> None:
    start = time.monotonic()
    with pytest.raises(ProviderError, match="timed out") as info:
        FabricProvider().complete(req("slow"), timeout=0.5)
    assert time.monotonic() - start < 30  # the stand-in sleeps 60 s: the timeout fired
    assert info.value.retryable


def test_config_errors() -> None:
    with pytest.raises(InvalidInputError, match="binary"):
        FabricProvider({"binary": 3})
    with pytest.raises(InvalidInputError, match="context_chars"):
        FabricProvider({"context_chars": "many"})
    assert FabricProvider({"context_chars": 1000}).context_chars(None) == 1000
