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

Terms are numbered in sorted order (code points), so an index is a function of its documents'
(term, count) sets alone, whichever way it was built.

A library's documents come in segments (one per item: :func:`arkai.search.termcounts.
encode_segment`) whose term frequencies :mod:`arkai.search.termcounts` merges and keeps
between builds; :meth:`BM25Index.from_counts` weighs them into the very index
:meth:`BM25Index.build_from_tokens` makes of the same token lists
(:meth:`BM25Index.build_from_segments` does both), and :func:`write_index` writes that index
from frequencies kept in a file without holding it (the index stage: a block of rows at a
time).

``load`` needs numpy, scipy and the tokenizer only: no model library is imported on this path.
scipy (≈ 0.13 s to import) is imported where a matrix is made, never by :func:`write_index`: the
index stage writes the matrix without it.
"""

from __future__ import annotations

import contextlib
import json
import os
import zipfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import numpy as np
import numpy.typing as npt

from arkai.adapters.fs import atomic_write, atomic_write_text, byte_view
from arkai.errors import InvalidInputError
from arkai.search.termcounts import CountsFile, RowBlock, TermCounts, sorted_rank
from arkai.search.text import tokenize

if TYPE_CHECKING:
    from scipy import sparse

__all__ = [
    "DEFAULT_B", "DEFAULT_K1", "FORMAT_VERSION", "BM25Index", "Shape", "load_shape", "weights",
    "write_index",
]  # fmt: skip

DEFAULT_K1 = 1.2
DEFAULT_B = 0.75
FORMAT_VERSION = 1

_MATRIX_FILE = "bm25.npz"
_META_FILE = "bm25.json"

Tokenizer = Callable[[str], list[str]]
FloatArray = npt.NDArray[np.float32]


@dataclass(frozen=True)
class Shape:
    """What an index is over, without its weights: the number of documents, the terms (in id
    order: sorted) and each term's document frequency (:meth:`BM25Index.shape`,
    :func:`load_shape`)."""

    n_docs: int
    terms: list[str]
    df: npt.NDArray[np.int64]


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
        _check_parameters(k1, b)
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
        rank = sorted_rank(list(vocab))
        return cls.build_from_ids(
            rank[np.asarray(term_ids, dtype=np.int64)].astype(np.int32),
            np.asarray(doc_ptr, dtype=np.int64),
            {t: int(rank[i]) for t, i in vocab.items()},
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
        :meth:`build_from_tokens` over the segments' token lists one after the other
        (:meth:`TermCounts.from_segments`, then :meth:`from_counts`)."""
        _check_parameters(k1, b)
        return cls.from_counts(TermCounts.from_segments(segments), k1=k1, b=b,
                               tokenizer=tokenizer, consume=True)  # fmt: skip

    @classmethod
    def from_counts(
        cls,
        counts: TermCounts,
        *,
        k1: float = DEFAULT_K1,
        b: float = DEFAULT_B,
        tokenizer: Tokenizer = tokenize,
        consume: bool = False,
    ) -> BM25Index:
        """Weigh term frequencies into an index (the terms' rows in ``counts`` order: any order
        works; every build here gives sorted terms), in blocks so the ``float64`` temporaries
        stay small whatever the index's size (:func:`weights`, as :func:`write_index` writes
        them). With ``consume`` the frequencies' array becomes the weights' (no second array
        of a non-zero's size; ``counts`` is not usable afterwards)."""
        _check_parameters(k1, b)
        n_terms, n_docs = len(counts.terms), len(counts.doc_len)
        tf = counts.tf
        if consume and tf.dtype == np.int32 and tf.flags.writeable:
            data = tf.view(np.float32)  # each block read as counts, then written as weights
        else:
            data = np.empty(len(tf), dtype=np.float32)
        at = 0
        for block in weights(counts.blocks(_WEIGH_BLOCK), counts.indptr, counts.doc_len, k1, b):
            data[at : at + len(block)] = block
            at += len(block)
        from scipy import sparse

        matrix = sparse.csr_matrix(
            (data, counts.indices.astype(np.int32, copy=False),
             counts.indptr.astype(np.int64, copy=False)),
            shape=(n_terms, n_docs),
        )  # fmt: skip
        vocab = {t: i for i, t in enumerate(counts.terms)}
        doc_len = counts.doc_len.astype(np.int32, copy=False)
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
        _check_parameters(k1, b)
        n_docs = len(doc_ptr) - 1
        doc_len = np.diff(doc_ptr).astype(np.int32)
        cols = np.asarray(term_ids, dtype=np.int32)
        rows = np.repeat(np.arange(n_docs, dtype=np.int32), doc_len)
        # (doc, term) -> tf; duplicates are summed by the COO -> CSR conversion.
        from scipy import sparse

        tf = sparse.coo_matrix(
            (np.ones(len(cols), dtype=np.float32), (cols, rows)), shape=(len(vocab), n_docs)
        ).tocsr()
        tf.sum_duplicates()
        terms = [""] * len(vocab)
        for t, i in vocab.items():
            terms[i] = t
        counts = TermCounts(terms, tf.indptr.astype(np.int64), tf.indices.astype(np.int32),
                            tf.data.astype(np.int32), doc_len)  # fmt: skip
        return cls.from_counts(counts, k1=k1, b=b, tokenizer=tokenizer, consume=True)

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

    def shape(self) -> Shape:
        terms = [""] * len(self.vocab)
        for t, i in self.vocab.items():
            terms[i] = t
        return Shape(self.n_docs, terms, np.diff(self.matrix.indptr).astype(np.int64))

    # -- persistence -----------------------------------------------------------------

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write ``bm25.npz`` and ``bm25.json`` into the folder ``path`` (created)."""
        m = self.matrix
        terms = [""] * len(self.vocab)
        for t, i in self.vocab.items():
            terms[i] = t
        _save(Path(path), terms, self.n_docs, self.k1, self.b, m.indptr, self.doc_len,
              [m.indices], [m.data])  # fmt: skip

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, tokenizer: Tokenizer = tokenize) -> BM25Index:
        """Read an index written by :meth:`save`."""
        folder = Path(path)
        meta = _read_meta(folder)
        if meta.get("format") != FORMAT_VERSION:
            raise InvalidInputError(
                f"{folder / _META_FILE}: a BM25 index of format {meta.get('format')!r}, "
                f"expected {FORMAT_VERSION}"
            )
        with _reading(folder, _MATRIX_FILE):
            with np.load(folder / _MATRIX_FILE) as z:
                indptr, indices, data = z["indptr"], z["indices"], z["data"]
                doc_len = z["doc_len"]
            terms: list[str] = meta["terms"]
            n_docs = int(meta["n_docs"])
            from scipy import sparse

            # (scipy checks the arrays against each other and the shape: a ValueError.)
            matrix = sparse.csr_matrix((data, indices, indptr), shape=(len(terms), n_docs))
            if len(doc_len) != n_docs:
                raise ValueError(f"{len(doc_len)} document lengths for {n_docs} documents")
            return cls(
                vocab={t: i for i, t in enumerate(terms)},
                matrix=matrix,
                doc_len=doc_len.astype(np.int32),
                k1=float(meta["k1"]),
                b=float(meta["b"]),
                tokenizer=tokenizer,
            )


def load_shape(path: str | os.PathLike[str]) -> Shape:
    """The :class:`Shape` of the index saved in the folder ``path``, read from its terms and
    its row pointers only (the weights and documents are never read: ≈ 8 bytes a non-zero,
    560 MB at 100,000 items)."""
    folder = Path(path)
    meta = _read_meta(folder)
    with _reading(folder, _MATRIX_FILE):
        with np.load(folder / _MATRIX_FILE) as z:
            indptr = z["indptr"]
        terms, n_docs = meta["terms"], int(meta["n_docs"])
    if meta.get("format") != FORMAT_VERSION or not isinstance(terms, list):
        raise InvalidInputError(
            f"{folder / _META_FILE}: cannot read the BM25 index (format "
            f"{meta.get('format')!r}, expected {FORMAT_VERSION}, and a list of terms)"
        )
    if len(indptr) != len(terms) + 1:
        raise InvalidInputError(
            f"{folder / _MATRIX_FILE}: cannot read the BM25 index ({len(indptr)} row pointers "
            f"for {len(terms)} terms)"
        )
    return Shape(n_docs, [str(t) for t in terms], np.diff(indptr).astype(np.int64))


#: What reading a damaged index raises: a missing or unreadable file (OSError), a zip archive
#: cut short or altered (BadZipFile: its CRC; EOFError: an empty member), arrays or fields that
#: are not what they should be (ValueError, KeyError, TypeError).
_DAMAGED = (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile)


@contextlib.contextmanager
def _reading(folder: Path, name: str) -> Iterator[None]:
    """Turn a damaged index file's error into one that names the file (its readers say how to
    build the index again)."""
    try:
        yield
    except _DAMAGED as exc:
        raise InvalidInputError(
            f"{folder / name}: cannot read the BM25 index ({_reason(exc)})"
        ) from exc


def _reason(exc: BaseException) -> str:
    if isinstance(exc, KeyError):
        return f"no {exc.args[0]!r} in it"
    return str(exc) or type(exc).__name__


def _read_meta(folder: Path) -> dict[str, Any]:
    """``bm25.json``: a JSON object, else an error naming it."""
    with _reading(folder, _META_FILE):
        meta = json.loads((folder / _META_FILE).read_text(encoding="utf-8"))
        if not isinstance(meta, dict):
            raise ValueError("not a JSON object")
        return meta


def _check_parameters(k1: float, b: float) -> None:
    if k1 < 0 or not 0.0 <= b <= 1.0:
        raise InvalidInputError(f"BM25 parameters out of range: k1={k1}, b={b}")


def write_index(
    counts: CountsFile | TermCounts, path: str | os.PathLike[str], *, k1: float = DEFAULT_K1,
    b: float = DEFAULT_B,
) -> None:  # fmt: skip
    """Write the index :meth:`BM25Index.from_counts` makes of ``counts`` into the folder
    ``path``, as :meth:`BM25Index.save` writes it (the same bytes), never holding it: the
    documents and then the weights go out a block of rows at a time (kept frequencies in a
    file are read twice, a block at a time)."""
    _check_parameters(k1, b)

    def docs() -> Iterator[npt.NDArray[np.int32]]:
        return (d for _, _, d, _ in counts.blocks())

    _save(Path(path), counts.terms, len(counts.doc_len), k1, b, counts.indptr, counts.doc_len,
          docs, lambda: weights(counts.blocks(), counts.indptr, counts.doc_len, k1, b))  # fmt: skip


def weights(
    blocks: Iterable[RowBlock], indptr: npt.NDArray[np.int64],
    doc_len: npt.NDArray[np.int32], k1: float, b: float,
) -> Iterator[FloatArray]:  # fmt: skip
    """Each block's BM25 weights (``float32``; computed in ``float64``) from its counts: the
    idf of its rows' document frequencies, the length norm of its documents."""
    n_docs = len(doc_len)
    avgdl = float(doc_len.mean()) if n_docs and doc_len.sum() else 1.0
    term_idf = idf(np.diff(indptr), n_docs)
    norm = k1 * (1.0 - b + b * doc_len.astype(np.float64) / avgdl)
    for r0, r1, docs, tf in blocks:
        rows = np.repeat(np.arange(r0, r1), np.diff(indptr[r0 : r1 + 1]))
        f = tf.astype(np.float64)
        yield (term_idf[rows] * f / (f + norm[docs])).astype(np.float32)


Parts = Iterable[npt.NDArray[Any]] | Callable[[], Iterable[npt.NDArray[Any]]]


def _save(
    folder: Path, terms: Sequence[str], n_docs: int, k1: float, b: float,
    indptr: npt.NDArray[Any], doc_len: npt.NDArray[Any], indices: Parts, data: Parts,
) -> None:  # fmt: skip
    """``bm25.npz`` (the arrays as ``np.savez`` writes them: the same bytes; ``indices`` and
    ``data`` given in parts, or as functions giving them) and ``bm25.json``."""
    folder.mkdir(parents=True, exist_ok=True)
    nnz = int(indptr[-1]) if len(indptr) else 0
    members: list[tuple[str, str, int, Parts]] = [
        ("indptr", "<i8", len(indptr), [indptr]),
        ("indices", "<i4", nnz, indices),
        ("data", "<f4", nnz, data),
        ("doc_len", "<i4", len(doc_len), [doc_len]),
    ]

    def write(fh: BinaryIO) -> None:
        with zipfile.ZipFile(fh, mode="w", compression=zipfile.ZIP_STORED, allowZip64=True) as z:
            for name, dtype, count, parts in members:
                with z.open(name + ".npy", "w", force_zip64=True) as out:
                    np.lib.format.write_array_header_1_0(
                        out,
                        {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)),
                         "fortran_order": False, "shape": (count,)},
                    )  # fmt: skip
                    done = 0
                    for part in parts() if callable(parts) else parts:
                        arr = np.ascontiguousarray(part, dtype=dtype)
                        out.write(byte_view(arr))
                        done += len(arr)
                    if done != count:
                        raise ValueError(f"{name}: {done} values written, {count} expected")

    atomic_write(folder / _MATRIX_FILE, write, fsync=False)
    meta = {"format": FORMAT_VERSION, "k1": k1, "b": b, "n_docs": n_docs, "terms": list(terms)}
    atomic_write_text(folder / _META_FILE, json.dumps(meta, ensure_ascii=False), fsync=False)


def idf(
    df: npt.NDArray[np.floating] | npt.NDArray[np.integer], n_docs: int
) -> npt.NDArray[np.float64]:
    """Lucene's BM25 idf (always positive)."""
    d = df.astype(np.float64)
    return np.log1p((n_docs - d + 0.5) / (d + 0.5))


#: Weights computed per block of this many non-zeros (:meth:`BM25Index.from_counts`).
_WEIGH_BLOCK = 1 << 13


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
