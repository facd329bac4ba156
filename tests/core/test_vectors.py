"""VectorStore: keyed rows, incremental adds, pruning, persistence and exact search."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from arkai.errors import InvalidInputError, NotFoundError
from arkai.search.vectors import VectorStore


def unit_rows(n: int, dim: int = 8, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def keys_for(n: int, prefix: str = "k") -> list[str]:
    return [f"sha256:{prefix}{i:04d}" for i in range(n)]


def test_add_get_missing() -> None:
    s = VectorStore(8, "m")
    rows = unit_rows(5)
    keys = keys_for(5)
    assert s.missing(keys) == keys
    s.add(keys[:3], rows[:3])
    assert len(s) == 3 and keys[0] in s and keys[4] not in s
    assert s.missing([keys[4], keys[0], keys[3], keys[4]]) == [keys[4], keys[3]]
    s.add(keys[3:], rows[3:])
    assert np.array_equal(s.get([keys[4], keys[1]]), rows[[4, 1]])
    assert s.get([]).shape == (0, 8)
    assert s.keys == keys
    with pytest.raises(NotFoundError):
        s.get(["sha256:nope"])


def test_add_replaces_an_existing_key_and_checks_shapes() -> None:
    s = VectorStore(8, "m")
    rows = unit_rows(3)
    s.add(keys_for(2), rows[:2])
    s.add([keys_for(2)[0]], rows[2])
    assert len(s) == 2
    assert np.array_equal(s.get([keys_for(2)[0]])[0], rows[2])
    with pytest.raises(InvalidInputError):
        s.add(["a", "b"], unit_rows(3))
    with pytest.raises(InvalidInputError):
        s.add(["a"], unit_rows(1, dim=4))
    with pytest.raises(InvalidInputError):
        s.add(["a"], np.full((1, 8), np.nan, dtype=np.float32))
    with pytest.raises(InvalidInputError):
        s.add([""], unit_rows(1))
    with pytest.raises(InvalidInputError):
        VectorStore(0, "m")


def test_many_adds_grow_the_buffer() -> None:
    s = VectorStore(8, "m")
    rows = unit_rows(1000)
    keys = keys_for(1000)
    for i in range(0, 1000, 7):
        s.add(keys[i : i + 7], rows[i : i + 7])
    assert np.array_equal(s.rows, rows)


def test_prune_keeps_order() -> None:
    s = VectorStore(8, "m")
    rows = unit_rows(6)
    keys = keys_for(6)
    s.add(keys, rows)
    assert s.prune([keys[5], keys[1], keys[3], "sha256:unknown"]) == 3
    assert s.keys == [keys[1], keys[3], keys[5]]
    assert np.array_equal(s.rows, rows[[1, 3, 5]])
    assert s.missing(keys) == [keys[0], keys[2], keys[4]]
    assert s.prune(s.keys) == 0


def test_save_load_round_trip(tmp_path: Path) -> None:
    s = VectorStore(8, "minilm-onnx")
    rows = unit_rows(20)
    s.add(keys_for(20), rows)
    s.save(tmp_path / "v")
    assert sorted(p.name for p in (tmp_path / "v").iterdir()) == [
        "keys.json",
        "meta.json",
        "vectors.npy",
    ]
    meta = json.loads((tmp_path / "v" / "meta.json").read_text())
    assert meta["model"] == "minilm-onnx" and meta["dim"] == 8 and meta["count"] == 20
    assert np.load(tmp_path / "v" / "vectors.npy").dtype == np.float32
    t = VectorStore.load(tmp_path / "v", "minilm-onnx")
    assert t.keys == s.keys and t.dim == 8
    assert np.array_equal(t.rows, rows)
    # Still usable after loading: add and save again.
    t.add(["sha256:new"], unit_rows(1, seed=3))
    t.save(tmp_path / "v")
    assert len(VectorStore.load(tmp_path / "v", "minilm-onnx")) == 21


def test_load_other_model_or_width_is_empty(tmp_path: Path) -> None:
    s = VectorStore(8, "minilm")
    s.add(keys_for(3), unit_rows(3))
    s.save(tmp_path)
    other = VectorStore.load(tmp_path, "minilm-onnx")
    assert len(other) == 0 and other.model_name == "minilm-onnx" and other.dim == 8
    assert other.missing(keys_for(3)) == keys_for(3)  # so everything is embedded again
    wider = VectorStore.load(tmp_path, "minilm", dim=16)
    assert len(wider) == 0 and wider.dim == 16
    assert len(VectorStore.load(tmp_path, "minilm", dim=8)) == 3


def test_load_missing_or_inconsistent_folder(tmp_path: Path) -> None:
    assert len(VectorStore.load(tmp_path / "none", "m", dim=8)) == 0
    with pytest.raises(InvalidInputError, match="dim"):
        VectorStore.load(tmp_path / "none", "m")
    s = VectorStore(8, "m")
    s.add(keys_for(4), unit_rows(4))
    s.save(tmp_path)
    # keys.json from another generation (a crash between renames): not trusted.
    (tmp_path / "keys.json").write_text(json.dumps(keys_for(4, prefix="x")))
    assert len(VectorStore.load(tmp_path, "m")) == 0
    s.save(tmp_path)
    np.save(tmp_path / "vectors.npy", unit_rows(3))
    assert len(VectorStore.load(tmp_path, "m")) == 0
    s.save(tmp_path)
    (tmp_path / "vectors.npy").write_bytes(b"garbage")
    assert len(VectorStore.load(tmp_path, "m")) == 0


def test_incremental_embeds_only_new_chunks() -> None:
    calls: list[list[str]] = []

    def embed(texts: list[str]) -> np.ndarray:
        calls.append(list(texts))
        return unit_rows(len(texts), seed=len(calls))

    def index(store: VectorStore, chunks: dict[str, str]) -> None:
        todo = store.missing(chunks)
        if todo:
            store.add(todo, embed([chunks[k] for k in todo]))
        store.prune(chunks)

    store = VectorStore(8, "m")
    chunks = {f"sha256:{i}": f"text {i}" for i in range(10)}
    index(store, chunks)
    assert len(calls[-1]) == 10
    chunks.pop("sha256:3")
    chunks["sha256:new"] = "new text"
    index(store, chunks)
    assert calls[-1] == ["new text"]
    assert sorted(store.keys) == sorted(chunks)
    index(store, chunks)
    assert len(calls) == 2  # nothing new: nothing embedded


def brute(rows: np.ndarray, q: np.ndarray, k: int, mask: np.ndarray | None) -> list[int]:
    scores = rows @ q
    idx = np.arange(len(rows)) if mask is None else np.flatnonzero(mask)
    order = sorted(idx.tolist(), key=lambda i: (-scores[i], i))
    return order[:k]


@pytest.mark.parametrize("n", [1, 7, 500])
@pytest.mark.parametrize("k", [1, 5, 10, 600])
def test_search_matches_brute_force(n: int, k: int) -> None:
    rows = unit_rows(n, dim=16, seed=n)
    s = VectorStore(16, "m")
    s.add(keys_for(n), rows)
    rng = np.random.default_rng(k)
    for _ in range(5):
        q = unit_rows(1, dim=16, seed=int(rng.integers(1 << 30)))[0]
        got = s.search(q, k)
        assert [i for i, _ in got] == brute(rows, q, k, None)
        assert np.allclose([sc for _, sc in got], (rows @ q)[[i for i, _ in got]], atol=1e-6)
        for density in (0.05, 0.5, 1.0):
            mask = rng.random(n) < density
            got = s.search(q, k, mask)
            assert [i for i, _ in got] == brute(rows, q, k, mask)
            assert all(mask[i] for i, _ in got)


def test_search_ties_and_edges() -> None:
    s = VectorStore(4, "m")
    assert s.search(np.ones(4), 5) == []
    rows = np.zeros((6, 4), dtype=np.float32)
    rows[:, 0] = 1.0  # all tied
    s.add(keys_for(6), rows)
    q = np.array([1, 0, 0, 0], dtype=np.float32)
    assert [i for i, _ in s.search(q, 3)] == [0, 1, 2]
    assert s.search(q, 0) == []
    assert s.search(q, 3, np.zeros(6, dtype=bool)) == []
    with pytest.raises(InvalidInputError):
        s.search(np.ones(3), 2)
    with pytest.raises(InvalidInputError):
        s.search(np.full(4, np.nan), 2)
    with pytest.raises(InvalidInputError):
        s.search(q, 2, np.ones(5, dtype=bool))
    # The query's own row comes first.
    r = unit_rows(50, dim=4)
    t = VectorStore(4, "m")
    t.add(keys_for(50), r)
    assert t.search(r[17], 1)[0][0] == 17
