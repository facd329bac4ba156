"""``arkai config``: effective parameters with their sources."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.conftest import Runner


def test_sources_default_file_and_environment(
    kr: Path, arkai: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    params = yaml.safe_load((kr / "params.yaml").read_text())
    del params["extract"]["retries"]  # falls back to arkai's default
    params["extract"]["concurrency"] = 2
    (kr / "params.yaml").write_text(yaml.safe_dump(params))
    monkeypatch.setenv("ARKAI_OPENAI_MODEL", "llama3")
    monkeypatch.setenv("ARKAI_EMBEDDER", "minilm")
    code, out, err = arkai("--repo", kr, "config", "--json")
    assert code == 0, err
    got = {p["key"]: (p["value"], p["source"]) for p in json.loads(out)["params"]}
    assert got["extract.retries"] == (3, "default")
    assert got["extract.concurrency"] == (2, "params.yaml")
    assert got["providers.openai.model"] == ("llama3", "env:ARKAI_OPENAI_MODEL")
    # ARKAI_EMBEDDER only refines `default`; the scaffold asks for `default`.
    assert got["index.embedder"] == ("minilm", "env:ARKAI_EMBEDDER")
    code, out, _ = arkai("--repo", kr, "config", "extract.concurrency")
    assert code == 0 and out.strip() == "extract.concurrency  2  (params.yaml)"


def test_an_explicit_embedder_is_not_overridden(
    kr: Path, arkai: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    params = yaml.safe_load((kr / "params.yaml").read_text())
    params.setdefault("index", {})["embedder"] = "minilm-onnx"
    (kr / "params.yaml").write_text(yaml.safe_dump(params))
    monkeypatch.setenv("ARKAI_EMBEDDER", "minilm")
    code, out, _ = arkai("--repo", kr, "config", "index.embedder", "--json")
    assert code == 0 and json.loads(out)["params"] == [
        {"key": "index.embedder", "value": "minilm-onnx", "source": "params.yaml"}
    ]


def test_unknown_key_exits_5(kr: Path, arkai: Runner) -> None:
    code, _, err = arkai("--repo", kr, "config", "no.such.key")
    assert code == 5 and "no parameter 'no.such.key'" in err
