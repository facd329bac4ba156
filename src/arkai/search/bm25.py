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

A library's documents come in segments (one per item, :func:`encode_segment`: the segment's own
vocabulary and its tokens as ids into it), which a caller caches per item:
:meth:`TermCounts.from_segments` merges them with one dictionary lookup per distinct term of a
segment and array work for the tokens into the term frequencies, and
:meth:`BM25Index.from_counts` weighs those into the very index
:meth:`BM25Index.build_from_tokens` makes of the same token lists
(:meth:`BM25Index.build_from_segments` does both). The frequencies are what a caller keeps
between builds (:meth:`TermCounts.save`): :meth:`TermCounts.update` takes the kept ones and
the segments of changed documents only — unchanged segments are not read — and gives the
frequencies a build from every segment gives, so an edit costs array work over the kept
frequencies, not a decoding of every segment.

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
from arkai.adapters.itemcache import read_checked_head, text_lines, write_checked
from arkai.errors import InvalidInputError
from arkai.search.text import tokenize

__all__ = [
    "DEFAULT_B", "DEFAULT_K1", "FORMAT_VERSION", "BM25Index", "TermCounts", "encode_segment",
]  # fmt: skip

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
        rank = _sorted_rank(list(vocab))
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
        stay small whatever the index's size. With ``consume`` the frequencies' array becomes
        the weights' (no second array of a non-zero's size; ``counts`` is not usable
        afterwards)."""
        _check_parameters(k1, b)
        n_terms, n_docs = len(counts.terms), len(counts.doc_len)
        doc_len = counts.doc_len.astype(np.int32, copy=False)
        avgdl = float(doc_len.mean()) if n_docs and doc_len.sum() else 1.0
        df = np.diff(counts.indptr)
        term_idf = idf(df, n_docs)
        norm = k1 * (1.0 - b + b * doc_len.astype(np.float64) / avgdl)
        tf = counts.tf
        if consume and tf.dtype == np.int32 and tf.flags.writeable:
            data = tf.view(np.float32)  # each block read as counts, then written as weights
        else:
            data = np.empty(len(tf), dtype=np.float32)
        for lo in range(0, len(data), _WEIGH_BLOCK):
            hi = min(lo + _WEIGH_BLOCK, len(data))
            rows = np.searchsorted(counts.indptr, np.arange(lo, hi), side="right") - 1
            f = tf[lo:hi].astype(np.float64)
            data[lo:hi] = term_idf[rows] * f / (f + norm[counts.indices[lo:hi]])
        matrix = sparse.csr_matrix(
            (data, counts.indices.astype(np.int32, copy=False),
             counts.indptr.astype(np.int64, copy=False)),
            shape=(n_terms, n_docs),
        )  # fmt: skip
        vocab = {t: i for i, t in enumerate(counts.terms)}
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


def _check_parameters(k1: float, b: float) -> None:
    if k1 < 0 or not 0.0 <= b <= 1.0:
        raise InvalidInputError(f"BM25 parameters out of range: k1={k1}, b={b}")


def _sorted_rank(terms: Sequence[str]) -> npt.NDArray[np.int64]:
    """Each term's position in ``sorted(terms)`` (the terms are distinct)."""
    rank = np.empty(len(terms), dtype=np.int64)
    rank[sorted(range(len(terms)), key=terms.__getitem__)] = np.arange(len(terms))
    return rank


#: The kept frequencies' file format (:meth:`TermCounts.save`).
COUNTS_FORMAT = 1

#: A reused block, or a segment to read: one entry of :meth:`TermCounts.update`'s plan.
Block = int | Callable[[], bytes]

#: The most (term, document) pairs :meth:`TermCounts.update` reads before it leaves the build
#: to :meth:`TermCounts.from_segments` (≈ 200 MB of its temporaries; about 3,000 of the
#: benchmark's ten-minute talks).
UPDATE_READ_PAIRS = 2_000_000


@dataclass
class TermCounts:
    """The term frequencies an index is weighed from: term-major (CSR, a row per term, the
    terms sorted, each row's documents ascending), and the documents in named blocks (a
    caller's segments: one per item, named by what the item's segment was made from)."""

    terms: list[str]
    indptr: npt.NDArray[np.int64]
    indices: npt.NDArray[np.int32]
    tf: npt.NDArray[np.int32]
    doc_len: npt.NDArray[np.int32]
    names: list[str] = field(default_factory=list)
    """Each block's name, in document order."""
    sizes: list[int] = field(default_factory=list)
    """Each block's number of documents."""

    @classmethod
    def from_segments(
        cls, segments: Iterable[bytes], names: Sequence[str] | None = None
    ) -> TermCounts:
        """The frequencies of :func:`encode_segment` outputs, in document order (``names``:
        each segment's, as a block; by default its number).

        In bounded memory: one pass keeps the vocabulary, document lengths and frequencies
        and writes each segment's distinct (term, document, count) triples (12 bytes a pair)
        to a temporary file; then each segment's triples are read back and placed straight
        into the term-major arrays (8 bytes a non-zero) — no array over every token or every
        pair, no COO matrix. (Held in memory, the pairs were 84–168 MB of the index stage at
        10,000 items, with their doubling.)"""
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
            # The terms in sorted order: a row's place is its term's rank.
            terms = list(vocab)
            rank = _sorted_rank(terms)
            df_sorted = np.zeros(len(terms), dtype=np.int64)
            df_sorted[rank] = df[: len(terms)]
            doc_len = (np.concatenate(lens) if lens else np.zeros(0, np.int64)).astype(np.int32)
            sizes = [len(x) for x in lens]
            del lens
            indptr = np.zeros(len(terms) + 1, dtype=np.int64)
            np.cumsum(df_sorted, out=indptr[1:])
            indices = np.empty(int(indptr[-1]), dtype=np.int32)
            tf = np.empty(int(indptr[-1]), dtype=np.int32)
            fill = indptr[:-1].copy()  # where each term's next (document, count) goes
            spill.seek(0)
            for lo, hi in itertools.pairwise(bounds):  # segment by segment, in document order
                if hi == lo:
                    continue
                got = np.empty(3 * (hi - lo), dtype=np.int32)
                if spill.readinto(got.data.cast("B")) != got.nbytes:
                    raise OSError("the temporary file of BM25 pairs was cut short")
                ids, docs, counts = got.reshape(3, hi - lo)
                rows = rank[ids]
                # A segment's triples come term by term (each term's run contiguous).
                starts = np.flatnonzero(np.diff(ids, prepend=-1))
                runs = np.diff(np.r_[starts, len(ids)])
                pos = fill[rows] + (np.arange(len(ids)) - np.repeat(starts, runs))
                indices[pos] = docs
                tf[pos] = counts
                fill[rows[starts]] += runs
        return cls(sorted(terms), indptr, indices, tf, doc_len,
                   list(names) if names is not None else [str(i) for i in range(len(sizes))],
                   sizes)  # fmt: skip

    def update(
        self, plan: Sequence[Block], names: Sequence[str], *, max_read: int | None = None
    ) -> TermCounts | None:
        """The frequencies of the blocks ``plan`` names, in order — each an int (this one's
        block of that number, reused) or a callable giving a segment (read now) — named
        ``names``: what :meth:`from_segments` gives for those segments, computed from the
        reused blocks' kept frequencies (array work over them) and the read segments only.
        None when the reused blocks are not in their kept order (then every segment must be
        read: rows would need sorting again), and as soon as the read segments hold more than
        ``max_read`` distinct (term, document) pairs (:data:`UPDATE_READ_PAIRS` when None,
        read at the call): the update's temporaries take about 100 bytes a read pair (a first
        build after a 100-item seed: 1.2 GB at 10,000 items), :meth:`from_segments`'s stay
        bounded, so most of a library read again is built that way."""
        reused = [p for p in plan if isinstance(p, int)]
        if (
            len(names) != len(plan)
            or any(not 0 <= p < len(self.sizes) for p in reused)
            or any(b <= a for a, b in itertools.pairwise(reused))
        ):
            return None
        old_starts = np.zeros(len(self.sizes) + 1, dtype=np.int64)
        np.cumsum(self.sizes, out=old_starts[1:])
        # Read the new segments; each block's size and (for reused ones) the shift of its
        # documents.
        read: list[tuple[int, list[str], _Pairs]] = []  # (first document, terms, pairs)
        sizes: list[int] = []
        shift = np.zeros(len(self.sizes), dtype=np.int64)
        gone = np.ones(len(self.sizes), dtype=bool)  # the kept blocks no longer in the plan
        budget = UPDATE_READ_PAIRS if max_read is None else max_read
        at = pairs_read = 0
        for p in plan:
            if isinstance(p, int):
                shift[p], gone[p] = at - old_starts[p], False
                size = self.sizes[p]
            else:
                seg_terms, pairs = _local_pairs(p())
                pairs_read += len(pairs.local)
                if pairs_read > budget:
                    return None
                read.append((at, seg_terms, pairs))
                size = len(pairs.lens)
            sizes.append(size)
            at += size
        n_docs = at
        # Old documents → new (-1: dropped), applied to every kept non-zero.
        dropped = np.repeat(gone, self.sizes)
        remap = np.arange(len(self.doc_len), dtype=np.int64) + np.repeat(shift, self.sizes)
        remap[dropped] = -1
        moved = remap.astype(np.int32)[self.indices] if len(self.indices) else self.indices
        keep = moved >= 0
        kept_docs = moved[keep]
        kept_tf = self.tf[keep]
        below = np.zeros(len(keep) + 1, dtype=np.int64)
        np.cumsum(keep, out=below[1:])
        kept_per_row = below[self.indptr[1:]] - below[self.indptr[:-1]]
        del moved, keep, below
        # The terms after the update: the kept ones and the read segments' (sorted).
        extra = {t for _, ts, _ in read for t in ts}.difference(self.terms)
        terms = sorted(extra.union(self.terms)) if extra else list(self.terms)
        where = {t: i for i, t in enumerate(terms)} if extra or read else {}
        old_rows = (
            np.fromiter((where[t] for t in self.terms), dtype=np.int64, count=len(self.terms))
            if extra else np.arange(len(self.terms), dtype=np.int64)
        )  # fmt: skip
        # The read segments' non-zeros as (row, document, count), by row then document.
        parts = [
            (np.fromiter(map(where.__getitem__, ts), np.int64, len(ts))[pr.local], pr.doc + first,
             pr.tf)
            for first, ts, pr in read
        ]  # fmt: skip
        new_rows = np.concatenate([x[0] for x in parts]) if parts else np.zeros(0, np.int64)
        new_docs = np.concatenate([x[1] for x in parts]) if parts else np.zeros(0, np.int64)
        new_tf = np.concatenate([x[2] for x in parts]) if parts else np.zeros(0, np.int64)
        order = np.lexsort((new_docs, new_rows))
        new_rows, new_docs, new_tf = new_rows[order], new_docs[order], new_tf[order]
        # Where each new non-zero goes among the kept ones of its row (rows' documents stay
        # ascending: the kept ones kept their order, none of them is a read document).
        kept_ptr = np.zeros(len(terms) + 1, dtype=np.int64)
        kept_ptr[old_rows + 1] = kept_per_row
        np.cumsum(kept_ptr, out=kept_ptr)
        at_kept = np.empty(len(new_rows), dtype=np.int64)
        run_starts = np.flatnonzero(np.diff(new_rows, prepend=-1))
        for lo, hi in itertools.pairwise([*run_starts.tolist(), len(new_rows)]):
            r = int(new_rows[lo])
            a, z = int(kept_ptr[r]), int(kept_ptr[r + 1])
            at_kept[lo:hi] = a + np.searchsorted(kept_docs[a:z], new_docs[lo:hi])
        indices = np.insert(kept_docs, at_kept, new_docs.astype(np.int32))
        tf = np.insert(kept_tf, at_kept, new_tf.astype(np.int32))
        del kept_docs, kept_tf
        per_row = np.diff(kept_ptr) + np.bincount(new_rows, minlength=len(terms))
        # Terms no document has any more are dropped.
        alive = per_row > 0
        if not alive.all():
            terms = [t for t, a in zip(terms, alive.tolist(), strict=True) if a]
            per_row = per_row[alive]
        indptr = np.zeros(len(terms) + 1, dtype=np.int64)
        np.cumsum(per_row, out=indptr[1:])
        lens = [
            self.doc_len[old_starts[p] : old_starts[p + 1]] if isinstance(p, int) else None
            for p in plan
        ]
        read_lens = iter(pr.lens for _, _, pr in read)
        doc_len = np.concatenate(
            [x if x is not None else next(read_lens) for x in lens] or [np.zeros(0, np.int32)]
        ).astype(np.int32)
        assert len(doc_len) == n_docs
        return TermCounts(terms, indptr, indices.astype(np.int32, copy=False),
                          tf.astype(np.int32, copy=False), doc_len, list(names), sizes)  # fmt: skip

    # -- kept between builds ------------------------------------------------------------

    def save(self, path: Path) -> None:
        """Keep the frequencies in ``path`` (derived: :func:`arkai.adapters.itemcache.
        write_checked`, a header line with the digest of the rest): a JSON line (format,
        blocks' names and sizes, the number of terms and of non-zeros, the terms' bytes),
        the terms one a line, then ``indptr`` (``int64``), ``indices``, ``tf`` and
        ``doc_len`` (``int32``), little-endian."""
        text = "".join(t + "\n" for t in self.terms).encode("utf-8")
        head = json.dumps(
            {"format": COUNTS_FORMAT, "blocks": [[n, s] for n, s in zip(self.names, self.sizes,
             strict=True)], "terms": len(self.terms), "nnz": len(self.indices),
             "term_bytes": len(text)}, ensure_ascii=False, separators=(",", ":"),
        ).encode("utf-8") + b"\n"  # fmt: skip
        arrays = (
            self.indptr.astype("<i8", copy=False),
            self.indices.astype("<i4", copy=False),
            self.tf.astype("<i4", copy=False),
            self.doc_len.astype("<i4", copy=False),
        )
        write_checked(path, head, text, *(np.ascontiguousarray(a).data.cast("B") for a in arrays))

    @classmethod
    def load(cls, path: Path) -> TermCounts | None:
        """The frequencies :meth:`save` kept; None when the file is missing, damaged (its
        digest) or does not add up (sizes, pointers, documents, counts, terms' order)."""
        kept = read_checked_head(path, COUNTS_FORMAT)
        if kept is None:
            return None
        doc, rest = kept
        try:
            blocks, n_terms, nnz, at = doc["blocks"], doc["terms"], doc["nnz"], doc["term_bytes"]
            terms = text_lines(rest, at)  # (None unless `at` is a length of whole lines)
            if terms is None or not (
                isinstance(blocks, list)
                and all(
                    isinstance(x, list)
                    and len(x) == 2
                    and isinstance(x[0], str)
                    and type(x[1]) is int
                    and x[1] >= 0
                    for x in blocks
                )
                and all(type(v) is int and v >= 0 for v in (n_terms, nnz))
            ):
                return None
            names, sizes = [x[0] for x in blocks], [x[1] for x in blocks]
            n_docs = sum(sizes)
            if len(rest) != at + 8 * (n_terms + 1) + 4 * (2 * nnz + n_docs):
                return None
            indptr = np.frombuffer(rest, "<i8", n_terms + 1, at)
            indices = np.frombuffer(rest, "<i4", nnz, at + 8 * (n_terms + 1))
            tf = np.frombuffer(rest, "<i4", nnz, at + 8 * (n_terms + 1) + 4 * nnz)
            doc_len = np.frombuffer(rest, "<i4", n_docs, at + 8 * (n_terms + 1) + 8 * nnz)
        except (ValueError, TypeError, KeyError, UnicodeDecodeError):
            return None
        counts = np.diff(indptr)
        if (
            len(terms) != n_terms
            or any(b <= a for a, b in itertools.pairwise(terms))
            or indptr[0] != 0
            or indptr[-1] != nnz
            or (counts <= 0).any()
            or (nnz and (int(indices.min()) < 0 or int(indices.max()) >= n_docs))
            or (nnz and int(tf.min()) < 1)
            or (n_docs and int(doc_len.min()) < 0)
        ):
            return None
        # Within a row the documents ascend (a row's last one to the next row's first may not).
        rising = np.diff(indices.astype(np.int64)) > 0
        rising[indptr[1:-1] - 1] = True
        if not rising.all():
            return None
        # Each document's length is at least its counts' sum.
        if nnz and (np.bincount(indices, weights=tf, minlength=n_docs) > doc_len).any():
            return None
        return cls(terms, indptr.astype(np.int64), indices, tf, doc_len, names, sizes)


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
        or len(set(terms)) != len(terms)
        or int(lens.sum()) != len(local)
        or (len(local) and (int(local.min()) < 0 or int(local.max()) >= len(terms)))
    ):
        raise InvalidInputError(
            "not a BM25 segment: its lengths or ids do not add up (or a term is listed twice)"
        )
    return terms, lens, local


@dataclass(frozen=True)
class _Pairs:
    """A segment's distinct (term, document) pairs, by term then document: term ids and
    documents local to the segment, with each pair's count."""

    lens: npt.NDArray[np.int64]
    doc: npt.NDArray[np.int64]
    local: npt.NDArray[np.int64]
    tf: npt.NDArray[np.int64]


def _local_pairs(raw: bytes) -> tuple[list[str], _Pairs]:
    """Decode a segment: its terms and its distinct (term, document) pairs, by term then
    document (term ids into the segment's terms)."""
    terms, lens, local = decode_segment(raw)
    width = max(len(lens), 1)
    doc = np.repeat(np.arange(len(lens), dtype=np.int64), lens)
    keys, tf = np.unique(local.astype(np.int64) * width + doc, return_counts=True)
    return terms, _Pairs(lens, keys % width, keys // width, tf.astype(np.int64))


def _pairs(raw: bytes, vocab: dict[str, int]) -> tuple[npt.NDArray[np.int64], _Pairs]:
    """Decode a segment: its terms' ids in ``vocab`` (new terms numbered on from its size)
    and its distinct (term, document) pairs."""
    terms, pairs = _local_pairs(raw)
    # A segment's terms are distinct: its new ones, in order, get the next ids.
    new = [t for t in terms if t not in vocab]
    vocab.update(zip(new, range(len(vocab), len(vocab) + len(new)), strict=True))
    remap = np.fromiter(map(vocab.__getitem__, terms), dtype=np.int64, count=len(terms))
    return remap, pairs


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
