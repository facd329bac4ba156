"""The lexical lane: Okapi BM25 over a sparse term-by-document matrix (DESIGN §7).

Every BM25 weight is computed once at build time, so answering a query is a sparse gather
and one ``np.bincount``: for each query term its row of (document, weight) pairs is read
and the weights are summed per document. Scoring follows Lucene's BM25 (the variant the
project's baseline uses)::

    idf(t)    = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
    w(t, d)   = idf(t) * tf / (tf + k1 * (1 - b + b * |d| / avgdl))
    score(q, d) = sum over query tokens t of w(t, d)   (a repeated query token counts again)

The index stores the matrix term-major (CSR, one row per term) as ``float32``, the vocabulary
as a JSON list and the parameters next to it.

A library's documents come in segments (one per item, :func:`encode_segment`: the segment's own
vocabulary and its tokens as ids into it), which a caller caches per item:
:meth:`BM25Index.build_from_segments` then merges them with one dictionary lookup per distinct
term of a segment and array work for the tokens, into the very index
:meth:`BM25Index.build_from_tokens` makes of the same token lists.

``load`` needs numpy, scipy and the tokenizer only: no model library is imported on this path.
"""

from __future__ import annotations

import itertools
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt
from scipy import sparse

from arkai.adapters.fs import atomic_write, atomic_write_text
from arkai.errors import InvalidInputError
from arkai.search.text import tokenize

__all__ = ["DEFAULT_B", "DEFAULT_K1", "FORMAT_VERSION", "BM25Index", "encode_segment"]

DEFAULT_K1 = 1.2
DEFAULT_B = 0.75
FORMAT_VERSION = 1

_MATRIX_FILE = "bm25.npz"
_META_FILE = "bm25.json"

Tokenizer = Callable[[str], list[str]]
FloatArray = npt.NDArray[np.float32]


@dataclass
class BM25Index:
    """A built BM25 index over ``n_docs`` documents, addressed by position (0-based)."""

    vocab: dict[str, int]
    matrix: sparse.csr_matrix  # shape (n_terms, n_docs); rows = terms
    doc_len: npt.NDArray[np.int32]
    k1: float = DEFAULT_K1
    b: float = DEFAULT_B
    tokenizer: Tokenizer = field(default=tokenize, repr=False, compare=False)

    # -- construction ----------------------------------------------------------------

    @classmethod
    def build(
        cls,
        docs: Iterable[str],
        *,
        k1: float = DEFAULT_K1,
        b: float = DEFAULT_B,
        tokenizer: Tokenizer = tokenize,
    ) -> BM25Index:
        """Tokenise ``docs`` and precompute every BM25 weight."""
        return cls.build_from_tokens((tokenizer(d) for d in docs), k1=k1, b=b, tokenizer=tokenizer)

    @classmethod
    def build_from_tokens(
        cls,
        token_lists: Iterable[Sequence[str]],
        *,
        k1: float = DEFAULT_K1,
        b: float = DEFAULT_B,
        tokenizer: Tokenizer = tokenize,
    ) -> BM25Index:
        """Build from already tokenised documents (the tokenizer is kept for queries)."""
        if k1 < 0 or not 0.0 <= b <= 1.0:
            raise InvalidInputError(f"BM25 parameters out of range: k1={k1}, b={b}")
        vocab: dict[str, int] = {}
        term_ids: list[int] = []
        doc_ptr: list[int] = [0]
        for tokens in token_lists:
            for t in tokens:
                tid = vocab.get(t)
                if tid is None:
                    tid = vocab[t] = len(vocab)
                term_ids.append(tid)
            doc_ptr.append(len(term_ids))
        return cls.build_from_ids(
            np.asarray(term_ids, dtype=np.int32),
            np.asarray(doc_ptr, dtype=np.int64),
            vocab,
            k1=k1,
            b=b,
            tokenizer=tokenizer,
        )

    @classmethod
    def build_from_segments(
        cls,
        segments: Iterable[bytes],
        *,
        k1: float = DEFAULT_K1,
        b: float = DEFAULT_B,
        tokenizer: Tokenizer = tokenize,
    ) -> BM25Index:
        """Build from :func:`encode_segment` outputs, in document order: the same index as
        :meth:`build_from_tokens` over the segments' token lists one after the other (term ids
        are numbered in order of first appearance either way).

        In bounded memory: one pass keeps the vocabulary, document lengths and frequencies
        and writes each segment's distinct (term, document, count) triples (12 bytes a pair)
        to a temporary file; then each segment's triples are read back and their weights
        placed straight into the term-major arrays (8 bytes a non-zero) — no array over every
        token or every pair, no COO matrix, no copy of the result. (Held in memory, the
        pairs were 84–168 MB of the index stage at 10,000 items, with their doubling.)"""
        if k1 < 0 or not 0.0 <= b <= 1.0:
            raise InvalidInputError(f"BM25 parameters out of range: k1={k1}, b={b}")
        vocab: dict[str, int] = {}
        df = np.zeros(1024, dtype=np.int64)
        lens: list[npt.NDArray[np.int64]] = []
        bounds = [0]  # where each segment's pairs start
        n_docs = 0
        with tempfile.TemporaryFile(prefix="arkai-bm25-") as spill:
            for raw in segments:
                remap, seg = _pairs(raw, vocab)
                if len(vocab) > len(df):
                    grow = max(len(df), len(vocab) - len(df))
                    df = np.concatenate([df, np.zeros(grow, np.int64)])
                df[remap] += np.bincount(seg.local, minlength=len(remap))
                block = np.empty((3, len(seg.local)), dtype=np.int32)  # term, document, count
                block[0], block[1], block[2] = remap[seg.local], seg.doc + n_docs, seg.tf
                spill.write(block.tobytes())
                bounds.append(bounds[-1] + len(seg.local))
                lens.append(seg.lens)
                n_docs += len(seg.lens)
            df = df[: len(vocab)]
            doc_len = (np.concatenate(lens) if lens else np.zeros(0, np.int64)).astype(np.int32)
            del lens
            indptr = np.zeros(len(vocab) + 1, dtype=np.int64)
            np.cumsum(df, out=indptr[1:])
            indices = np.empty(int(indptr[-1]), dtype=np.int32)
            data = np.empty(int(indptr[-1]), dtype=np.float32)
            # The weights exactly as _weigh computes them from the tf matrix.
            avgdl = float(doc_len.mean()) if n_docs and doc_len.sum() else 1.0
            term_idf = idf(df, n_docs)
            norm = k1 * (1.0 - b + b * doc_len.astype(np.float64) / avgdl)
            fill = indptr[:-1].copy()  # where each term's next (document, weight) goes
            spill.seek(0)
            for lo, hi in itertools.pairwise(bounds):  # segment by segment, in document order
                if hi == lo:
                    continue
                got = np.empty(3 * (hi - lo), dtype=np.int32)
                if spill.readinto(got.data.cast("B")) != got.nbytes:
                    raise OSError("the temporary file of BM25 pairs was cut short")
                terms, docs, tf = got.reshape(3, hi - lo)
                starts = np.flatnonzero(np.diff(terms, prepend=-1))
                counts = np.diff(np.r_[starts, len(terms)])
                pos = fill[terms] + (np.arange(len(terms)) - np.repeat(starts, counts))
                indices[pos] = docs
                f = tf.astype(np.float64)
                data[pos] = term_idf[terms] * f / (f + norm[docs])
                fill[terms[starts]] += counts
        matrix = sparse.csr_matrix((data, indices, indptr), shape=(len(vocab), n_docs))
        return cls(vocab=vocab, matrix=matrix, doc_len=doc_len, k1=k1, b=b, tokenizer=tokenizer)

    @classmethod
    def build_from_ids(
        cls,
        term_ids: npt.NDArray[np.int32],
        doc_ptr: npt.NDArray[np.int64],
        vocab: dict[str, int],
        *,
        k1: float = DEFAULT_K1,
        b: float = DEFAULT_B,
        tokenizer: Tokenizer = tokenize,
    ) -> BM25Index:
        """Build from term ids (``vocab`` maps each token to its id): document ``d``'s tokens
        are ``term_ids[doc_ptr[d]:doc_ptr[d + 1]]``. No per-token Python work, so a caller
        that already has ids (a benchmark of millions of documents) skips tokenising."""
        if k1 < 0 or not 0.0 <= b <= 1.0:
            raise InvalidInputError(f"BM25 parameters out of range: k1={k1}, b={b}")
        n_docs = len(doc_ptr) - 1
        doc_len = np.diff(doc_ptr).astype(np.int32)
        cols = np.asarray(term_ids, dtype=np.int32)
        rows = np.repeat(np.arange(n_docs, dtype=np.int32), doc_len)
        # (doc, term) -> tf; duplicates are summed by the COO -> CSR conversion.
        tf = sparse.coo_matrix(
            (np.ones(len(cols), dtype=np.float32), (cols, rows)), shape=(len(vocab), n_docs)
        ).tocsr()
        tf.sum_duplicates()
        matrix = _weigh(tf, doc_len, k1, b)
        return cls(vocab=vocab, matrix=matrix, doc_len=doc_len, k1=k1, b=b, tokenizer=tokenizer)

    # -- queries ---------------------------------------------------------------------

    @property
    def n_docs(self) -> int:
        return int(self.matrix.shape[1])

    def term_weights(self, query: str) -> dict[int, float]:
        """Query term ids with their multiplicity (unknown terms dropped)."""
        out: dict[int, float] = {}
        for t in self.tokenizer(query):
            tid = self.vocab.get(t)
            if tid is not None:
                out[tid] = out.get(tid, 0.0) + 1.0
        return out

    def scores(
        self, query: str | Mapping[int, float], allowed: npt.NDArray[np.bool_] | None = None
    ) -> FloatArray:
        """The BM25 score of every document (0 where no query term occurs or not allowed).

        ``query`` is text, or a mapping of term id to query-term weight (for expansion).
        """
        weights = self.term_weights(query) if isinstance(query, str) else query
        out = np.zeros(self.n_docs, dtype=np.float32)
        if not weights:
            return out
        m = self.matrix
        idx_parts: list[npt.NDArray[np.int32]] = []
        val_parts: list[FloatArray] = []
        for tid, w in weights.items():
            lo, hi = m.indptr[tid], m.indptr[tid + 1]
            if hi > lo:
                idx_parts.append(m.indices[lo:hi])
                val_parts.append(m.data[lo:hi] * np.float32(w) if w != 1.0 else m.data[lo:hi])
        if not idx_parts:
            return out
        idx = np.concatenate(idx_parts)
        val = np.concatenate(val_parts)
        out = np.bincount(idx, weights=val, minlength=self.n_docs).astype(np.float32)
        if allowed is not None:
            out[~allowed] = 0.0
        return out

    def search(
        self,
        query: str | Mapping[int, float],
        k: int = 10,
        allowed: npt.NDArray[np.bool_] | None = None,
    ) -> list[tuple[int, float]]:
        """The ``k`` best (doc index, score) pairs, best first; ties by lower index.

        ``allowed`` is a boolean mask over documents (``False`` = filtered out). Documents
        matching no query term are never returned.
        """
        if allowed is not None and len(allowed) != self.n_docs:
            raise InvalidInputError(
                f"allowed mask has {len(allowed)} entries for {self.n_docs} documents"
            )
        return top_k(self.scores(query, allowed), k)

    # -- persistence -----------------------------------------------------------------

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write ``bm25.npz`` and ``bm25.json`` into the folder ``path`` (created)."""
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        m = self.matrix
        atomic_write(
            folder / _MATRIX_FILE,
            lambda fh: np.savez(
                fh,
                indptr=m.indptr.astype(np.int64, copy=False),
                indices=m.indices.astype(np.int32, copy=False),
                data=m.data.astype(np.float32, copy=False),
                doc_len=self.doc_len,
            ),
            fsync=False,
        )
        terms = [""] * len(self.vocab)
        for t, i in self.vocab.items():
            terms[i] = t
        meta = {
            "format": FORMAT_VERSION,
            "k1": self.k1,
            "b": self.b,
            "n_docs": self.n_docs,
            "terms": terms,
        }
        atomic_write_text(folder / _META_FILE, json.dumps(meta, ensure_ascii=False), fsync=False)

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, tokenizer: Tokenizer = tokenize) -> BM25Index:
        """Read an index written by :meth:`save`."""
        folder = Path(path)
        try:
            meta = json.loads((folder / _META_FILE).read_text(encoding="utf-8"))
            with np.load(folder / _MATRIX_FILE) as z:
                indptr, indices, data = z["indptr"], z["indices"], z["data"]
                doc_len = z["doc_len"]
        except (OSError, ValueError, KeyError) as exc:
            raise InvalidInputError(f"cannot read BM25 index in {folder}: {exc}") from exc
        if meta.get("format") != FORMAT_VERSION:
            raise InvalidInputError(
                f"BM25 index in {folder} has format {meta.get('format')!r}, "
                f"expected {FORMAT_VERSION}",
                hint="rebuild the index",
            )
        terms: list[str] = meta["terms"]
        n_docs = int(meta["n_docs"])
        matrix = sparse.csr_matrix((data, indices, indptr), shape=(len(terms), n_docs))
        return cls(
            vocab={t: i for i, t in enumerate(terms)},
            matrix=matrix,
            doc_len=doc_len.astype(np.int32),
            k1=float(meta["k1"]),
            b=float(meta["b"]),
            tokenizer=tokenizer,
        )


def encode_segment(token_lists: Iterable[Sequence[str]]) -> bytes:
    """Some documents' tokens as one segment for :meth:`BM25Index.build_from_segments`: a JSON
    line (the segment's terms in order of first appearance, and each document's token count),
    then the tokens as little-endian ``int32`` ids into those terms."""
    vocab: dict[str, int] = {}
    ids: list[int] = []
    lens: list[int] = []
    for tokens in token_lists:
        ids.extend(vocab.setdefault(t, len(vocab)) for t in tokens)
        lens.append(len(tokens))
    head = json.dumps({"lens": lens, "terms": list(vocab)}, ensure_ascii=False)
    return head.encode("utf-8") + b"\n" + np.asarray(ids, dtype="<i4").tobytes()


def decode_segment(
    raw: bytes,
) -> tuple[list[str], npt.NDArray[np.int64], npt.NDArray[np.int32]]:
    """(terms, token count per document, token ids) of an :func:`encode_segment` output."""
    head, sep, body = raw.partition(b"\n")
    try:
        meta = json.loads(head.decode("utf-8"))
        terms = [str(t) for t in meta["terms"]]
        lens = np.asarray(meta["lens"], dtype=np.int64)
        local = np.frombuffer(body, dtype="<i4").astype(np.int32)
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"not a BM25 segment: {exc}") from None
    if (
        not sep
        or int(lens.sum()) != len(local)
        or (len(local) and (int(local.min()) < 0 or int(local.max()) >= len(terms)))
    ):
        raise InvalidInputError("not a BM25 segment: its lengths or ids do not add up")
    return terms, lens, local


@dataclass(frozen=True)
class _Pairs:
    """A segment's distinct (term, document) pairs, by term then document: term ids and
    documents local to the segment, with each pair's count."""

    lens: npt.NDArray[np.int64]
    doc: npt.NDArray[np.int64]
    local: npt.NDArray[np.int64]
    tf: npt.NDArray[np.int64]


def _pairs(raw: bytes, vocab: dict[str, int]) -> tuple[npt.NDArray[np.int64], _Pairs]:
    """Decode a segment: its terms' ids in ``vocab`` (new terms numbered on from its size)
    and its distinct (term, document) pairs."""
    terms, lens, local = decode_segment(raw)
    # A segment's terms are distinct: its new ones, in order, get the next ids.
    new = [t for t in terms if t not in vocab]
    vocab.update(zip(new, range(len(vocab), len(vocab) + len(new)), strict=True))
    remap = np.fromiter(map(vocab.__getitem__, terms), dtype=np.int64, count=len(terms))
    width = max(len(lens), 1)
    doc = np.repeat(np.arange(len(lens), dtype=np.int64), lens)
    keys, tf = np.unique(local.astype(np.int64) * width + doc, return_counts=True)
    return remap, _Pairs(lens, keys % width, keys // width, tf.astype(np.int64))


def idf(
    df: npt.NDArray[np.floating] | npt.NDArray[np.integer], n_docs: int
) -> npt.NDArray[np.float64]:
    """Lucene's BM25 idf (always positive)."""
    d = df.astype(np.float64)
    return np.log1p((n_docs - d + 0.5) / (d + 0.5))


#: Weights computed per block of this many non-zeros (:func:`_weigh`).
_WEIGH_BLOCK = 1 << 20


def _weigh(
    tf: sparse.csr_matrix, doc_len: npt.NDArray[np.int32], k1: float, b: float
) -> sparse.csr_matrix:
    n_terms, n_docs = tf.shape
    avgdl = float(doc_len.mean()) if n_docs and doc_len.sum() else 1.0
    df = np.diff(tf.indptr)
    term_idf = idf(df, n_docs)
    norm = k1 * (1.0 - b + b * doc_len.astype(np.float64) / avgdl)  # per document
    rows = np.repeat(np.arange(n_terms, dtype=np.int32), df)
    w = np.empty(len(tf.data), dtype=np.float32)
    # In blocks, so the float64 temporaries stay small whatever the index's size.
    for lo in range(0, len(w), _WEIGH_BLOCK):
        hi = lo + _WEIGH_BLOCK
        f = tf.data[lo:hi].astype(np.float64)
        w[lo:hi] = term_idf[rows[lo:hi]] * f / (f + norm[tf.indices[lo:hi]])
    out = sparse.csr_matrix(
        (w, tf.indices.astype(np.int32), tf.indptr.astype(np.int64)),
        shape=tf.shape,
    )
    return out


def top_k(scores: FloatArray, k: int) -> list[tuple[int, float]]:
    """Positive-scoring entries of ``scores`` as (index, score), best first, ties by index."""
    if k <= 0:
        return []
    cand = np.flatnonzero(scores > 0)
    if len(cand) > k:
        vals = scores[cand]
        # Keep everything tied with the k-th value so that the tie-break is exact.
        kth = np.partition(vals, len(vals) - k)[len(vals) - k]
        cand = cand[vals >= kth]
    order = np.lexsort((cand, -scores[cand].astype(np.float64)))[:k]
    return [(int(i), float(scores[i])) for i in cand[order]]
