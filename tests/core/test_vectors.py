"""VectorStore: keyed rows, incremental adds, pruning, persistence and exact search."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from arkai.errors import InvalidInputError, NotFoundError
from arkai.search import vectors
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
    asked = [keys[4], keys[0], keys[3], keys[4]]
    assert s.missing(asked) == [keys[4], keys[3]]
    assert s.missing(asked, vectors.key_ids(asked)) == [keys[4], keys[3]]  # ids made by the caller
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


def _files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_save_load_round_trip(tmp_path: Path) -> None:
    s = VectorStore(8, "minilm-onnx")
    rows = unit_rows(20)
    s.add(keys_for(20), rows)
    s.save(tmp_path / "v")
    meta = json.loads((tmp_path / "v" / "meta.json").read_text())
    assert meta["model"] == "minilm-onnx" and meta["dim"] == 8 and meta["count"] == 20
    assert meta["format"] == 2 and [e["rows"] for e in meta["segments"]] == [20]
    name = meta["segments"][0]["name"]
    assert _files(tmp_path / "v") == ["meta.json", f"{name}.keys", f"{name}.npy"]
    assert np.load(tmp_path / "v" / f"{name}.npy").dtype == np.float32
    assert (tmp_path / "v" / f"{name}.keys").read_text() == "".join(k + "\n" for k in keys_for(20))
    t = VectorStore.load(tmp_path / "v", "minilm-onnx")
    assert t.keys == s.keys and t.dim == 8 and not t.unsaved
    assert np.array_equal(t.rows, rows)
    # Still usable after loading: add and save again.
    t.add(["sha256:new"], unit_rows(1, seed=3))
    assert t.unsaved
    t.save(tmp_path / "v")
    assert len(VectorStore.load(tmp_path / "v", "minilm-onnx")) == 21
    assert len(_files(tmp_path / "v")) == 3  # the old segment's files are gone


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


def test_a_store_made_by_another_recipe_loads_empty_for_a_writer(tmp_path: Path) -> None:
    """The same model exported another way gives other rows: a writer that names its recipe
    gets an empty store (everything embedded again, never old rows beside new ones); a reader
    that names none takes the store's."""
    s = VectorStore(8, "minilm-onnx", "onnx-int8-v5")
    s.add(keys_for(3), unit_rows(3))
    s.save(tmp_path)
    assert _meta(tmp_path)["recipe"] == "onnx-int8-v5"
    same = VectorStore.load(tmp_path, "minilm-onnx", recipe="onnx-int8-v5")
    assert len(same) == 3 and same.recipe == "onnx-int8-v5"
    read = VectorStore.load(tmp_path, "minilm-onnx")
    assert len(read) == 3 and read.recipe == "onnx-int8-v5"
    for other in ("onnx-int8-v6", ""):
        got = VectorStore.load(tmp_path, "minilm-onnx", recipe=other)
        assert len(got) == 0 and got.recipe == other and got.missing(keys_for(3)) == keys_for(3)
    # A store written before recipes were recorded (no "recipe" in its meta) is of none.
    plain = VectorStore(8, "minilm-onnx")
    plain.add(keys_for(2), unit_rows(2))
    plain.save(tmp_path / "old")
    assert "recipe" not in _meta(tmp_path / "old")
    assert len(VectorStore.load(tmp_path / "old", "minilm-onnx", recipe="")) == 2
    assert len(VectorStore.load(tmp_path / "old", "minilm-onnx", recipe="onnx-int8-v5")) == 0


def _segmented(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, n: int = 40) -> VectorStore:
    monkeypatch.setattr(vectors, "SEGMENT_ROWS", 16)
    s = VectorStore(8, "m")
    s.add(keys_for(n), unit_rows(n))
    s.save(tmp_path)
    return s


def _meta(folder: Path) -> dict[str, Any]:
    meta: dict[str, Any] = json.loads((folder / "meta.json").read_text())
    return meta


def test_load_missing_or_inconsistent_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every file that disagrees with the record gives an empty store (everything is embedded
    again), never rows under the wrong keys."""
    assert len(VectorStore.load(tmp_path / "none", "m", dim=8)) == 0
    with pytest.raises(InvalidInputError, match="dim"):
        VectorStore.load(tmp_path / "none", "m")
    s = _segmented(tmp_path, monkeypatch)
    assert [e["rows"] for e in _meta(tmp_path)["segments"]] == [16, 16, 8]
    second = _meta(tmp_path)["segments"][1]["name"]
    assert len(VectorStore.load(tmp_path, "m")) == 40

    def attack(damage: Callable[[], object], named: str | None = "meta.json") -> None:
        """``named``: the file the store's ``damage`` names (None: no record of a store for
        this model is left, so nothing is damaged — there is none)."""
        again = VectorStore(8, "m")
        again.add(s.keys, s.rows)
        again.save(tmp_path)  # content-named: the same files and record again
        assert _meta(tmp_path)["segments"][1]["name"] == second
        assert len(VectorStore.load(tmp_path, "m")) == 40
        assert VectorStore.load(tmp_path, "m").damage is None
        damage()
        got = VectorStore.load(tmp_path, "m", dim=8)
        assert len(got) == 0
        if named is None:
            assert got.damage is None
        else:  # what search reports (not "no vectors made by the embedder")
            assert got.damage is not None and f"{tmp_path / named}:" in got.damage, got.damage

    keys_file, npy = tmp_path / f"{second}.keys", tmp_path / f"{second}.npy"
    attack(lambda: npy.unlink(), npy.name)
    attack(lambda: keys_file.unlink(), keys_file.name)
    attack(lambda: npy.write_bytes(b"garbage"), npy.name)
    attack(lambda: npy.write_bytes(b""), npy.name)  # (numpy's EOFError got out of load)
    attack(lambda: np.save(npy, unit_rows(15)), npy.name)  # a row short
    attack(lambda: np.save(npy, unit_rows(16).astype(np.float64)), npy.name)
    attack(lambda: npy.write_bytes(npy.read_bytes()[:-100]), npy.name)  # torn
    # A key edited, one dropped, one repeated from another segment: the keys digest differs.
    attack(lambda: keys_file.write_text(keys_file.read_text().replace("k0017", "x0017")))
    attack(lambda: keys_file.write_text(keys_file.read_text().split("\n", 1)[1]), keys_file.name)
    attack(lambda: keys_file.write_text(keys_file.read_text().replace("k0017", "k0000")))
    attack(lambda: keys_file.write_bytes(b"\xff\xfe" + keys_file.read_bytes()), keys_file.name)

    def reorder() -> None:
        meta = _meta(tmp_path)
        meta["segments"].reverse()
        (tmp_path / "meta.json").write_text(json.dumps(meta))

    def escape() -> None:
        meta = _meta(tmp_path)
        meta["segments"][0]["name"] = "../" + meta["segments"][0]["name"]
        (tmp_path / "meta.json").write_text(json.dumps(meta))

    def repeat() -> None:  # a key twice, with the digest forged to match
        meta = _meta(tmp_path)
        first = meta["segments"][0]["name"]
        text = (tmp_path / f"{first}.keys").read_text().replace("k0001", "k0000")
        (tmp_path / f"{first}.keys").write_text(text)
        keys = [k for e in meta["segments"] for k in
                (tmp_path / f"{e['name']}.keys").read_text().splitlines()]  # fmt: skip
        meta["keys_sha256"] = vectors.keys_digest(keys)
        (tmp_path / "meta.json").write_text(json.dumps(meta))

    attack(reorder)
    attack(escape)
    attack(repeat, "")  # (the folder itself: a key in two segments)
    attack(lambda: (tmp_path / "meta.json").write_text("{"), None)
    attack(lambda: (tmp_path / "meta.json").unlink(), None)


def test_a_save_writes_only_the_segments_that_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What DVC hashes, caches and pushes after one item changed: the segment that lost its
    rows and the last one, not the whole store; the other files keep their inode and mtime."""
    _segmented(tmp_path, monkeypatch, n=64)
    before = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in tmp_path.iterdir()}
    t = VectorStore.load(tmp_path, "m")
    assert t.segments == 4 and not t.unsaved
    keys = keys_for(64)
    assert t.prune([k for k in keys if k not in ("sha256:k0020", "sha256:k0021")]) == 2
    t.add(["sha256:new0", "sha256:new1"], unit_rows(2, seed=9))
    t.save(tmp_path)
    after = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in tmp_path.iterdir()}
    kept = {n for n in before if before[n] == after.get(n)}
    # Written: the segment that lost two rows, and a new last one for the two added (the last
    # one was full); the three others untouched (two files each).
    assert len(kept - {"meta.json"}) == 6
    assert len(set(after) - set(before)) == 4
    u = VectorStore.load(tmp_path, "m")
    want = [k for k in keys if k not in ("sha256:k0020", "sha256:k0021")]
    assert u.keys == [*want, "sha256:new0", "sha256:new1"]
    assert np.array_equal(u.get(["sha256:new1"]), unit_rows(2, seed=9)[1:])
    assert np.array_equal(u.get(want), unit_rows(64)[[int(k[-4:]) for k in want]])
    # Nothing changed: nothing written.
    assert not u.unsaved


def test_a_crash_before_the_record_leaves_the_old_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = _segmented(tmp_path, monkeypatch)
    listed = _files(tmp_path)
    s.prune(keys_for(30))
    s.add(["sha256:late"], unit_rows(1, seed=5))
    real = vectors.atomic_write

    def dies_at_the_record(path: Path, *a: Any, **kw: Any) -> bool:
        if path.name == "meta.json":
            raise KeyboardInterrupt
        return real(path, *a, **kw)

    monkeypatch.setattr(vectors, "atomic_write", dies_at_the_record)
    with pytest.raises(KeyboardInterrupt):
        s.save(tmp_path)
    assert set(listed) < set(_files(tmp_path))  # new segments there, the old ones kept
    old = VectorStore.load(tmp_path, "m")
    assert old.keys == keys_for(40) and np.array_equal(old.rows, unit_rows(40))
    monkeypatch.setattr(vectors, "atomic_write", real)
    s.save(tmp_path)
    new = VectorStore.load(tmp_path, "m")
    assert new.keys == [*keys_for(30), "sha256:late"]
    names = {e["name"] for e in _meta(tmp_path)["segments"]}
    assert _files(tmp_path) == sorted([f"{n}.{x}" for n in names for x in ("keys", "npy")]
                                      + ["meta.json"])  # fmt: skip


def test_format_1_folder_is_read_and_written_as_segments(tmp_path: Path) -> None:
    rows, keys = unit_rows(5), keys_for(5)
    np.save(tmp_path / "vectors.npy", rows)
    (tmp_path / "keys.json").write_text(json.dumps(keys))
    meta = {"format": 1, "model": "m", "dim": 8, "count": 5,
            "keys_sha256": vectors.keys_digest(keys)}  # fmt: skip
    (tmp_path / "meta.json").write_text(json.dumps(meta))
    s = VectorStore.load(tmp_path, "m")
    assert s.keys == keys and np.array_equal(s.rows, rows) and s.unsaved
    s.save(tmp_path)
    assert "vectors.npy" not in _files(tmp_path) and "keys.json" not in _files(tmp_path)
    t = VectorStore.load(tmp_path, "m")
    assert t.keys == keys and np.array_equal(t.rows, rows) and not t.unsaved
    (tmp_path / "keys.json").write_text(json.dumps(keys_for(5, prefix="x")))
    meta["keys_sha256"] = "sha256:0"
    (tmp_path / "meta.json").write_text(json.dumps(meta))
    assert len(VectorStore.load(tmp_path, "m")) == 0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_segmented_store_equals_one_matrix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """Random adds, replacements, prunes and save/load cycles: the rows, their order, get,
    take and search are those of one matrix kept the plain way; the segments stay few."""
    monkeypatch.setattr(vectors, "SEGMENT_ROWS", 12)
    rng = np.random.default_rng(seed)
    ref: dict[str, np.ndarray] = {}  # insertion order = row order
    s = VectorStore(8, "m")
    fresh = 0
    for step in range(60):
        op = rng.integers(4)
        if op <= 1:  # add new keys, sometimes with a replacement among them
            n = int(rng.integers(1, 30))
            keys = [f"sha256:n{fresh + i}" for i in range(n)]
            fresh += n
            if ref and rng.random() < 0.3:
                keys.append(str(rng.choice(list(ref))))
            rows = unit_rows(len(keys), seed=seed * 1000 + step)
            s.add(keys, rows)
            for k, r in zip(keys, rows, strict=True):
                ref[k] = r
        elif op == 2 and ref:  # prune a random share
            keep = [k for k in ref if rng.random() < 0.8]
            assert s.prune(keep) == len(ref) - len(keep)
            ref = {k: ref[k] for k in keep}
        else:
            s.save(tmp_path)
            s = VectorStore.load(tmp_path, "m")
            assert not s.unsaved
            assert s.segments <= 3 + len(ref) // 2
        assert s.keys == list(ref)
        if ref:
            matrix = np.stack(list(ref.values()))
            assert np.array_equal(s.rows, matrix)
            pick = rng.integers(0, len(ref), size=7)
            assert np.array_equal(s.take(pick), matrix[pick])
            assert np.array_equal(s.vector(int(pick[0])), matrix[pick[0]])
            q = unit_rows(1, seed=step)[0]
            for mask in (None, rng.random(len(ref)) < 0.2):
                assert [i for i, _ in s.search(q, 5, mask)] == brute(matrix, q, 5, mask)
            among = rng.integers(0, len(ref), size=9)
            got = s.search(q, 3, among=among)
            cand = np.unique(among)
            assert [i for i, _ in got] == [int(cand[j]) for j in brute(matrix[cand], q, 3, None)]


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


def test_daily_edits_keep_the_segments_few(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A year of one-item edits (a few rows pruned anywhere, a few added, saved each time):
    the store stays in about as many segments as a fresh save would make."""
    monkeypatch.setattr(vectors, "SEGMENT_ROWS", 16)
    rng = np.random.default_rng(7)
    s = VectorStore(8, "m")
    s.add(keys_for(160), unit_rows(160))
    s.save(tmp_path)
    most = 0
    for day in range(365):
        s = VectorStore.load(tmp_path, "m")
        keys = s.keys
        gone = set(rng.choice(keys, size=int(rng.integers(1, 6)), replace=False).tolist())
        s.prune([k for k in keys if k not in gone])
        s.add([f"sha256:d{day}-{i}" for i in range(len(gone))], unit_rows(len(gone), seed=day))
        s.save(tmp_path)
        most = max(most, s.segments)
    assert len(s) == 160
    assert most <= 2 * 160 // 16 + 2, most


def digest_keys(n: int, seed: int = 0) -> list[str]:
    """Keys as the index stage makes them (``sha256:`` and 64 hex digits), some ending in zero
    bytes (numpy drops an ``S32`` element's trailing zeros when it is indexed)."""
    rng = np.random.default_rng(seed)
    raw = [rng.bytes(32) for _ in range(n)]
    raw[: min(n, 3)] = [b"\0" * 32, b"\1" + b"\0" * 31, b"\xab" * 31 + b"\0"][: min(n, 3)]
    return ["sha256:" + r.hex() for r in raw]


def test_digest_keys_are_held_as_their_bytes(tmp_path: Path) -> None:
    keys = digest_keys(50)
    assert vectors.key_ids(keys).tobytes() == b"".join(bytes.fromhex(k[7:]) for k in keys)
    # Any other key (uppercase hex, another prefix, any text) is hashed, and keeps its text.
    other = ["sha256:" + "AB" * 32, "SHA256:" + "ab" * 32, "k0", "sha256:" + "ab" * 31]
    ids = vectors.key_ids(other)
    assert len(set(vectors._raw(ids))) == 4
    assert not set(vectors._raw(ids)) & {bytes.fromhex("ab" * 32)}
    s = VectorStore(8, "m")
    s.add(keys[:30] + other, unit_rows(34))
    s.add(keys[30:], unit_rows(20, seed=1))
    want = keys[:30] + other + keys[30:]
    assert s.keys == want and len(s) == 54
    assert s.keys_sha256() == vectors.keys_digest(want)
    for i, k in enumerate(want):
        assert k in s and s.row_of(k) == i
    assert "sha256:" + "ab" * 32 not in s  # the lowercase twin of an uppercase key
    assert s.missing([keys[0], "sha256:" + "cd" * 32, "k1", "k1"]) == ["sha256:" + "cd" * 32, "k1"]
    s.save(tmp_path)
    text = "".join((tmp_path / f"{e['name']}.keys").read_text() for e in
                   json.loads((tmp_path / "meta.json").read_text())["segments"])  # fmt: skip
    assert text == "".join(k + "\n" for k in want)  # the same files as a store of strings
    t = VectorStore.load(tmp_path, "m")
    assert t.keys == want and np.array_equal(t.rows, s.rows) and not t.unsaved
    assert t.rows_of(vectors.key_ids([want[3], "gone", want[31]])).tolist() == [3, -1, 31]
    assert t.prune([k for k in want if k not in other]) == 4
    assert t.keys == keys[:30] + keys[30:] and not t._other  # the other keys' texts let go


def test_store_against_a_model(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Random adds, replacements, prunes, saves and loads against a dict, with tiny segments
    and the sort order made again every few rows."""
    monkeypatch.setattr(vectors, "SEGMENT_ROWS", 8)
    monkeypatch.setattr(vectors, "_RECENT_ROWS", 3)
    rng = np.random.default_rng(7)
    pool = digest_keys(120, seed=3) + [f"note-{i}" for i in range(40)]
    model: dict[str, np.ndarray] = {}
    s = VectorStore(4, "m")
    for step in range(120):
        op = rng.integers(0, 10)
        if op < 6:
            pick = [pool[int(i)] for i in rng.integers(0, len(pool), int(rng.integers(1, 9)))]
            rows = unit_rows(len(pick), dim=4, seed=step)
            s.add(pick, rows)
            for k, r in zip(pick, rows, strict=True):
                model[k] = r
        elif op < 8:
            keep = [k for k in model if rng.random() < 0.8]
            assert s.prune(keep) == len(model) - len(keep)
            model = {k: model[k] for k in model if k in set(keep)}
        else:
            s.save(tmp_path)
            s = VectorStore.load(tmp_path, "m", dim=4)
        assert s.keys == list(model)
        assert s.keys_sha256() == vectors.keys_digest(model)
        if model:
            assert np.array_equal(s.rows, np.stack(list(model.values())))
            assert s.rows_of(vectors.key_ids(model)).tolist() == list(range(len(model)))
        assert s.missing(pool) == [k for k in pool if k not in model]


def test_a_key_twice_across_segments_loads_empty(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vectors, "SEGMENT_ROWS", 10)
    keys = digest_keys(20)
    s = VectorStore(8, "m")
    s.add(keys[:10], unit_rows(10))
    s.save(tmp_path)
    s.add(keys[10:], unit_rows(10, seed=1))
    s.save(tmp_path)
    meta = json.loads((tmp_path / "meta.json").read_text())
    second = meta["segments"][1]["name"]
    # Forge the second segment to repeat a key of the first, with the record made to match.
    text = (tmp_path / f"{second}.keys").read_text().replace(keys[10], keys[0])
    (tmp_path / f"{second}.keys").write_text(text)
    meta["keys_sha256"] = vectors.keys_digest([*keys[:10], keys[0], *keys[11:]])
    (tmp_path / "meta.json").write_text(json.dumps(meta))
    assert len(VectorStore.load(tmp_path, "m")) == 0


def test_a_loaded_store_holds_about_forty_bytes_a_key(tmp_path: Path) -> None:
    """The keys of a loaded store are ids and their order (the rows are memory-mapped); a list
    of key strings and a dict held ≈ 400 bytes a key."""
    import tracemalloc

    n = 60_000
    s = VectorStore(2, "m")
    s.add(digest_keys(n), unit_rows(n, dim=2))
    s.save(tmp_path)
    del s
    tracemalloc.start()
    try:
        t = VectorStore.load(tmp_path, "m")
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(t) == n and t.row_of(t.keys[-1]) == n - 1
    assert held / n < 60, held / n
    assert peak / n < 200, peak / n


def test_appends_grow_the_id_buffer_by_capacity_not_each_time() -> None:
    """Rows added a few at a time go into the room left behind the last segment's ids, as they
    do for its rows (a copy of every id on each add made a full build quadratic)."""
    s = VectorStore(4, "m")
    keys = digest_keys(300)
    replaced, prev = 0, None
    for i, k in enumerate(keys):
        s.add([k], unit_rows(1, dim=4, seed=i))
        if prev is not None and s._tail_ids is not prev:
            replaced += 1
        prev = s._tail_ids
    assert replaced <= 12, replaced  # grown by half again each time: ≈ log(300) times
    assert s.keys == keys and [s.row_of(k) for k in keys] == list(range(300))


def test_keys_sharing_their_first_bytes_are_each_found(tmp_path: Path) -> None:
    """A lookup searches the ids' first 8 bytes: keys that share them (sorted by the rest
    among themselves) are each found at their own row, after a reload too, and a key sharing
    them that is not stored is not found."""
    rng = np.random.default_rng(5)

    def key(head: str) -> str:
        return "sha256:" + head + "".join(rng.choice(list("0123456789abcdef"), 64 - len(head)))

    shared = [key("00000000deadbeef") for _ in range(40)]
    others = [key("") for _ in range(40)]
    keys = [k for pair in zip(shared, others, strict=True) for k in pair]
    rows = rng.standard_normal((len(keys), 8)).astype(np.float32)
    store = VectorStore(8, "m")
    store.add(keys, rows)
    store.save(tmp_path / "v")
    for s in (store, VectorStore.load(tmp_path / "v", "m")):
        got = s.rows_of(vectors.key_ids(keys))
        assert got.tolist() == list(range(len(keys)))
        absent = [key("00000000deadbeef"), key("00000000deadbef0"), key("")]
        assert (s.rows_of(vectors.key_ids(absent)) == -1).all()
        assert np.array_equal(s.vector(int(s.rows_of(vectors.key_ids([shared[7]]))[0])), rows[14])


@pytest.mark.parametrize("unsaved", [False, True])
def test_stored_rows_read_the_rows_asked_for_in_the_order_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unsaved: bool
) -> None:
    """The rows of a store in another order (the beliefs step's episode order), read from its
    segments as asked — a number, a slice, any array of numbers, repeats kept — never copied
    whole; what is not a row is refused."""
    _segmented(tmp_path, monkeypatch, n=40)
    store = VectorStore.load(tmp_path, "m")
    if unsaved:  # rows in memory beside the saved segments
        store.add(keys_for(5, "new"), unit_rows(5, seed=3))
    keys = keys_for(40) + (keys_for(5, "new") if unsaved else [])
    order = np.random.default_rng(4).permutation(len(keys))
    want = store.get([keys[i] for i in order])
    rows = vectors.stored_rows(store, store.rows_of(vectors.key_ids([keys[i] for i in order])))
    assert rows.shape == (len(keys), 8) and len(rows) == len(keys) and rows.ndim == 2
    assert np.array_equal(rows[3], want[3]) and np.array_equal(rows[-1], want[-1])
    assert np.array_equal(rows[10:30], want[10:30]) and rows[5:5].shape == (0, 8)
    pick = np.array([39, 3, 3, 0, 17])
    assert np.array_equal(rows[pick], want[pick])
    assert np.array_equal(rows[np.array([[1, 2], [39, 1]])], want[[[1, 2], [39, 1]]])
    for bad in (len(keys), -len(keys) - 1, np.array([0, len(keys)]), np.array([-1]),
                slice(0, 9, 2), np.array([True])):  # fmt: skip
        with pytest.raises(IndexError):
            rows[bad]
    with pytest.raises(NotFoundError):
        vectors.stored_rows(store, [0, len(store)])
    with pytest.raises(NotFoundError):
        vectors.stored_rows(store, [-1])
