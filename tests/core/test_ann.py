"""The vector lane above ``index.ann.threshold``: a FAISS IVF index proposes candidates, the
store scores them exactly (arkai.search.ann, arkai.ops.index.update_ann).

Below the threshold nothing changes (no ANN file, the exact scan, the same rankings); above
it the index is built, kept in step with the store incrementally (added and pruned keys), rebuilt
when too much was removed, and a damaged or stale file is refused by name — search then scans
exactly instead of answering from it.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from arkai.errors import InvalidInputError
from arkai.ops.index import DEFAULTS, update_ann
from arkai.search.ann import ANN_META, AnnError, AnnIndex, AnnSettings, key_ids, shard_of
from arkai.search.pipeline import Corpus, build_lexical, rank
from arkai.search.vectors import KeySnapshot, VectorStore

DIM = 48
N = 4000


def _unit(a: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    out: npt.NDArray[np.float32] = (a / np.linalg.norm(a, axis=-1, keepdims=True)).astype(
        np.float32
    )
    return out


def _vectors(n: int, seed: int = 0) -> npt.NDArray[np.float32]:
    """Clustered unit vectors (200 topics plus noise), like embeddings of related passages."""
    rng = np.random.default_rng(seed)
    centers = _unit(rng.standard_normal((200, DIM), dtype=np.float32))
    pick = rng.integers(0, 200, n)
    return _unit(centers[pick] + 0.12 * rng.standard_normal((n, DIM), dtype=np.float32))


def _keys(n: int, prefix: str) -> list[str]:
    import hashlib

    return ["sha256:" + hashlib.sha256(f"{prefix}{i}".encode()).hexdigest() for i in range(n)]


def _hashed_store(n: int = N, seed: int = 0, prefix: str = "a") -> VectorStore:
    store = VectorStore(DIM, "test-model")
    store.add(_keys(n, prefix), _vectors(n, seed))
    return store


def _shard_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("ann-*.faiss"))


def _queries(m: int = 40) -> npt.NDArray[np.float32]:
    return _vectors(m, seed=99)


def _recall_at_10(ann: AnnIndex, store: VectorStore) -> float:
    corpus_exact = Corpus(None, store)
    corpus_ann = Corpus(None, store, ann=ann)
    hit = total = 0
    for q in _queries():
        exact = rank(corpus_exact, "", mode="vector", query_vec=q, answer_floor=-1.0)
        approx = rank(corpus_ann, "", mode="vector", query_vec=q, answer_floor=-1.0)
        want = {r.doc for r in exact.ranked[:10]}
        hit += len(want & {r.doc for r in approx.ranked[:10]})
        total += len(want)
    return hit / total


def test_defaults_and_params_agree() -> None:
    import yaml

    root = Path(__file__).resolve().parents[2]
    params = yaml.safe_load((root / "params.yaml").read_text())["index"]["ann"]
    assert params == DEFAULTS["ann"]
    assert AnnSettings.from_params(params) == AnnSettings()
    with pytest.raises(Exception, match=r"unknown `index\.ann` keys"):
        AnnSettings.from_params({"treshold": 5})


def test_below_threshold_exact_scan_unchanged(tmp_path: Path) -> None:
    store = _hashed_store()
    store.save(tmp_path)
    # An index left from a larger library is removed once the store is below the threshold.
    AnnIndex.build(store, AnnSettings(threshold=1)).save(tmp_path, store)
    assert update_ann(tmp_path, store, store.snapshot(), {"threshold": N + 1}) == "removed"
    assert not _shard_files(tmp_path) and not (tmp_path / ANN_META).exists()
    assert update_ann(tmp_path, store, store.snapshot(), {"threshold": N + 1}) is None
    texts = [f"word{i % 37} other{i % 11}" for i in range(N)]
    corpus = Corpus(build_lexical([("", t) for t in texts]), store)
    for q in _queries(8):
        got = rank(corpus, "word3 other5", query_vec=q)
        hits = store.search(q, 100)
        vec = rank(corpus, "", mode="vector", query_vec=q, answer_floor=-1.0, min_similarity=-1)
        assert [(r.doc, r.score) for r in vec.ranked] == hits  # the exact scan, bit for bit
        assert got.ranked  # hybrid still fuses over the exact lane
        for r in got.ranked:  # every cosine fusion saw is the row's own dot product, bit for bit
            assert r.lanes["vector"]["score"] == float(store.rows[r.doc] @ q)


def test_above_threshold_ann_used_with_recall(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _hashed_store()
    assert update_ann(tmp_path, store, KeySnapshot.empty(), {"threshold": 1000}) == "built"
    ann = AnnIndex.load(tmp_path, store.snapshot(), DIM)
    assert ann.count == N and ann.meta["nlist"] == AnnSettings().lists_for(N)
    calls: list[object] = []
    plain = VectorStore.search

    def spy(self: VectorStore, *a: object, **kw: object) -> object:
        calls.append(kw.get("among"))
        return plain(self, *a, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(VectorStore, "search", spy)
    assert _recall_at_10(ann, store) >= 0.95
    # The ANN really is used: every exact-corpus query scans all rows (among=None); every
    # ANN-corpus query scores only the index's candidates, with no fallback scan.
    assert [c is None for c in calls] == [True, False] * len(_queries())
    monkeypatch.undo()
    # Candidates are scored exactly: a few proposed rows get those rows' exact scores.
    q = _queries(1)[0]
    few = ann.candidates(q, 5, store)
    assert 0 < len(few) <= 5
    scored = store.search(q, 100, among=few)
    assert sorted(r for r, _ in scored) == sorted(few.tolist())
    for r, s in scored:
        assert s == float(store.rows[r] @ q) or abs(s - float(store.rows[r] @ q)) < 1e-6


def test_incremental_add_and_prune_then_rebuild(tmp_path: Path) -> None:
    store = _hashed_store()
    assert update_ann(tmp_path, store, KeySnapshot.empty(), {"threshold": 1000}) == "built"
    old = store.snapshot()
    assert update_ann(tmp_path, store, old, {"threshold": 1000}) == "kept"
    # 100 new keys, 300 pruned (7.5 %: under the rebuild fraction).
    new_keys = _keys(100, "new")
    new_vecs = _vectors(100, seed=7)
    store.add(new_keys, new_vecs)
    gone = set(store.keys[:300])
    store.prune([k for k in store.keys if k not in gone])
    assert update_ann(tmp_path, store, old, {"threshold": 1000}) == "updated"
    ann = AnnIndex.load(tmp_path, store.snapshot(), DIM)
    assert ann.count == len(store) == N - 200
    assert ann.meta["removed_since_training"] == 300
    corpus = Corpus(None, store, ann=ann)
    for key, vec in zip(new_keys[:10], new_vecs[:10], strict=True):
        got = rank(corpus, "", mode="vector", query_vec=vec, answer_floor=-1.0)
        assert store.keys[got.ranked[0].doc] == key  # an added vector is found
    gone_rows = ann.candidates(_queries(1)[0], len(store), store)
    assert not {store.keys[r] for r in gone_rows} & gone  # a pruned key never comes back
    assert _recall_at_10(ann, store) >= 0.95
    # Pruning past the rebuild fraction (20 % of what it was trained on) retrains.
    before = store.snapshot()
    store.prune(store.keys[: len(store) - 900])
    assert update_ann(tmp_path, store, before, {"threshold": 1000}) == "rebuilt"
    ann = AnnIndex.load(tmp_path, store.snapshot(), DIM)
    assert ann.meta["removed_since_training"] == 0 and ann.meta["trained_count"] == len(store)


def test_colliding_key_ids_are_refused() -> None:
    store = VectorStore(DIM, "test-model")
    store.add(["sha256:" + "a" * 15 + "0" * 49, "sha256:" + "a" * 15 + "1" * 49], _vectors(2))
    with pytest.raises(InvalidInputError, match="first 60 bits"):
        AnnIndex.build(store, AnnSettings(threshold=1))


@pytest.mark.parametrize("damage", ["flip", "truncate", "stale-meta", "no-file"])
def test_damaged_ann_is_named_and_rebuilt(tmp_path: Path, damage: str) -> None:
    store = _hashed_store()
    assert update_ann(tmp_path, store, KeySnapshot.empty(), {"threshold": 1000}) == "built"
    (path,) = _shard_files(tmp_path)
    data = bytearray(path.read_bytes())
    if damage == "flip":
        data[len(data) // 2] ^= 0xFF
        path.write_bytes(bytes(data))
    elif damage == "truncate":
        path.write_bytes(bytes(data[: len(data) // 3]))
    elif damage == "stale-meta":
        meta = json.loads((tmp_path / ANN_META).read_text())
        meta["keys_sha256"] = "sha256:" + "0" * 64
        (tmp_path / ANN_META).write_text(json.dumps(meta))
    else:
        path.unlink()
    with pytest.raises(AnnError) as err:
        AnnIndex.load(tmp_path, store.snapshot(), DIM)
    named = ANN_META if damage == "stale-meta" else path.name
    assert str(tmp_path / named) in str(err.value)
    assert update_ann(tmp_path, store, store.snapshot(), {"threshold": 1000}) == "rebuilt"
    assert AnnIndex.load(tmp_path, store.snapshot(), DIM).count == N


def test_search_refuses_a_damaged_ann_and_scans_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from arkai.ops import Repo
    from arkai.ops.search import search
    from arkai.search import embed
    from tests.core.test_search_golden import _queries as golden_queries
    from tests.core.test_search_golden import _QueryEmbedder, _write_index

    fake = _QueryEmbedder()
    monkeypatch.setattr(embed, "get_embedder", lambda name="default", **kw: fake)
    _write_index(tmp_path)
    text = golden_queries()[0][0]
    exact = search(Repo.at(tmp_path), text, k=10, explain=True).to_dict()
    folder = tmp_path / "index" / "vectors"
    store = VectorStore.load(folder, "golden")
    assert update_ann(folder, store, KeySnapshot.empty(), {"threshold": 100}) == "built"
    (ann_path,) = _shard_files(folder)
    data = bytearray(ann_path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    ann_path.write_bytes(bytes(data))
    (tmp_path / "index" / "manifest.json").touch()  # a new index for the process cache
    from arkai.ops import search as search_mod

    search_mod._CACHE.clear()
    got = search(Repo.at(tmp_path), text, k=10, explain=True).to_dict()
    warnings = got.pop("warnings", [])
    exact.pop("warnings", None)
    assert any(str(ann_path) in w and "exact vector scan" in w for w in warnings), warnings
    assert got == exact


def test_saved_file_is_faiss_serialisation_and_kept_without_reading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ann.faiss`` is written through FAISS's writer a buffer at a time (not copied into one
    array first), byte for byte what ``serialize_index`` makes; an unchanged store keeps the
    index with its file hashed, not read into FAISS; a build reads the store's rows a block at
    a time, never the whole matrix."""
    import faiss

    from arkai.search import ann as ann_mod

    store = _hashed_store(25_000)
    monkeypatch.setattr(ann_mod, "ADD_ROWS", 4000)
    monkeypatch.setattr(VectorStore, "rows", property(lambda self: pytest.fail("whole matrix")))
    assert update_ann(tmp_path, store, KeySnapshot.empty(), {"threshold": 1000}) == "built"
    ann = AnnIndex.load(tmp_path, store.snapshot(), DIM)
    (path,) = _shard_files(tmp_path)
    data = path.read_bytes()
    assert len(data) > 1 << 20  # more than one of the writer's buffers
    assert data == faiss.serialize_index(ann.shards[0]).tobytes()
    monkeypatch.setattr(faiss, "read_index", lambda *a: pytest.fail("read into FAISS"))
    assert update_ann(tmp_path, store, store.snapshot(), {"threshold": 1000}) == "kept"
    # A changed search setting is written into the record (the index is read to do it).
    monkeypatch.undo()
    assert update_ann(tmp_path, store, store.snapshot(), {"threshold": 1000, "nprobe": 7}) == (
        "updated"
    )
    assert AnnIndex.load(tmp_path, store.snapshot(), DIM).meta["nprobe"] == 7


def _keys_in_shard(shard: int, bits: int, count: int, prefix: str) -> list[str]:
    out: list[str] = []
    i = 0
    while len(out) < count:
        key = _keys(1, f"{prefix}{i}-")[0]
        if int(shard_of(key_ids(store_ids([key])), bits)[0]) == shard:
            out.append(key)
        i += 1
    return out


def store_ids(keys: list[str]) -> npt.NDArray[np.bytes_]:
    from arkai.search.vectors import key_ids as vector_ids

    return vector_ids(keys)


def test_an_update_reads_and_writes_only_the_shards_its_keys_fall_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import faiss

    from arkai.search import ann as ann_mod

    monkeypatch.setattr(ann_mod, "SHARD_ROWS", 1000)
    store = _hashed_store()
    assert update_ann(tmp_path, store, KeySnapshot.empty(), {"threshold": 1000}) == "built"
    meta = json.loads((tmp_path / ANN_META).read_text())
    assert meta["shard_bits"] == 2 and len(_shard_files(tmp_path)) == 4
    assert sum(e["count"] for e in meta["shards"]) == N
    before = [e["file"] for e in meta["shards"]]
    old = store.snapshot()
    # Three keys added and two pruned, all in shard 1.
    new = _keys_in_shard(1, 2, 3, "added")
    gone = [k for k in store.keys if int(shard_of(key_ids(store_ids([k])), 2)[0]) == 1][:2]
    store.prune([k for k in store.keys if k not in gone])
    store.add(new, _vectors(3, seed=5))
    reads: list[str] = []
    plain = faiss.read_index
    monkeypatch.setattr(faiss, "read_index", lambda p, *a: reads.append(p) or plain(p, *a))
    assert update_ann(tmp_path, store, old, {"threshold": 1000}) == "updated"
    assert reads == [str(tmp_path / before[1])]  # the one shard the keys fall in
    monkeypatch.undo()
    after = [e["file"] for e in json.loads((tmp_path / ANN_META).read_text())["shards"]]
    assert after[0] == before[0] and after[2:] == before[2:] and after[1] != before[1]
    assert [p.name for p in _shard_files(tmp_path)] == sorted(after)  # the old shard 1 removed
    ann = AnnIndex.load(tmp_path, store.snapshot(), DIM)
    assert ann.count == len(store) == N + 1
    corpus = Corpus(None, store, ann=ann)
    for key, vec in zip(new, _vectors(3, seed=5), strict=True):
        got = rank(corpus, "", mode="vector", query_vec=vec, answer_floor=-1.0)
        assert store.keys[got.ranked[0].doc] == key
    assert _recall_at_10(ann, store) >= 0.95


def test_shards_propose_what_one_index_proposes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each shard's k nearest together hold the k nearest of one index over the same lists."""
    from arkai.search import ann as ann_mod

    store = _hashed_store()
    one = AnnIndex.build(store, AnnSettings(threshold=1))
    monkeypatch.setattr(ann_mod, "SHARD_ROWS", 500)
    eight = AnnIndex.build(store, AnnSettings(threshold=1))
    assert len(one.shards) == 1 and len(eight.shards) == 8
    assert eight.count == one.count == N
    held = total = 0
    for q in _queries(30):
        want = set(one.candidates(q, 20, store).tolist())
        got = set(eight.candidates(q, 20, store).tolist())
        held += len(want & got)
        total += len(want)
    assert held / total >= 0.98, held / total


def test_a_format_1_index_is_built_again(tmp_path: Path) -> None:
    store = _hashed_store()
    (tmp_path / "ann.faiss").write_bytes(b"an index of format 1")
    (tmp_path / ANN_META).write_text(json.dumps({"format": 1, "engine": "faiss-ivf-sq8"}))
    assert update_ann(tmp_path, store, store.snapshot(), {"threshold": 1000}) == "rebuilt"
    assert not (tmp_path / "ann.faiss").exists() and len(_shard_files(tmp_path)) == 1
    assert AnnIndex.load(tmp_path, store.snapshot(), DIM).count == N


def test_build_files_writes_what_build_and_save_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stage writes each shard as it is made (one held at a time): the same files, byte
    for byte (they are named by their content), as building whole and saving."""
    from arkai.search import ann as ann_mod

    monkeypatch.setattr(ann_mod, "SHARD_ROWS", 1000)
    store = _hashed_store()
    AnnIndex.build_files(tmp_path / "a", store, AnnSettings(threshold=1))
    (tmp_path / "b").mkdir()
    AnnIndex.build(store, AnnSettings(threshold=1)).save(tmp_path / "b", store)
    a, b = _shard_files(tmp_path / "a"), _shard_files(tmp_path / "b")
    assert len(a) == 4 and [p.name for p in a] == [p.name for p in b]
    assert (tmp_path / "a" / ANN_META).read_text() == (tmp_path / "b" / ANN_META).read_text()


@pytest.mark.parametrize(
    "forge",
    ["../outside.faiss", "ann-0.faiss", "missing-shard", "count", "bits"],
)
def test_a_forged_shard_list_is_refused_by_name(tmp_path: Path, forge: str) -> None:
    """``ann.json`` names its shard files by content digest only (no path leaves the folder),
    lists exactly ``2 ** shard_bits`` of them, and their counts add up."""
    store = _hashed_store()
    assert update_ann(tmp_path, store, KeySnapshot.empty(), {"threshold": 1000}) == "built"
    meta = json.loads((tmp_path / ANN_META).read_text())
    if forge == "count":
        meta["shards"][0]["count"] += 1
    elif forge == "bits":
        meta["shard_bits"] = 1
    elif forge == "missing-shard":
        meta["shards"] = []
    else:
        meta["shards"][0]["file"] = forge
    (tmp_path / ANN_META).write_text(json.dumps(meta))
    with pytest.raises(AnnError, match="list of shards") as err:
        AnnIndex.load(tmp_path, store.snapshot(), DIM)
    assert str(tmp_path / ANN_META) in str(err.value)
    assert update_ann(tmp_path, store, store.snapshot(), {"threshold": 1000}) == "rebuilt"
    assert AnnIndex.load(tmp_path, store.snapshot(), DIM).count == N
