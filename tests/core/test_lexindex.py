"""The lexical lane above ``index.lexical.threshold``: a real tantivy index proposes candidates,
the BM25 matrix scores them exactly (arkai.search.lexindex)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tantivy
import yaml

from arkai.errors import InvalidInputError
from arkai.search.bm25 import BM25Index
from arkai.search.lexindex import (
    DOCS_FILE,
    ENGINE_DIR,
    ENGINE_META,
    EngineError,
    LexicalEngine,
    LexicalSettings,
    exact_scores,
    update_engine,
)
from arkai.search.pipeline import Corpus, rank
from arkai.search.termcounts import encode_segment
from arkai.search.text import tokenize

N = 600
#: Overlap@10 of the engine lane with the exact lane measured on this query set: every query's
#: top 10 identical (docs/index-format.md gives the same at 500,000 synthetic chunks).
OVERLAP_AT_10 = 1.0


def _texts(n: int = N, seed: int = 0) -> list[str]:
    """Zipf-like words and lengths from 3 to 400 tokens (tantivy stores long documents'
    lengths approximately: the candidates must still contain the exact top)."""
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(500)]
    weights = [1.0 / (i + 1) for i in range(len(vocab))]
    out = []
    for _ in range(n):
        length = int(min(400, 3 + rng.paretovariate(1.2) * 10))
        out.append(" ".join(rng.choices(vocab, weights, k=length)))
    return out


def _queries(m: int = 60) -> list[str]:
    rng = random.Random(1)
    return [
        " ".join(f"w{int(rng.paretovariate(0.8)) % 500}" for _ in range(rng.randint(1, 6)))
        for _ in range(m)
    ] + ["w3 w3 w17", "nothing-here", "w499"]


def _segments(texts: list[str]) -> list[bytes]:
    toks = [tokenize(t) for t in texts]
    return [encode_segment(toks[i : i + 37]) for i in range(0, len(toks), 37)]


def _parts(segs: list[bytes]) -> tuple[list[str], Any]:
    """Parts named by their place and content, as the index stage names its items by ID and
    inputs key."""
    names = [f"p{i} {hashlib.sha256(seg).hexdigest()[:16]}" for i, seg in enumerate(segs)]
    return names, segs.__getitem__


def _built(folder: Path, texts: list[str], digest: str = "sha256:a") -> BM25Index:
    bm = BM25Index.build(texts)
    bm.save(folder)
    segs = _segments(texts)
    assert update_engine(folder, digest, bm.n_docs, {"threshold": 100}, *_parts(segs)) == "built"
    return bm


def test_defaults_and_params_agree() -> None:
    root = Path(__file__).resolve().parents[2]
    for path in (root / "params.yaml", root / "src/arkai/scaffold/params.yaml"):
        params = yaml.safe_load(path.read_text())["index"]["lexical"]
        assert LexicalSettings.from_params(params) == LexicalSettings()
    assert LexicalSettings.from_params(None) == LexicalSettings()
    with pytest.raises(Exception, match=r"unknown `index\.lexical` keys"):
        LexicalSettings.from_params({"treshold": 5})
    with pytest.raises(Exception, match="candidates >= 1"):
        LexicalSettings.from_params({"candidates": 0})
    for bad in (0, 1.5, "x"):
        with pytest.raises(InvalidInputError, match=r"rebuild_fraction|numbers"):
            LexicalSettings.from_params({"rebuild_fraction": bad})


def test_below_threshold_no_engine(tmp_path: Path) -> None:
    texts = _texts(50)
    BM25Index.build(texts).save(tmp_path)
    segs = _segments(texts)
    assert update_engine(tmp_path, "sha256:a", 50, {"threshold": 51}, *_parts(segs)) is None
    assert not (tmp_path / ENGINE_META).exists() and not (tmp_path / ENGINE_DIR).exists()
    assert update_engine(tmp_path, "sha256:a", 50, {"threshold": 50}, *_parts(segs)) == "built"
    assert update_engine(tmp_path, "sha256:a", 50, {"threshold": 51}, *_parts(segs)) == "removed"
    assert not (tmp_path / ENGINE_META).exists() and not (tmp_path / ENGINE_DIR).exists()


def test_engine_used_and_agrees_with_the_exact_lane(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts = _texts()
    bm = _built(tmp_path, texts)
    engine = LexicalEngine.load(tmp_path, bm, "sha256:a")
    assert engine.count == N and engine.meta["n_docs"] == N
    exact = {q: rank(Corpus(bm), q, mode="lexical", depth=100) for q in _queries()}
    calls: list[str] = []

    def spy(self: BM25Index, *a: Any, **kw: Any) -> Any:
        calls.append("scores")
        raise AssertionError("the exact lane ran")

    monkeypatch.setattr(BM25Index, "scores", spy)
    fast = Corpus(bm, engine=engine)
    hits = total = 0
    for q, want in exact.items():
        got = rank(fast, q, mode="lexical", depth=100)
        top_w, top_g = [r.doc for r in want.ranked[:10]], [r.doc for r in got.ranked[:10]]
        hits += len(set(top_w) & set(top_g))
        total += len(top_w)
        # The candidates' scores are the exact lane's, bit for bit.
        got_scores = {r.doc: r.score for r in got.ranked}
        assert all(got_scores[r.doc] == r.score for r in want.ranked if r.doc in got_scores)
    assert not calls
    assert total and hits / total >= OVERLAP_AT_10
    # Ranked lists at depth 100 agree too (the candidates are 2 x depth).
    for q, want in exact.items():
        got = rank(fast, q, mode="lexical", depth=100)
        assert [(r.doc, r.score) for r in got.ranked] == [(r.doc, r.score) for r in want.ranked]


def test_exact_scores_match_the_matrix() -> None:
    texts = _texts(300)
    bm = BM25Index.build(texts)
    docs = [*range(0, 300, 7), 299]
    for q in _queries(20):
        weights = bm.term_weights(q)
        want = bm.scores(q)[docs].tolist()
        assert exact_scores(bm, weights, docs) == want


def test_filters_agree_or_fall_back(tmp_path: Path) -> None:
    texts = _texts()
    bm = _built(tmp_path, texts)
    engine = LexicalEngine.load(tmp_path, bm, "sha256:a")
    half = np.asarray([random.Random(i).random() < 0.5 for i in range(N)], dtype=bool)
    for q in _queries(20):
        want = rank(Corpus(bm), q, mode="lexical", depth=50, mask=half)
        got = rank(Corpus(bm, engine=engine), q, mode="lexical", depth=50, mask=half)
        assert [(r.doc, r.score) for r in got.ranked] == [(r.doc, r.score) for r in want.ranked]
    few = np.zeros(N, dtype=bool)
    few[:10] = True  # 1 in 60 allowed: beyond the oversampling, the exact lane answers
    assert engine.search(bm, "w1 w2", 10, few) is None
    want = rank(Corpus(bm), "w1 w2", mode="lexical", mask=few)
    got = rank(Corpus(bm, engine=engine), "w1 w2", mode="lexical", mask=few)
    assert [(r.doc, r.score) for r in got.ranked] == [(r.doc, r.score) for r in want.ranked]


def test_ties_ranked_by_document_whatever_order_the_engine_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts = ["w1 w2"] * 150 + _texts(150) + ["w1 w2"] * 150
    bm = _built(tmp_path, texts)
    engine = LexicalEngine.load(tmp_path, bm, "sha256:a")
    real = LexicalEngine.candidates
    monkeypatch.setattr(LexicalEngine, "candidates", lambda self, t, k: real(self, t, k)[::-1])
    want = rank(Corpus(bm), "w1 w2", mode="lexical", depth=40)
    got = rank(Corpus(bm, engine=engine), "w1 w2", mode="lexical", depth=40)
    assert [(r.doc, r.score) for r in got.ranked] == [(r.doc, r.score) for r in want.ranked]


def _flip(path: Path) -> None:
    """One byte of ``path`` changed, written as a new file put in its place: tantivy maps its
    files into memory, and rewriting a mapped file in place (truncate, then write) can kill
    the process with SIGBUS if an engine loaded earlier still maps it."""
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    tmp = path.with_name(path.name + ".flip")
    tmp.write_bytes(bytes(data))
    os.replace(tmp, path)


@pytest.mark.parametrize("damage", ["segment", "docmap", "record", "missing", "extra"])
def test_damaged_engine_is_named_and_rebuilt(tmp_path: Path, damage: str) -> None:
    texts = _texts(300)
    bm = _built(tmp_path, texts)
    target = tmp_path / ENGINE_DIR
    if damage == "segment":
        victim = max(
            (p for p in target.iterdir() if p.suffix == ".idx"), key=lambda p: p.stat().st_size
        )
        _flip(victim)
        named = str(victim)
    elif damage == "docmap":
        _flip(target / DOCS_FILE)
        named = str(target / DOCS_FILE)
    elif damage == "record":
        (tmp_path / ENGINE_META).write_text("{not json")
        named = str(tmp_path / ENGINE_META)
    elif damage == "missing":
        next(p for p in target.iterdir() if p.suffix == ".term").unlink()
        named = str(target)
    else:
        (target / "stray.bin").write_bytes(b"x")
        named = str(target)
    with pytest.raises(EngineError) as err:
        LexicalEngine.load(tmp_path, bm, "sha256:a")
    assert named in str(err.value)
    segs = _segments(texts)
    assert update_engine(tmp_path, "sha256:a", 300, {"threshold": 100}, *_parts(segs)) == "rebuilt"
    LexicalEngine.load(tmp_path, bm, "sha256:a")  # intact again


def test_stale_engine_refused_then_rebuilt_when_chunks_change(tmp_path: Path) -> None:
    texts = _texts(300)
    _built(tmp_path, texts)
    assert update_engine(tmp_path, "sha256:a", 300, {"threshold": 100}, *_parts([])) == "kept"
    # The chunks change: a new BM25 index, the old engine is stale.
    new_texts = texts[:250] + _texts(80, seed=9)
    bm = BM25Index.build(new_texts)
    bm.save(tmp_path)
    with pytest.raises(EngineError, match="built for other chunks"):
        LexicalEngine.load(tmp_path, bm, "sha256:b")
    # Same digest claimed, other documents (a record that lies): the counts give it away.
    with pytest.raises(EngineError, match="other chunks"):
        LexicalEngine.load(tmp_path, bm, "sha256:a")
    segs = _segments(new_texts)
    assert update_engine(tmp_path, "sha256:b", 330, {"threshold": 100}, *_parts(segs)) == "rebuilt"
    engine = LexicalEngine.load(tmp_path, bm, "sha256:b")
    assert json.loads((tmp_path / ENGINE_META).read_text())["chunks"] == "sha256:b"
    for q in _queries(15):
        want = rank(Corpus(bm), q, mode="lexical", depth=20)
        got = rank(Corpus(bm, engine=engine), q, mode="lexical", depth=20)
        assert [(r.doc, r.score) for r in got.ranked] == [(r.doc, r.score) for r in want.ranked]


def test_engine_over_other_documents_of_the_same_count_is_refused(tmp_path: Path) -> None:
    """A record whose digest and count match but whose engine indexes other texts."""
    _built(tmp_path, _texts(300))
    other = BM25Index.build(_texts(300, seed=4))
    with pytest.raises(EngineError, match="documents there"):
        LexicalEngine.load(tmp_path, other, "sha256:a")


def test_golden_rankings_unchanged_with_the_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pinned rankings of every mode, mask and fusion (tests/core/test_search_golden.py)
    come out the same when the lexical lane takes its candidates from the engine."""
    from tests.core import test_search_golden as golden

    def with_engine(lexical: BM25Index, *rest: Any, **kw: Any) -> Corpus:
        texts, _, _ = golden._corpus()
        lexical.save(tmp_path)
        segs = _segments(texts)
        update_engine(tmp_path, "sha256:g", lexical.n_docs, {"threshold": 1}, *_parts(segs))
        return Corpus(lexical, *rest, engine=LexicalEngine.load(tmp_path, lexical, "sha256:g"),
                      **kw)  # fmt: skip

    monkeypatch.setattr(golden, "Corpus", with_engine)
    golden._compare("rank", golden._ranking_cases())


def test_search_uses_the_engine_and_refuses_a_damaged_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from arkai.ops import Repo
    from arkai.ops import search as search_mod
    from arkai.search import embed
    from tests.core import test_search_golden as golden

    fake = golden._QueryEmbedder()
    monkeypatch.setattr(embed, "get_embedder", lambda name="default", **kw: fake)
    golden._write_index(tmp_path)
    text = golden._queries()[0][0]
    search_mod._CACHE.clear()
    exact = search_mod.search(Repo.at(tmp_path), text, k=10, explain=True).to_dict()
    folder = tmp_path / "index" / "lexical"
    texts, _, _ = golden._corpus()
    segs = _segments(texts)
    assert (
        update_engine(folder, "sha256:g", len(texts), {"threshold": 100}, *_parts(segs)) == "built"
    )
    manifest_path = tmp_path / "index" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest_path.write_text(json.dumps({**manifest, "lexical": {"chunks": "sha256:g"}}))
    search_mod._CACHE.clear()
    loads: list[int] = []
    real_load = LexicalEngine.load.__func__  # type: ignore[attr-defined]

    def counting(cls: type[LexicalEngine], *a: Any, **kw: Any) -> LexicalEngine:
        loads.append(1)
        out: LexicalEngine = real_load(cls, *a, **kw)
        return out

    monkeypatch.setattr(LexicalEngine, "load", classmethod(counting))
    got = search_mod.search(Repo.at(tmp_path), text, k=10, explain=True).to_dict()
    assert loads and not got.pop("warnings", None)
    exact.pop("warnings", None)
    assert got == exact
    # Damaged: refused with a warning naming the file, the exact lane answers the same.
    victim = max((folder / ENGINE_DIR).iterdir(), key=lambda p: p.stat().st_size)
    _flip(victim)
    manifest_path.touch()
    search_mod._CACHE.clear()
    got = search_mod.search(Repo.at(tmp_path), text, k=10, explain=True).to_dict()
    warnings = got.pop("warnings", [])
    assert any(str(victim) in w and "exact lexical lane" in w for w in warnings), warnings
    assert got == exact


def test_the_stage_checks_a_kept_engine_without_reading_the_weights(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keeping an engine checks it against the index's shape — its documents, terms and
    their document frequencies, read from ``bm25.json`` and the row pointers alone — never
    the weights (the whole matrix: ≈ 560 MB at 100,000 items). The shape is the loaded
    index's; a BM25 index whose frequencies differ from the engine's is still refused."""
    from arkai.search import bm25 as bm25_module

    texts = _texts(300)
    _built(tmp_path, texts)
    bm = BM25Index.load(tmp_path)
    shape = bm25_module.load_shape(tmp_path)
    assert (shape.n_docs, shape.terms) == (bm.shape().n_docs, bm.shape().terms)
    assert np.array_equal(shape.df, bm.shape().df)

    def no_weights(*a: object, **k: object) -> None:
        raise AssertionError("the weights were read")

    monkeypatch.setattr(BM25Index, "load", no_weights)
    assert update_engine(tmp_path, "sha256:a", 300, {"threshold": 100}, *_parts([])) == "kept"
    monkeypatch.undo()
    # Same documents, one term's frequency different: refused by the shape as by the index.
    other = BM25Index.build([t if i else t + " zyxwv" for i, t in enumerate(texts)])
    other.save(tmp_path)
    with pytest.raises(EngineError, match=r"zyxwv|documents there"):
        LexicalEngine.load(tmp_path, bm25_module.load_shape(tmp_path), "sha256:a")
    (tmp_path / "bm25.npz").write_bytes(b"not an npz")
    with pytest.raises(InvalidInputError, match="cannot read the BM25 index"):
        bm25_module.load_shape(tmp_path)


# -- in place -------------------------------------------------------------------------------


def _library(groups: list[tuple[str, list[str]]]) -> tuple[list[str], list[str], list[bytes]]:
    """Items as the index stage gives them to the engine: named by ID and a digest of their
    content (its inputs key), their documents' token segments; and all texts in order."""
    names = [f"{i} {hashlib.sha256(''.join(g).encode()).hexdigest()[:12]}" for i, g in groups]
    segs = [encode_segment([tokenize(t) for t in g]) for _, g in groups]
    return names, [t for _, g in groups for t in g], segs


def _groups(n: int = 40, size: int = 15) -> list[tuple[str, list[str]]]:
    texts = _texts(n * size)
    return [(f"item{k}", texts[k * size : (k + 1) * size]) for k in range(n)]


def _run(
    folder: Path, groups: list[tuple[str, list[str]]], digest: str,
    reads: list[int] | None = None, **params: Any,
) -> tuple[str | None, BM25Index]:  # fmt: skip
    names, texts, segs = _library(groups)
    bm = BM25Index.build(texts)
    bm.save(folder)

    def segment(i: int) -> bytes:
        if reads is not None:
            reads.append(i)
        return segs[i]

    how = update_engine(folder, digest, bm.n_docs, {"threshold": 100, **params}, names, segment)
    return how, bm


def _agrees(folder: Path, bm: BM25Index, digest: str) -> LexicalEngine:
    engine = LexicalEngine.load(folder, bm, digest)
    assert engine.count == bm.n_docs
    for q in _queries(30):
        want = rank(Corpus(bm), q, mode="lexical", depth=20)
        got = rank(Corpus(bm, engine=engine), q, mode="lexical", depth=20)
        assert [(r.doc, r.score) for r in got.ranked] == [(r.doc, r.score) for r in want.ranked]
    return engine


def _placed(engine: LexicalEngine, groups: list[tuple[str, list[str]]]) -> None:
    """Each item's documents (found by the part they were added with) sit at its positions."""
    at = 0
    for name, (_, texts) in zip(_library(groups)[0], groups, strict=True):
        hits = engine.searcher.search(tantivy.Query.term_query(engine.schema, "part", name),
                                      limit=100).hits  # fmt: skip
        got = sorted(int(engine.docmap[a.segment_ord][a.doc]) for _, a in hits)
        assert got == list(range(at, at + len(texts))), name
        at += len(texts)


def test_a_changed_item_is_replaced_in_place(tmp_path: Path) -> None:
    """One item's text changed, one removed, one added in the middle: the engine deletes and
    adds those items' documents only (only their segments are read), places every kept
    document at its new BM25 position, and passes the checks a search process makes
    (the document frequencies compared exclude the deleted documents, which tantivy's own
    counts include until a merge); its answers are the exact lane's."""
    groups = _groups()
    assert _run(tmp_path, groups, "sha256:a")[0] == "built"
    first = json.loads((tmp_path / ENGINE_META).read_text())
    assert first["churn"] == 0 and first["next_uid"] == first["n_docs"] == 600
    groups[7] = ("item7", _texts(20, seed=5))
    del groups[20]
    groups.insert(3, ("item99", _texts(15, seed=6)))
    reads: list[int] = []
    how, bm = _run(tmp_path, groups, "sha256:b", reads)
    assert how == "updated"
    assert reads == [3, 8]  # item99 (new) and item7 (changed), nothing else
    meta = json.loads((tmp_path / ENGINE_META).read_text())
    assert meta["chunks"] == "sha256:b" and meta["n_docs"] == bm.n_docs == 605
    assert meta["churn"] == 15 + 20 + 15 + 15 and meta["next_uid"] == 600 + 20 + 15
    _placed(_agrees(tmp_path, bm, "sha256:b"), groups)
    # Unchanged: kept as it is.
    names, _, segs = _library(groups)
    assert update_engine(tmp_path, "sha256:b", 605, {"threshold": 100}, names, segs.__getitem__) \
        == "kept"  # fmt: skip


def test_changes_add_up_until_the_engine_is_built_again(tmp_path: Path) -> None:
    """Each change adds the documents it deleted and added to the engine's churn; when the
    next would pass ``rebuild_fraction`` of the documents, the engine is built afresh (churn
    back to 0) — tantivy's statistics would otherwise drift with the deleted documents."""
    groups = _groups()
    _run(tmp_path, groups, "sha256:0")
    hows, churns = [], []
    for step in range(1, 7):
        k = step * 5
        groups[k] = (f"item{k}", _texts(15, seed=100 + step))
        how, bm = _run(tmp_path, groups, f"sha256:{step}")
        hows.append(how)
        churns.append(json.loads((tmp_path / ENGINE_META).read_text())["churn"])
        _agrees(tmp_path, bm, f"sha256:{step}")
    # 30 documents a change (15 deleted, 15 added); 0.2 × 600 = 120.
    assert hows == ["updated"] * 4 + ["rebuilt", "updated"]
    assert churns == [30, 60, 90, 120, 0, 30]
    # A lower fraction builds at once.
    groups[1] = ("item1", _texts(15, seed=7))
    assert _run(tmp_path, groups, "sha256:x", rebuild_fraction=0.05)[0] == "rebuilt"


def test_a_damaged_or_forged_engine_is_not_updated(tmp_path: Path) -> None:
    """An engine whose files fail their SHA-256, or whose parts list (its digest forged to
    match) does not match its documents, is built again rather than updated."""
    groups = _groups()
    _run(tmp_path, groups, "sha256:a")
    _flip(max((tmp_path / ENGINE_DIR).glob("*.idx"), key=lambda p: p.stat().st_size))
    groups[2] = ("item2", _texts(15, seed=11))
    how, bm = _run(tmp_path, groups, "sha256:b")
    assert how == "rebuilt"
    _agrees(tmp_path, bm, "sha256:b")
    # The parts list rewritten to say item4's documents are item5's and the reverse, the record
    # given its new digest: the update would place them wrongly, but the documents' numbers
    # then fall outside the parts' ranges (or the frequencies differ): built again.
    parts_path = tmp_path / ENGINE_DIR / "parts.json"
    parts = json.loads(parts_path.read_text())
    parts["docs"][4] += 3
    parts["docs"][5] -= 3
    parts["first"][5] += 3
    parts_path.write_text(json.dumps(parts))
    meta = json.loads((tmp_path / ENGINE_META).read_text())
    meta["files"]["parts.json"] = "sha256:" + hashlib.sha256(parts_path.read_bytes()).hexdigest()
    (tmp_path / ENGINE_META).write_text(json.dumps(meta))
    groups[4] = ("item4", _texts(15, seed=12))
    how, bm = _run(tmp_path, groups, "sha256:c")
    assert how == "rebuilt"
    _agrees(tmp_path, bm, "sha256:c")
    # An engine of the first format (no parts): built again.
    meta = json.loads((tmp_path / ENGINE_META).read_text())
    (tmp_path / ENGINE_META).write_text(json.dumps({**meta, "format": 1}))
    groups[6] = ("item6", _texts(15, seed=13))
    assert _run(tmp_path, groups, "sha256:d")[0] == "rebuilt"


_KILLED = """
import os, pickle, signal, sys
from pathlib import Path
from arkai.search import lexindex
folder, names, segs, digest, n = pickle.loads(Path(sys.argv[1]).read_bytes())
real = lexindex._add
def dying(*a, **k):
    real(*a, **k)
    os.kill(os.getpid(), signal.SIGKILL)
lexindex._add = dying
lexindex.update_engine(Path(folder), digest, n, {"threshold": 100}, names, segs.__getitem__)
"""


def test_killed_while_updating_leaves_no_trusted_engine(tmp_path: Path) -> None:
    """A process killed (SIGKILL) in the middle of an update: the record went first, so no
    search trusts the half-changed engine (it runs the exact lane), and the next run builds
    the engine afresh."""
    import pickle
    import subprocess
    import sys

    groups = _groups()
    _run(tmp_path, groups, "sha256:a")
    groups[9] = ("item9", _texts(15, seed=21))
    names, texts, segs = _library(groups)
    bm = BM25Index.build(texts)
    bm.save(tmp_path)
    job = tmp_path / "job.pkl"
    job.write_bytes(pickle.dumps((str(tmp_path), names, segs, "sha256:b", bm.n_docs)))
    proc = subprocess.run([sys.executable, "-c", _KILLED, str(job)], check=False)
    assert proc.returncode == -9
    assert not (tmp_path / ENGINE_META).exists()
    with pytest.raises(EngineError, match="cannot read the lexical engine record"):
        LexicalEngine.load(tmp_path, bm, "sha256:b")
    assert update_engine(tmp_path, "sha256:b", bm.n_docs, {"threshold": 100}, names,
                         segs.__getitem__) == "built"  # fmt: skip
    _agrees(tmp_path, bm, "sha256:b")


def test_items_in_another_order_are_placed_without_reading_them(tmp_path: Path) -> None:
    """The same items in another order (a folder renamed moves an item in the path order
    the index follows), one of them with no documents: updated in place without reading
    any segment, every document at its item's new positions."""
    groups = _groups(20)
    groups[4] = ("item4", [])
    _run(tmp_path, groups, "sha256:a")
    groups = groups[10:] + groups[:10]
    groups[3], groups[15] = groups[15], groups[3]
    reads: list[int] = []
    how, bm = _run(tmp_path, groups, "sha256:b", reads)
    assert how == "updated" and reads == []
    assert json.loads((tmp_path / ENGINE_META).read_text())["churn"] == 0
    _placed(_agrees(tmp_path, bm, "sha256:b"), groups)


def test_an_unreadable_index_shape_builds_the_engine_again(tmp_path: Path) -> None:
    """With the BM25 index's shape unreadable there is nothing to check an update against:
    the engine is built afresh (as before in-place updates), not updated and not an error."""
    groups = _groups()
    _run(tmp_path, groups, "sha256:a")
    groups[3] = ("item3", _texts(15, seed=31))
    names, texts, segs = _library(groups)
    BM25Index.build(texts).save(tmp_path)
    (tmp_path / "bm25.json").write_text("{torn")
    reads: list[int] = []

    def segment(i: int) -> bytes:
        reads.append(i)
        return segs[i]

    assert update_engine(tmp_path, "sha256:b", len(texts), {"threshold": 100}, names,
                         segment) == "rebuilt"  # fmt: skip
    assert sorted(reads) == list(range(len(groups)))  # every item read: a fresh build
    assert json.loads((tmp_path / ENGINE_META).read_text())["churn"] == 0


@pytest.mark.parametrize("late", ["by its old path", "in the folder being deleted"])
def test_an_engine_removed_while_a_file_appears_in_it_is_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, late: str
) -> None:
    """A reader of the engine still open in this process reloads it when its meta file
    changes, taking a lock file in its folder (tantivy) — while the folder is being deleted.
    The folder is renamed aside before it is deleted (a file made by its old path lands in no
    folder), and deleted again after a file appeared in it: the engine is removed, nothing of
    it left, no "Directory not empty" (a loaded machine's CI once failed so here)."""
    _run(tmp_path, _groups(), "sha256:0")
    engine = tmp_path / ENGINE_DIR
    real, calls = os.rmdir, []

    def rmdir(path: Any, *args: Any, **kwargs: Any) -> None:
        calls.append(path)
        if len(calls) == 1:  # the lock file appears as the folder itself is deleted
            inside = engine if late == "by its old path" else Path(path)
            with contextlib.suppress(FileNotFoundError):
                (inside / ".tantivy-meta.lock").write_bytes(b"")
        real(path, *args, **kwargs)

    monkeypatch.setattr(os, "rmdir", rmdir)
    assert LexicalEngine.remove(tmp_path)
    monkeypatch.undo()
    assert not engine.exists() and not list(tmp_path.glob(ENGINE_DIR + "*"))
