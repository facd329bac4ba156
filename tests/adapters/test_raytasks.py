"""``extract.executor`` and ``extract.ray`` settings: checked with errors naming the key, the
environment override of the address, an item's key independent of where it runs, and the
embedding batches cut and handed on in order (the Ray cluster itself:
tests/func/test_extract_ray.py, tests/func/test_index_ray.py)."""

from __future__ import annotations

import copy
import json
import socket
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from arkai.adapters.layout import scan_items
from arkai.adapters.params import DEFAULTS, load_params
from arkai.adapters.raytasks import ENV_ADDRESS, RayConfig, executor_of
from arkai.errors import InvalidInputError, LibraryError, PipelineError
from arkai.ops.extract import plan_item
from arkai.search import embed, embedbatches
from tests.conftest import SAMPLES, Runner


def test_ray_settings_are_read_and_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_ADDRESS, raising=False)
    assert RayConfig.from_params(DEFAULTS["extract"]["ray"]) == RayConfig(None, 3, 1.0)
    cfg = RayConfig.from_params({"address": " ray://head:10001 ", "num_cpus": 0.25})
    assert cfg == RayConfig("ray://head:10001", 3, 0.25)
    monkeypatch.setenv(ENV_ADDRESS, "10.0.0.5:6379")
    assert RayConfig.from_params({"address": "auto"}).address == "10.0.0.5:6379"
    monkeypatch.delenv(ENV_ADDRESS)
    bad_values = [
        ({"address": 5}, "address"),
        ({"address": " "}, "address"),
        ({"max_retries": -1}, "max_retries"),
        ({"max_retries": 1.5}, "max_retries"),
        ({"num_cpus": "all"}, "num_cpus"),
        ({"num_cpus": True}, "num_cpus"),
    ]
    for bad, key in bad_values:
        with pytest.raises(InvalidInputError, match=rf"extract\.ray\.{key} must be"):
            RayConfig.from_params(bad)


def test_executor_is_local_or_ray(kr: Path) -> None:
    assert executor_of({}) == "local"
    assert executor_of({"executor": "local"}, "ray") == "ray"
    with pytest.raises(InvalidInputError, match=r"extract\.executor must be one of local, ray"):
        executor_of({"executor": "spark"})
    params = yaml.safe_load((kr / "params.yaml").read_text())
    assert params["extract"]["executor"] == "local"
    params["extract"]["executor"] = "spark"
    (kr / "params.yaml").write_text(yaml.safe_dump(params))
    with pytest.raises(LibraryError, match=r"params\.yaml: extract\.executor must be one of"):
        load_params(kr)


def test_an_items_key_does_not_depend_on_where_it_runs(kr: Path, arkai: Runner) -> None:
    code, _, err = arkai("--repo", kr, "add", SAMPLES / "beekeeping-talk.vtt", "--quiet")
    assert code == 0, err
    (item,), _ = scan_items(kr)
    params = load_params(kr)
    key = plan_item(item, kr, params, "builtin", None).key
    elsewhere = copy.deepcopy(params)
    ray = {"address": "auto", "max_retries": 0, "num_cpus": 0.5}
    elsewhere["extract"].update(executor="ray", concurrency=16, ray=ray)
    assert plan_item(item, kr, elsewhere, "builtin", None).key == key
    changed = copy.deepcopy(params)
    changed["extract"]["match_mode"] = "fuzzy"
    assert plan_item(item, kr, changed, "builtin", None).key != key


def test_extract_json_names_the_executor(kr: Path, arkai: Runner) -> None:
    code, out, err = arkai("--repo", kr, "extract", "--json")
    assert code == 0, err
    assert json.loads(out)["executor"] == "local"
    code, _, err = arkai("--repo", kr, "extract", "--executor", "spark", "--json")
    assert code == 2 and "spark" in err


def test_an_unreachable_cluster_fails_at_once_and_a_no_op_never_connects(
    kr: Path, arkai: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{s.getsockname()[1]}"
    monkeypatch.setenv(ENV_ADDRESS, address)
    code, out, err = arkai("--repo", kr, "extract", "--executor", "ray", "--json")
    assert code == 0 and json.loads(out)["executor"] == "ray", err  # nothing to do
    code, _, err = arkai("--repo", kr, "add", SAMPLES / "beekeeping-talk.vtt", "--quiet")
    assert code == 0, err
    code, _, err = arkai("--repo", kr, "extract", "--executor", "ray", "--json")
    assert code == 3 and f"cannot reach the Ray cluster at {address}" in err
    assert not list((kr / "extracted").rglob("extraction.json"))


class _Recording:
    """An embedder that records each call (texts, batch size) and returns the call's number."""

    name, dim = "recording", 2

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], int]] = []

    def encode(self, texts: list[str], *, batch_size: int = 64, kind: str = "passage") -> Any:
        assert kind == "passage"
        self.calls.append((list(texts), batch_size))
        return np.full((len(texts), self.dim), len(self.calls), dtype=np.float32)


def test_local_embedding_batches_keep_the_order_and_the_model_batch_size() -> None:
    texts = {f"k{i}": f"text {i}" for i in range(7)}
    emb = _Recording()
    got = list(embedbatches.encoded(emb, list(texts), texts, 3, {"executor": "local"}))
    assert [part for part, _ in got] == [["k0", "k1", "k2"], ["k3", "k4", "k5"], ["k6"]]
    assert [rows[:, 0].tolist() for _, rows in got] == [[1, 1, 1], [2, 2, 2], [3]]
    assert [size for _, size in emb.calls] == [3, 3, 3]
    emb.calls.clear()
    list(embedbatches.encoded(emb, list(texts), texts, 4, None, encode_size=2))
    assert [(len(t), size) for t, size in emb.calls] == [(4, 2), (3, 2)]
    # Nothing to embed never reaches for Ray, whatever the executor.
    assert list(embedbatches.encoded(emb, [], texts, 3, {"executor": "ray"})) == []


def test_a_worker_whose_embedder_differs_refuses_the_batch() -> None:
    ours = f"onnx-int8-v{embed.EXPORT_VERSION}"
    batch = embedbatches.Batch("minilm-onnx", 999, ("a text",), 1, ours)
    with pytest.raises(PipelineError, match=rf"embedder is minilm-onnx \(384 dimensions, {ours}\), "
                       rf"the driver's minilm-onnx \(999 dimensions, {ours}\)"):  # fmt: skip
        embedbatches.encode_batch(batch)
    # Another arkai on the driver: the same model, exported by another recipe (other rows).
    batch = embedbatches.Batch("minilm-onnx", 384, ("a text",), 1, "onnx-int8-v4")
    with pytest.raises(PipelineError, match=r"the driver's minilm-onnx \(384 dimensions, "
                       r"onnx-int8-v4\): install the same arkai"):  # fmt: skip
        embedbatches.encode_batch(batch)
    rows = embedbatches.encode_batch(embedbatches.Batch("minilm-onnx", 384, ("a text",), 1, ours))
    assert rows.shape == (1, 384)
