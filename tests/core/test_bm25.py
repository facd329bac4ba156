"""BM25 index: scores against the formula by hand, ties, filters, save/load, tokenizer."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from arkai.errors import InvalidInputError
from arkai.search.bm25 import BM25Index, load_shape, top_k, write_index
from arkai.search.termcounts import (
    CountsFile,
    TermCounts,
    build_counts,
    encode_segment,
    update_counts,
)
from arkai.search.text import STOPWORDS, stem, tokenize, words

DOCS = [
    "The cat sat on the mat.",
    "Dogs and cats are friends; the dog barks.",
    "A quantum computer computes.",
    "",
]


def test_tokenize() -> None:
    assert tokenize("The Cats are RUNNING to 3 dogs!") == ["cat", "run", "3", "dog"]
    assert tokenize("IL-6 and TNF-α levels") == ["il", "6", "tnf", "α", "level"]
    assert tokenize("Ångström’s café") == ["ångström", "café"]
    assert tokenize("") == []
    assert words("The cat") == ["the", "cat"]
    assert "the" in STOPWORDS and "not" not in STOPWORDS
    assert stem("running") == "run"


def _bm25(tf: int, df: int, n: int, dl: int, avgdl: float, k1: float, b: float) -> float:
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    return idf * tf / (tf + k1 * (1 - b + b * dl / avgdl))


def test_scores_match_the_formula() -> None:
    idx = BM25Index.build(DOCS, k1=1.2, b=0.75)
    # Token counts after stopwords: [cat sat mat]=3, [dog cat friend dog bark]=5, [quantum
    # comput comput]=3, []=0 → avgdl 11/4.
    assert idx.doc_len.tolist() == [3, 5, 3, 0]
    avgdl = 11 / 4
    got = dict(idx.search("cat dog", k=10))
    want0 = _bm25(1, 2, 4, 3, avgdl, 1.2, 0.75)
    want1 = _bm25(1, 2, 4, 5, avgdl, 1.2, 0.75) + _bm25(2, 1, 4, 5, avgdl, 1.2, 0.75)
    assert got[0] == pytest.approx(want0, rel=1e-6)
    assert got[1] == pytest.approx(want1, rel=1e-6)
    assert list(got) == [1, 0]
    # A repeated query token counts again.
    twice = dict(idx.search("cat cat", k=2))
    assert twice[1] == pytest.approx(2 * _bm25(1, 2, 4, 5, avgdl, 1.2, 0.75), rel=1e-6)


def test_search_edges() -> None:
    idx = BM25Index.build(DOCS)
    assert idx.search("zebra", k=5) == []
    assert idx.search("the of and", k=5) == []
    assert idx.search("cat", k=0) == []
    assert [d for d, _ in idx.search("cat", k=1)] == [0]  # shorter document wins
    mask = np.array([False, True, True, True])
    assert [d for d, _ in idx.search("cat", k=5, allowed=mask)] == [1]
    with pytest.raises(InvalidInputError):
        idx.search("cat", k=5, allowed=np.array([True]))
    with pytest.raises(InvalidInputError):
        BM25Index.build(DOCS, b=2.0)


def test_ties_break_by_index() -> None:
    idx = BM25Index.build(["alpha beta", "beta alpha", "alpha beta", "gamma"])
    assert [d for d, _ in idx.search("alpha", k=2)] == [0, 1]
    assert top_k(np.array([0.5, 1.0, 1.0, 0.0, 1.0], dtype=np.float32), 2) == [(1, 1.0), (2, 1.0)]
    assert top_k(np.array([0.0, 0.0], dtype=np.float32), 3) == []


def test_empty_corpus() -> None:
    idx = BM25Index.build([])
    assert idx.n_docs == 0
    assert idx.search("anything", k=3) == []


def test_save_load_roundtrip(tmp_path: Path) -> None:
    idx = BM25Index.build(DOCS, k1=0.9, b=0.4)
    idx.save(tmp_path / "lex")
    back = BM25Index.load(tmp_path / "lex")
    assert (back.k1, back.b, back.n_docs) == (0.9, 0.4, 4)
    assert back.vocab == idx.vocab
    for q in ("cat", "dog cat", "quantum computers", "nothing"):
        assert back.search(q, k=4) == idx.search(q, k=4)


def test_load_errors(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="cannot read the BM25 index"):
        BM25Index.load(tmp_path)
    idx = BM25Index.build(DOCS)
    idx.save(tmp_path)
    meta = tmp_path / "bm25.json"
    meta.write_text(meta.read_text().replace('"format": 1', '"format": 99'))
    with pytest.raises(InvalidInputError, match="format 99"):
        BM25Index.load(tmp_path)


def _flip_middle_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    ("damage", "name"),
    [
        (lambda f: (f / "bm25.npz").write_bytes((f / "bm25.npz").read_bytes()[:200]), "bm25.npz"),
        (lambda f: (f / "bm25.npz").write_bytes(b""), "bm25.npz"),
        (lambda f: _flip_middle_byte(f / "bm25.npz"), "bm25.npz"),
        (lambda f: (f / "bm25.json").write_text("[1, 2]"), "bm25.json"),
        (lambda f: (f / "bm25.json").write_bytes(b"\xff\xfe{"), "bm25.json"),
        (
            lambda f: np.savez(f / "bm25.npz", indptr=np.array([0, 5]), indices=np.array([1]),
                               data=np.array([1.0]), doc_len=np.array([1])),
            "bm25.npz",
        ),
        (lambda f: np.savez(f / "bm25.npz", indptr=np.array([0])), "bm25.npz"),
    ],
    ids=["cut short", "empty", "a byte flipped", "not an object", "not utf-8",
         "arrays that do not add up", "an array missing"],
)  # fmt: skip
def test_a_damaged_index_is_an_error_naming_its_file(
    tmp_path: Path, damage: Callable[[Path], None], name: str
) -> None:
    """A file cut short, emptied, altered (the zip's CRC), or arrays that do not fit together:
    the error names the file (it was a BadZipFile, or an EOFError the CLI took for an
    interrupt); the shape's reader names the files it reads likewise."""
    BM25Index.build(DOCS).save(tmp_path)
    damage(tmp_path)
    with pytest.raises(InvalidInputError) as caught:
        BM25Index.load(tmp_path)
    assert str(caught.value).startswith(f"{tmp_path / name}: cannot read the BM25 index (")
    if name == "bm25.json" or (tmp_path / "bm25.npz").stat().st_size < 1000:
        # The shape reads the terms and the row pointers only: damage there is named too.
        with pytest.raises(InvalidInputError) as caught:
            load_shape(tmp_path)
        assert str(caught.value).startswith(f"{tmp_path / name}: cannot read the BM25 index (")


def test_load_does_not_import_model_libraries(tmp_path: Path) -> None:
    BM25Index.build(DOCS).save(tmp_path)
    code = (
        "import sys\n"
        "from arkai.search.bm25 import BM25Index\n"
        f"BM25Index.load({str(tmp_path)!r}).search('cat', k=3)\n"
        "bad = [m for m in ('torch', 'sentence_transformers', 'onnxruntime') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_build_from_ids_matches_build_over_joined_texts() -> None:
    """bench/ann.py builds texts as token ids of sentences tokenised once: the tokenizer is
    word-local, so that index equals the one built from the joined texts."""
    sentences = ["Bees forage on clover.", "The queen's brood frame!", "Varroa mites, again"]
    picks = [[0, 1], [2], [1, 2, 0], [0]]
    vocab: dict[str, int] = {}
    sent_ids = [[vocab.setdefault(t, len(vocab)) for t in tokenize(s)] for s in sentences]
    ids = [i for p in picks for s in p for i in sent_ids[s]]
    ptr = np.cumsum([0] + [sum(len(sent_ids[s]) for s in p) for p in picks])
    fast = BM25Index.build_from_ids(np.asarray(ids, np.int32), ptr.astype(np.int64), vocab)
    slow = BM25Index.build(" ".join(sentences[s] for s in p) for p in picks)
    for q in ("bees clover", "queen brood mites", "frame"):
        assert fast.search(q, 4) == slow.search(q, 4)


def test_build_from_segments_equals_build_from_tokens(tmp_path: Path) -> None:
    """Per-item segments (each with its own term ids) merge into the index the token lists
    give, byte for byte: same vocabulary order, same weights."""
    docs = [
        "Bees forage on clover.", "The queen's brood frame!", "", "Varroa mites, again",
        "clover bees varroa", "A frame of brood; the queen lays.", "mites mites mites",
    ]  # fmt: skip
    tokens = [tokenize(d) for d in docs]
    segments = [encode_segment(tokens[:2]), encode_segment([]), encode_segment(tokens[2:5]),
                encode_segment(tokens[5:])]  # fmt: skip
    BM25Index.build_from_tokens(tokens).save(tmp_path / "tokens")
    merged = BM25Index.build_from_segments(segments)
    merged.save(tmp_path / "segments")
    for name in ("bm25.json", "bm25.npz"):
        assert (tmp_path / "segments" / name).read_bytes() == (
            tmp_path / "tokens" / name
        ).read_bytes()
    assert merged.n_docs == len(docs) and merged.search("queen brood", 3)
    assert BM25Index.build_from_segments([]).n_docs == 0
    for bad in (
        b"",
        b'{"lens":[2],"terms":["a"]}\n' + bytes(4),
        b'{"lens":[1],"terms":[]}\n' + bytes(4),
    ):
        with pytest.raises(InvalidInputError, match="not a BM25 segment"):
            BM25Index.build_from_segments([bad])


def built_from_segments(
    tokens: list[list[str]], per_segment: int, tmp_path: Path
) -> tuple[BM25Index, int]:
    """The index built from ``tokens`` cut into segments of ``per_segment`` documents, and the
    peak of memory traced while building it; the index is checked to be the one the token
    lists give, byte for byte."""
    import tracemalloc

    segments = [encode_segment(tokens[i : i + per_segment])
                for i in range(0, len(tokens), per_segment)]  # fmt: skip
    tracemalloc.start()
    try:
        merged = BM25Index.build_from_segments(segments)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    merged.save(tmp_path / "segments")
    BM25Index.build_from_tokens(tokens).save(tmp_path / "tokens")
    for name in ("bm25.json", "bm25.npz"):
        assert (tmp_path / "segments" / name).read_bytes() == (
            tmp_path / "tokens" / name
        ).read_bytes()
    return merged, peak


def test_build_from_segments_holds_no_array_over_every_token(tmp_path: Path) -> None:
    """Merging segments costs memory by distinct (term, document) pair, not by token: a
    library whose chunks repeat a few words many times is built in a fraction of the bytes
    its tokens take — and gives the index the token lists give."""
    words = [f"w{n}" for n in range(40)]
    tokens = [[words[(d + k) % 40] for k in range(2000)] for d in range(300)]
    n_tokens = sum(len(t) for t in tokens)
    _, peak = built_from_segments(tokens, 10, tmp_path)
    # The token lists alone, as int32 ids, would be 4 bytes a token (the COO build held
    # about 20 bytes a token).
    assert peak < 2 * n_tokens


def test_build_from_segments_keeps_the_pairs_out_of_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The (term, document) pairs go to a temporary file between the two passes: building
    an index in memory holds the result's 8 bytes a non-zero and little else (holding the
    pairs, 12 bytes each and grown by doubling, took 32 bytes a non-zero) — and gives the
    index the token lists give. (The spilled triples and the kept pairs are read a chunk
    at a time: small chunks here, so what the test sees is the result, not a chunk's
    temporaries.)"""
    from arkai.search import termcounts

    monkeypatch.setattr(termcounts, "_SPILL_CHUNK", 4096)
    monkeypatch.setattr(termcounts, "PAIR_BLOCK", 4096)
    words = [f"w{n}" for n in range(50)]
    tokens = [[words[(d * 7 + k) % 50] for k in range(60)] for d in range(6000)]
    merged, peak = built_from_segments(tokens, 6, tmp_path)
    assert merged.matrix.nnz == 300_000
    assert peak < 10 * merged.matrix.nnz


def test_kept_counts_are_built_updated_and_written_in_bounded_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keeping the frequencies in a file, updating them with one changed block and writing
    the index from them hold a few blocks of rows, not the non-zeros (8 bytes each; the
    index stage held ≈ 30 bytes a non-zero before: 2.5 GB at 100,000 items). Small blocks
    here, and the peak under half the pairs' bytes."""
    import tracemalloc

    from arkai.search import termcounts

    monkeypatch.setattr(termcounts, "_SPILL_CHUNK", 1024)
    monkeypatch.setattr(termcounts, "PAIR_BLOCK", 1024)
    words = [f"w{n}" for n in range(400)]
    blocks = [[[words[(b * 31 + d * 7 + k * k) % 400] for k in range(80)] for d in range(5)]
              for b in range(600)]  # fmt: skip
    segs = [encode_segment(x) for x in blocks]
    names = [f"b{n}" for n in range(len(blocks))]
    path = tmp_path / "kept.bin"
    tracemalloc.start()
    try:
        kept = build_counts(segs, names, path, range_pairs=4096)
        _, built_peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        plan: list[int | Callable[[], bytes]] = list(range(len(blocks)))
        edited = [[words[(k * 13) % 400] for k in range(90)]]
        plan[300] = lambda: encode_segment(edited)
        names[300] = "b300 edited"
        updated = update_counts(kept, plan, names, path)
        _, update_peak = tracemalloc.get_traced_memory()
        assert updated is not None
        kept.close()
        tracemalloc.reset_peak()
        write_index(updated, tmp_path / "index")
        _, write_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    nnz = updated.nnz
    assert nnz > 100_000
    peaks = (built_peak, update_peak, write_peak)
    assert max(peaks) < 4 * nnz, peaks  # half the pairs (8 bytes a non-zero)
    updated.close()
    tokens = [d for n, b in enumerate(blocks) for d in (edited if n == 300 else b)]
    BM25Index.build_from_tokens(tokens).save(tmp_path / "ref")
    _same_files(tmp_path / "index", tmp_path / "ref")


def _counts_equal(a: TermCounts | CountsFile, b: TermCounts | CountsFile) -> None:
    x = a if isinstance(a, TermCounts) else a.to_memory()
    y = b if isinstance(b, TermCounts) else b.to_memory()
    assert x.terms == y.terms
    for name in ("indptr", "indices", "tf", "doc_len"):
        u, v = getattr(x, name), getattr(y, name)
        assert u.dtype == v.dtype and np.array_equal(u, v), name
    assert (x.names, x.sizes) == (y.names, y.sizes)


def _random_block(rng: np.random.Generator, words: list[str]) -> list[list[str]]:
    """0–3 documents of 0–12 tokens from ``words`` (an empty document or block included)."""
    return [
        [words[int(w)] for w in rng.integers(0, len(words), int(rng.integers(0, 13)))]
        for _ in range(int(rng.integers(0, 4)))
    ]


def _same_files(a: Path, b: Path) -> None:
    for file in ("bm25.json", "bm25.npz"):
        assert (a / file).read_bytes() == (b / file).read_bytes(), file


@pytest.mark.parametrize("budget", [1, 3, 1 << 20])
def test_updated_counts_are_the_counts_of_every_segment(tmp_path: Path, budget: int) -> None:
    """Kept frequencies updated with only the changed blocks' segments (blocks edited, added
    anywhere, removed; terms that are new, terms no document has any more) are the file a
    build from every segment keeps, byte for byte — so the index written from them is the
    token lists' byte for byte — and reused blocks' segments are never read. With blocks of
    one row (``budget`` 1) and a few, read and written a block at a time, and the build's
    rows placed a few at a time (one pass over the spilled triples each)."""
    from arkai.search import termcounts

    rng = np.random.default_rng(7)
    words = [f"w{n}" for n in range(30)]
    blocks = {f"b{n}": _random_block(rng, words[:20]) for n in range(12)}
    order = list(blocks)
    kept_path = tmp_path / "kept.bin"
    counts = build_counts((encode_segment(blocks[n]) for n in order), order, kept_path)
    fresh = 100
    old_block = termcounts.PAIR_BLOCK
    termcounts.PAIR_BLOCK = budget
    try:
        for step in range(60):
            what = step % 4
            if what == 0 and order:  # edit one block (new words come in, old ones may go)
                where = int(rng.integers(0, len(order)))
                new = f"b{fresh}"  # an edited block is another name (its key changed)
                fresh += 1
                order[where] = new
                blocks[new] = _random_block(rng, words)
            elif what == 1:  # add one
                new = f"b{fresh}"
                fresh += 1
                order.insert(int(rng.integers(0, len(order) + 1)), new)
                blocks[new] = _random_block(rng, words)
            elif what == 2 and len(order) > 1:  # remove one
                order.pop(int(rng.integers(0, len(order))))
            # (what == 3: nothing changed)
            at = {n: i for i, n in enumerate(counts.names)}
            read: list[str] = []

            def reader(name: str, read: list[str] = read) -> Callable[[], bytes]:
                def segment() -> bytes:
                    read.append(name)
                    return encode_segment(blocks[name])

                return segment

            plan = [at[n] if n in at else reader(n) for n in order]
            updated = update_counts(counts, plan, order, kept_path)
            assert updated is not None
            assert (updated is counts) == (order == counts.names)
            if updated is not counts:
                counts.close()
            assert read == [n for n in order if n not in at]
            scratch = build_counts((encode_segment(blocks[n]) for n in order), order,
                                   tmp_path / "scratch.bin", range_pairs=budget)  # fmt: skip
            with scratch:
                expected = scratch.to_memory()
                write_index(scratch, tmp_path / "scratch")
            _counts_equal(updated, expected)
            assert kept_path.read_bytes() == (tmp_path / "scratch.bin").read_bytes()
            write_index(updated, tmp_path / "updated")
            tokens = [d for n in order for d in blocks[n]]
            BM25Index.build_from_tokens(tokens).save(tmp_path / "ref")
            _same_files(tmp_path / "updated", tmp_path / "ref")
            _same_files(tmp_path / "scratch", tmp_path / "ref")
            updated.close()
            reopened = CountsFile.open(kept_path)  # checked, then the next update's start
            assert reopened is not None
            _counts_equal(reopened, expected)
            counts = reopened
    finally:
        termcounts.PAIR_BLOCK = old_block
        counts.close()


def test_updated_counts_refuse_blocks_out_of_their_kept_order(tmp_path: Path) -> None:
    segs = [encode_segment([["a", "b"]]), encode_segment([["b", "c"], ["c"]])]
    path = tmp_path / "kept.bin"
    with build_counts(segs, ["x", "y"], path) as counts:
        before = path.read_bytes()
        assert update_counts(counts, [1, 0], ["y", "x"], path) is None  # rows to sort again
        assert update_counts(counts, [0, 0], ["x", "x"], path) is None
        assert update_counts(counts, [5], ["z"], path) is None
        assert update_counts(counts, [0], ["x", "y"], path) is None
        assert update_counts(counts, [0, 1], ["x", "y"], path) is counts  # nothing to write
        assert path.read_bytes() == before
    assert TermCounts.from_segments([]).terms == []
    with build_counts([], [], path) as nothing:
        empty = update_counts(nothing, [lambda: encode_segment([])], ["e"], path)
        assert empty is not None and empty.sizes == [0] and len(empty.doc_len) == 0
        empty.close()
    # Every kept block dropped, new ones read: the kept rows all go.
    with build_counts(segs, ["x", "y"], path) as counts:
        other = update_counts(counts, [lambda: encode_segment([["d"]])], ["z"], path)
        assert other is not None and other.terms == ["d"] and other.nnz == 1
        other.close()


def test_an_update_reads_no_more_pairs_than_its_budget(tmp_path: Path) -> None:
    """Past ``max_read`` read (term, document) pairs the update stops (None: the caller builds
    from every segment, in bounded memory) and reads no further segment; at the budget it
    still gives every segment's frequencies."""
    docs = {"x": [["a", "b"]], "y": [["b", "c"], ["c"]], "z": [["d", "d", "e"]]}
    segs = {n: encode_segment(d) for n, d in docs.items()}
    path = tmp_path / "kept.bin"
    counts = build_counts([segs["x"]], ["x"], path)
    read: list[str] = []

    def reader(name: str) -> Callable[[], bytes]:
        def segment() -> bytes:
            read.append(name)
            return segs[name]

        return segment

    plan: list[int | Callable[[], bytes]] = [0, reader("y"), reader("z")]
    # y holds 3 distinct pairs (b and c in its first document, c in its second), z 2.
    assert update_counts(counts, plan, ["x", "y", "z"], path, max_read=4) is None
    assert read == ["y", "z"]
    read.clear()
    assert update_counts(counts, plan, ["x", "y", "z"], path, max_read=2) is None
    assert read == ["y"]  # z never read
    at_budget = update_counts(counts, plan, ["x", "y", "z"], path, max_read=5)
    assert at_budget is not None
    counts.close()
    with at_budget:
        _counts_equal(at_budget, TermCounts.from_segments(segs.values(), list(segs)))


def test_kept_counts_that_do_not_add_up_are_not_used(tmp_path: Path) -> None:
    """A kept file whose digest fails, or one re-sealed with a digest that holds but whose
    arrays do not add up, is not used (the caller reads every segment)."""
    from arkai.adapters.itemcache import read_checked, write_checked

    segs = [encode_segment([["bee", "clover", "bee"], ["mite"]]), encode_segment([["queen"]])]
    path = tmp_path / "counts.bin"
    build_counts(segs, ["one", "two"], path).close()

    def opened() -> CountsFile | None:
        got = CountsFile.open(path)
        if got is not None:
            got.close()
        return got

    assert opened() is not None
    assert CountsFile.open(tmp_path / "missing.bin") is None
    good = path.read_bytes()
    path.write_bytes(good[:-1] + bytes([good[-1] ^ 1]))
    assert opened() is None  # the digest
    path.write_bytes(good[:-1])
    assert opened() is None  # cut short
    path.write_bytes(b"")
    assert opened() is None
    path.write_bytes(good)
    body = read_checked(path)
    assert body is not None
    head, _, rest = body.partition(b"\n")
    doc = json.loads(head)
    at = doc["term_bytes"]
    n_terms, nnz = doc["terms"], doc["nnz"]
    ptr_at = at
    len_at = ptr_at + 8 * (n_terms + 1)
    pairs_at = len_at + 4 * 3  # three documents

    def forged(new_head: dict[str, object] | None = None, patch: tuple[int, bytes] | None = None,
               terms: bytes | None = None) -> CountsFile | None:  # fmt: skip
        tail = bytearray(rest)
        if patch is not None:
            tail[patch[0] : patch[0] + len(patch[1])] = patch[1]
        if terms is not None:
            tail[:at] = terms
        h = dict(doc, **(new_head or {}))
        write_checked(path, json.dumps(h).encode() + b"\n" + bytes(tail))
        return opened()

    def pair(n: int, doc_: int, tf: int) -> tuple[int, bytes]:
        return pairs_at + 8 * n, np.asarray([doc_, tf], "<i4").tobytes()

    assert forged() is not None  # re-sealed as it was: used
    assert forged({"format": 99}) is None
    assert forged({"format": 1}) is None  # the arrays of the format before
    assert forged({"nnz": nnz + 1}) is None  # sizes that do not match the bytes
    assert forged({"blocks": [["one", 3], ["two", 1]]}) is None
    assert forged({"blocks": [["one", 2]]}) is None
    assert forged({"blocks": "one"}) is None
    assert forged({"terms": -1}) is None
    assert forged(terms=b"clover\nbee\n" + rest[len(b"clover\nbee\n") : at]) is None  # unsorted
    assert forged(patch=(ptr_at + 8, np.asarray([0], "<i8").tobytes())) is None  # an empty row
    # Rows: bee [doc 0 ×2], clover [0], mite [1], queen [2].
    assert forged(patch=pair(0, 9, 2)) is None  # no such document
    assert forged(patch=pair(0, -1, 2)) is None
    assert forged(patch=pair(0, 0, 0)) is None  # a zero count
    assert forged(patch=pair(1, 0, 2)) is None  # bee 2 + clover 2: over doc 0's 3 tokens
    assert forged(patch=(len_at, np.asarray([-1], "<i4").tobytes())) is None
    assert forged(patch=pair(0, 0, 1)) is not None  # bee once in doc 0: still adds up
    # Bee's row given two pairs (0, 1): documents that do not ascend within a row.
    rows = TermCounts.from_segments(segs)
    assert rows.terms == ["bee", "clover", "mite", "queen"]
    assert forged(patch=(ptr_at + 8, np.asarray([2], "<i8").tobytes())) is None


def test_the_index_file_is_the_one_numpy_writes(tmp_path: Path) -> None:
    """``bm25.npz`` is written a part at a time, with the bytes ``np.savez`` gives the whole
    arrays (an index saved by an earlier version is byte for byte the one saved now)."""
    idx = BM25Index.build(DOCS * 50)
    idx.save(tmp_path / "new")
    m = idx.matrix
    np.savez(tmp_path / "old.npz", indptr=m.indptr.astype(np.int64), indices=m.indices,
             data=m.data, doc_len=idx.doc_len)  # fmt: skip
    assert (tmp_path / "new" / "bm25.npz").read_bytes() == (tmp_path / "old.npz").read_bytes()
    empty = BM25Index.build([])
    empty.save(tmp_path / "empty")
    assert BM25Index.load(tmp_path / "empty").n_docs == 0


def test_a_failed_update_leaves_the_kept_counts_as_they_were(tmp_path: Path) -> None:
    """A segment that cannot be read (or a write that fails) mid-update: the kept file is
    untouched and still opens; a kept file cut short after it was opened is an error naming
    it, not wrong counts."""
    segs = [encode_segment([["a", "b"]]), encode_segment([["b", "c"], ["c"]])]
    path = tmp_path / "kept.bin"
    build_counts(segs, ["x", "y"], path).close()
    before = path.read_bytes()

    def broken() -> bytes:
        raise OSError("the item cache went away")

    kept = CountsFile.open(path)
    assert kept is not None
    with kept, pytest.raises(OSError, match="went away"):
        update_counts(kept, [0, broken], ["x", "z"], path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["kept.bin"]  # no temporary file left
    reopened = CountsFile.open(path)
    assert reopened is not None
    with reopened:
        path.write_bytes(before[:-4])  # (the open file is the same inode: cut in place)
        with pytest.raises(OSError, match=r"kept\.bin"):
            reopened.to_memory()


@pytest.mark.parametrize("block", [1, 7, 1 << 16])
def test_kept_counts_over_a_length_are_caught_whatever_the_blocks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    """The check that each document's counts sum to at most its length is made over pairs
    gathered from several blocks at a time: a count raised in any block (the first, one in
    the middle, the last), re-sealed, is still caught, with blocks of one row, a few rows,
    or every row."""
    from arkai.adapters.itemcache import read_checked, write_checked
    from arkai.search import termcounts

    monkeypatch.setattr(termcounts, "PAIR_BLOCK", block)
    words = [f"w{n:03d}" for n in range(60)]
    segs = [encode_segment([words[:40], words[20:], words[::3]])]
    path = tmp_path / "counts.bin"
    build_counts(segs, ["one"], path).close()
    body = read_checked(path)
    assert body is not None
    head, _, rest = body.partition(b"\n")
    doc = json.loads(head)
    pairs_at = doc["term_bytes"] + 8 * (doc["terms"] + 1) + 4 * 3
    nnz = doc["nnz"]
    assert nnz > 4 * 3 * 3  # several gatherings of pairs when blocks are small
    for n in (0, nnz // 2, nnz - 1):
        for tf, used in ((1, True), (2, False)):  # every count is 1: raising one overflows
            tail = bytearray(rest)
            at = pairs_at + 8 * n + 4
            assert tail[at : at + 4] == np.asarray([1], "<i4").tobytes()
            tail[at : at + 4] = np.asarray([tf], "<i4").tobytes()
            write_checked(path, head + b"\n" + bytes(tail))
            got = CountsFile.open(path)
            assert (got is not None) == used, (n, tf)
            if got is not None:
                got.close()


def test_the_index_stage_writes_the_matrix_without_scipy(tmp_path: Path) -> None:
    """The index stage's lexical step — counts kept, updated, the matrix written — and the
    stage's modules import no scipy (≈ 0.13 s a run); loading the index for a query does, and
    reads what was written."""
    code = f"""
import sys
from pathlib import Path
import arkai.ops.index
from arkai.search.bm25 import BM25Index, write_index
from arkai.search.termcounts import build_counts, encode_segment, update_counts
tmp = Path({str(tmp_path)!r})
segs = [encode_segment([["bees", "hive"], ["wax", "bees"]]), encode_segment([["queen"]])]
kept = build_counts(segs, ["a", "b"], tmp / "kept.bin")
plan = [0, lambda: encode_segment([["queen", "pollen"]])]
updated = update_counts(kept, plan, ["a", "b edited"], tmp / "kept.bin")
kept.close()
write_index(updated, tmp / "index")
updated.close()
assert "scipy" not in sys.modules, "scipy imported"
index = BM25Index.load(tmp / "index")
assert "scipy" in sys.modules and index.matrix.shape[1] == 3, index.matrix.shape
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
