"""The term frequencies a BM25 index is weighed from, and the file they are kept in between
builds (:mod:`arkai.search.bm25` weighs them; the index stage keeps them).

A library's documents come in segments, one per item (:func:`encode_segment`: the segment's
own vocabulary and its tokens as ids into it), which the index stage caches per item. Their
frequencies are term-major (CSR: a row per term, the terms sorted, each row's documents
ascending) and the documents in named blocks, one a segment.

The frequencies are kept in a file (:class:`CountsFile`, sealed like the item cache's other
records by :func:`arkai.adapters.itemcache.write_checked_parts`)::

    a JSON line   {"format": 2, "blocks": [[name, documents], …], "terms": T, "nnz": N,
                   "term_bytes": B}
    the terms     one a line (B bytes)
    indptr        int64 × (T + 1)
    doc_len       int32 × documents
    pairs         int32 × 2 × N: (document, count) of each non-zero, row after row

and only the terms, the pointers and the lengths are held in memory: the pairs are read and
written a block of rows at a time (:data:`PAIR_BLOCK` non-zeros), so the index stage's
lexical step holds a few blocks whatever the library's size (issue 17: holding them took
≈ 25 KB an item, 2.5 GB at 100,000 items).

- :func:`build_counts` makes the file from every segment: one pass keeps the vocabulary,
  document frequencies and lengths and spills each segment's distinct (term, document,
  count) triples to a temporary file; then the rows are placed :data:`RANGE_PAIRS` non-zeros
  at a time, one pass over the spilled triples per range of rows.
- :func:`update_counts` makes it from the kept file and the segments of changed blocks
  only (unchanged segments are never read): one pass counts what each row keeps, a second
  writes each block of rows — the kept pairs, their documents renumbered, with the read
  segments' pairs merged in.

Both give the same file, byte for byte, for the same segments (tested).
"""

from __future__ import annotations

import itertools
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import numpy as np
import numpy.typing as npt

from arkai.adapters.fs import byte_view, read_array
from arkai.adapters.itemcache import checked_head, open_checked, text_lines, write_checked_parts
from arkai.errors import InvalidInputError

__all__ = [
    "COUNTS_FORMAT", "PAIR_BLOCK", "RANGE_PAIRS", "UPDATE_READ_PAIRS", "Block", "CountsFile",
    "TermCounts", "build_counts", "decode_segment", "encode_segment", "update_counts",
]  # fmt: skip

#: The kept frequencies' file format (:class:`CountsFile`; format 1 held the documents and the
#: counts in two arrays, read whole).
COUNTS_FORMAT = 2

#: Non-zeros read, checked or written at a time (a block holds whole rows: more when one row
#: alone has more). 512 KB of pairs; a block's temporaries take ≈ 100 bytes a non-zero, each
#: under the 1 MiB from which a stage process maps a block afresh (``tune_malloc``): served
#: from the heap and reused, not faulted in again for every block (with 2 MB blocks, ≈ 0.5 s
#: of kernel time a run at 10,000 items in the lexical step).
PAIR_BLOCK = 1 << 16

#: Non-zeros a build from segments places per pass over its spilled triples (64 MB of pairs;
#: a library of 10,000 ten-minute talks has ≈ 7 million: one pass).
RANGE_PAIRS = 1 << 23

#: The most (term, document) pairs :func:`update_counts` reads before it leaves the build to
#: :func:`build_counts` (≈ 200 MB of its temporaries; about 3,000 of the benchmark's
#: ten-minute talks).
UPDATE_READ_PAIRS = 2_000_000

#: Triples read at a time from a build's spill file (3 MB; ≈ 15 MB of temporaries).
_SPILL_CHUNK = 1 << 18

#: A reused block, or a segment to read: one entry of :func:`update_counts`'s plan.
Block = int | Callable[[], bytes]

IntArray = npt.NDArray[np.int64]
Int32Array = npt.NDArray[np.int32]

#: (first row, end row, documents, counts) of a block of whole rows.
RowBlock = tuple[int, int, Int32Array, Int32Array]


@dataclass
class TermCounts:
    """Term frequencies held in memory (a small index's, a test's): what :class:`CountsFile`
    keeps in a file."""

    terms: list[str]
    indptr: IntArray
    indices: Int32Array
    tf: Int32Array
    doc_len: Int32Array
    names: list[str] = field(default_factory=list)
    """Each block's name, in document order."""
    sizes: list[int] = field(default_factory=list)
    """Each block's number of documents."""

    @classmethod
    def from_segments(
        cls, segments: Iterable[bytes], names: Sequence[str] | None = None
    ) -> TermCounts:
        """The frequencies of :func:`encode_segment` outputs, in document order (``names``:
        each segment's, as a block; by default its number): :func:`build_counts`'s, read."""
        with (
            tempfile.TemporaryDirectory(prefix="arkai-counts-") as tmp,
            build_counts(segments, names, Path(tmp) / "counts") as kept,
        ):
            return kept.to_memory()

    def blocks(self, budget: int | None = None) -> Iterator[RowBlock]:
        """The non-zeros by blocks of whole rows (views; :data:`PAIR_BLOCK` non-zeros a block
        by default)."""
        for r0, r1 in itertools.pairwise(row_cuts(self.indptr, budget)):
            lo, hi = int(self.indptr[r0]), int(self.indptr[r1])
            yield r0, r1, self.indices[lo:hi], self.tf[lo:hi]


class CountsFile:
    """Kept frequencies in a file (the module docstring): terms, pointers, document lengths
    and blocks in memory; the (document, count) pairs read a block of rows at a time. Made by
    :meth:`open` (a kept file, checked), :func:`build_counts` or :func:`update_counts`; holds
    the file open (``close``, or use it as a context manager)."""

    def __init__(
        self, fh: BinaryIO, terms: list[str], indptr: IntArray, doc_len: Int32Array,
        names: list[str], sizes: list[int], pairs_at: int,
    ) -> None:  # fmt: skip
        self._fh = fh
        self.terms = terms
        self.indptr = indptr
        self.doc_len = doc_len
        self.names = names
        self.sizes = sizes
        self._pairs_at = pairs_at

    @property
    def nnz(self) -> int:
        return int(self.indptr[-1])

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> CountsFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def pairs(self, lo: int, hi: int) -> Int32Array:
        """Non-zeros ``lo`` to ``hi`` as (document, count) rows. OSError when the file ends
        first (it was cut short since it was opened)."""
        got: Int32Array = read_array(
            self._fh.fileno(),
            (hi - lo, 2),
            "<i4",
            self._pairs_at + 8 * lo,
            f"{self._fh.name} (kept term counts, non-zeros {lo} to {hi})",
        )
        return got.astype(np.int32, copy=False)

    def blocks(self, budget: int | None = None) -> Iterator[RowBlock]:
        """The non-zeros by blocks of whole rows, each read when reached (:data:`PAIR_BLOCK`
        non-zeros a block by default)."""
        for r0, r1 in itertools.pairwise(row_cuts(self.indptr, budget)):
            got = self.pairs(int(self.indptr[r0]), int(self.indptr[r1]))
            yield r0, r1, got[:, 0], got[:, 1]

    def to_memory(self) -> TermCounts:
        """Every pair read, into the documents' and counts' arrays (a block at a time)."""
        indices = np.empty(self.nnz, dtype=np.int32)
        tf = np.empty(self.nnz, dtype=np.int32)
        for r0, r1, docs, counts in self.blocks():
            lo, hi = int(self.indptr[r0]), int(self.indptr[r1])
            indices[lo:hi], tf[lo:hi] = docs, counts
        return TermCounts(list(self.terms), self.indptr, indices, tf, self.doc_len,
                          list(self.names), list(self.sizes))  # fmt: skip

    @classmethod
    def open(cls, path: Path) -> CountsFile | None:
        """The frequencies kept in ``path``; None when the file is missing, damaged (its
        digest) or does not add up (sizes, pointers, documents, counts, the terms' order).
        Checked in one pass, a block at a time."""
        return open_checked(path, cls._checked)

    @classmethod
    def _checked(cls, fh: BinaryIO) -> CountsFile | None:
        checked = checked_head(fh, COUNTS_FORMAT)
        if checked is None:
            return None
        digest, h, doc = checked
        blocks, n_terms, nnz, at = doc["blocks"], doc["terms"], doc["nnz"], doc["term_bytes"]
        if not (
            isinstance(blocks, list)
            and all(
                isinstance(x, list)
                and len(x) == 2
                and isinstance(x[0], str)
                and type(x[1]) is int
                and x[1] >= 0
                for x in blocks
            )
            and all(type(v) is int and v >= 0 for v in (n_terms, nnz, at))
        ):
            return None
        names, sizes = [x[0] for x in blocks], [x[1] for x in blocks]
        n_docs = sum(sizes)
        start = fh.tell()
        if os.fstat(fh.fileno()).st_size != start + at + 8 * (n_terms + 1) + 4 * n_docs + 8 * nnz:
            return None
        head = fh.read(at + 8 * (n_terms + 1) + 4 * n_docs)
        h.update(head)
        terms = text_lines(head, at)  # (None unless `at` is a length of whole lines)
        if terms is None or len(terms) != n_terms:
            return None
        indptr = np.frombuffer(head, "<i8", n_terms + 1, at).astype(np.int64)
        doc_len = np.frombuffer(head, "<i4", n_docs, at + 8 * (n_terms + 1)).astype(np.int32)
        if (
            any(b <= a for a, b in itertools.pairwise(terms))
            or indptr[0] != 0
            or indptr[-1] != nnz
            or (np.diff(indptr) <= 0).any()
            or (n_docs and int(doc_len.min()) < 0)
        ):
            return None
        kept = cls(fh, terms, indptr, doc_len, names, sizes, start + len(head))
        sums = np.zeros(n_docs, dtype=np.float64)  # (whole counts: exact below 2**53)
        held: list[Int32Array] = []  # blocks' pairs not yet summed
        for r0, r1 in itertools.pairwise(row_cuts(indptr)):
            got = kept.pairs(int(indptr[r0]), int(indptr[r1]))
            h.update(byte_view(got))
            docs, tf = got[:, 0], got[:, 1]
            if int(docs.min()) < 0 or int(docs.max()) >= n_docs or int(tf.min()) < 1:
                return None
            # Within a row the documents ascend (a row's last one to the next row's first
            # may not).
            rising = np.diff(docs.astype(np.int64)) > 0
            rising[indptr[r0 + 1 : r1] - indptr[r0] - 1] = True
            if not rising.all():
                return None
            held.append(got)
            if sum(len(g) for g in held) >= 4 * n_docs or r1 == len(indptr) - 1:
                # Summed four documents' worth of pairs at a time: a sum per block made and
                # dropped two arrays of every document's (≈ 1.5 MB each at 10,000 items) for
                # each block, mapped afresh each time in a stage (≈ 0.2 s of page faults).
                both = np.concatenate(held)
                sums += np.bincount(both[:, 0], weights=both[:, 1], minlength=n_docs)
                held.clear()
        # Each document's length is at least its counts' sum.
        if "sha256:" + h.hexdigest() != digest or (sums > doc_len).any():
            return None
        return kept


def row_cuts(indptr: IntArray, budget: int | None = None) -> list[int]:
    """Row boundaries, from 0 to the last row's end, cutting the rows into blocks of at most
    ``budget`` non-zeros (:data:`PAIR_BLOCK` when None, read at the call; a row with more
    alone)."""
    budget = PAIR_BLOCK if budget is None else budget
    n = len(indptr) - 1
    cuts = [0]
    while cuts[-1] < n:
        r = int(np.searchsorted(indptr, indptr[cuts[-1]] + budget, side="right")) - 1
        cuts.append(min(n, max(r, cuts[-1] + 1)))
    return cuts


def _write(
    path: Path, terms: list[str], indptr: IntArray, doc_len: Int32Array, names: Sequence[str],
    sizes: Sequence[int], pairs: Iterable[npt.NDArray[np.integer]],
) -> CountsFile:  # fmt: skip
    """Keep the frequencies in ``path`` (atomically), the pairs given a block at a time, and
    open the file written."""
    text = "".join(t + "\n" for t in terms).encode("utf-8")
    nnz = int(indptr[-1])
    head = json.dumps(
        {"format": COUNTS_FORMAT, "blocks": [[n, s] for n, s in zip(names, sizes, strict=True)],
         "terms": len(terms), "nnz": nnz, "term_bytes": len(text)},
        ensure_ascii=False, separators=(",", ":"),
    ).encode("utf-8") + b"\n"  # fmt: skip

    def fill(put: Callable[[bytes | memoryview], None]) -> None:
        put(head)
        put(text)
        put(byte_view(np.ascontiguousarray(indptr, "<i8")))
        put(byte_view(np.ascontiguousarray(doc_len, "<i4")))
        done = 0
        for block in pairs:
            arr = np.ascontiguousarray(block, "<i4")
            put(byte_view(arr))
            done += len(arr)
        if done != nnz:
            raise ValueError(f"{done} non-zeros written, {nnz} expected")

    write_checked_parts(path, fill)
    fh = open(path, "rb")  # noqa: SIM115 (kept open by the object)
    size = os.fstat(fh.fileno()).st_size
    return CountsFile(fh, list(terms), indptr.astype(np.int64), doc_len.astype(np.int32),
                      list(names), list(sizes), size - 8 * nnz)  # fmt: skip


def build_counts(
    segments: Iterable[bytes], names: Sequence[str] | None, path: Path, *,
    range_pairs: int | None = None,
) -> CountsFile:  # fmt: skip
    """Keep the frequencies of :func:`encode_segment` outputs, in document order (``names``:
    each segment's, as a block; by default its number), in ``path`` — in bounded memory (the
    module docstring): the distinct triples spilled to an unnamed file beside ``path``, then
    placed :data:`RANGE_PAIRS` (or ``range_pairs``) non-zeros at a time."""
    budget = RANGE_PAIRS if range_pairs is None else range_pairs
    vocab: dict[str, int] = {}
    df = np.zeros(1024, dtype=np.int64)
    lens: list[npt.NDArray[np.int64]] = []
    n_docs = n_pairs = 0
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryFile(prefix="arkai-bm25-", dir=path.parent) as spill:
        for raw in segments:
            remap, seg = _pairs(raw, vocab)
            if len(vocab) > len(df):
                grow = max(len(df), len(vocab) - len(df))
                df = np.concatenate([df, np.zeros(grow, np.int64)])
            df[remap] += np.bincount(seg.local, minlength=len(remap))
            triples = np.empty((len(seg.local), 3), dtype="<i4")  # term, document, count
            triples[:, 0], triples[:, 1], triples[:, 2] = remap[seg.local], seg.doc + n_docs, seg.tf
            spill.write(byte_view(triples))
            n_pairs += len(triples)
            lens.append(seg.lens)
            n_docs += len(seg.lens)
        spill.flush()
        # The terms in sorted order: a row's place is its term's rank.
        terms = list(vocab)
        del vocab
        rank = sorted_rank(terms)
        df_sorted = np.zeros(len(terms), dtype=np.int64)
        df_sorted[rank] = df[: len(terms)]
        indptr = np.zeros(len(terms) + 1, dtype=np.int64)
        np.cumsum(df_sorted, out=indptr[1:])
        doc_len = (np.concatenate(lens) if lens else np.zeros(0, np.int64)).astype(np.int32)
        sizes = [len(x) for x in lens]
        del lens, df, df_sorted
        block_names = list(names) if names is not None else [str(i) for i in range(len(sizes))]

        def placed() -> Iterator[Int32Array]:
            for r0, r1 in itertools.pairwise(row_cuts(indptr, budget)):
                base = int(indptr[r0])
                out = np.empty((int(indptr[r1]) - base, 2), dtype=np.int32)
                fill = indptr[r0:r1] - base  # where each row's next non-zero goes
                for lo in range(0, n_pairs, _SPILL_CHUNK):
                    got = read_array(
                        spill.fileno(),
                        (min(_SPILL_CHUNK, n_pairs - lo), 3),
                        "<i4",
                        12 * lo,
                        "the temporary file of BM25 pairs",
                    )
                    rows = rank[got[:, 0]]
                    mine = (rows >= r0) & (rows < r1)
                    if not mine.any():
                        continue
                    rows = rows[mine]
                    # Stable: a row's documents stay in the order spilled (ascending).
                    order = np.argsort(rows, kind="stable")
                    rows, docs, tf = rows[order], got[mine, 1][order], got[mine, 2][order]
                    starts = np.flatnonzero(np.diff(rows, prepend=-1))
                    runs = np.diff(np.r_[starts, len(rows)])
                    pos = fill[rows - r0] + (np.arange(len(rows)) - np.repeat(starts, runs))
                    out[pos, 0], out[pos, 1] = docs, tf
                    fill[rows[starts] - r0] += runs
                yield out
                del out  # (before the next range's)

        return _write(path, sorted(terms), indptr, doc_len, block_names, sizes, placed())


def update_counts(
    kept: CountsFile, plan: Sequence[Block], names: Sequence[str], path: Path, *,
    max_read: int | None = None,
) -> CountsFile | None:  # fmt: skip
    """Keep in ``path`` the frequencies of the blocks ``plan`` names, in order — each an int
    (``kept``'s block of that number, reused) or a callable giving a segment (read now) —
    named ``names``: what :func:`build_counts` keeps for those segments, made from the kept
    pairs (read a block of rows at a time) and the read segments only. ``kept`` itself when
    the plan is its blocks as they are (nothing written). None when the reused blocks are
    not in their kept order (then every segment must be read: rows would need sorting
    again), and as soon as the read segments hold more than ``max_read`` distinct (term,
    document) pairs (:data:`UPDATE_READ_PAIRS` when None, read at the call): their pairs are
    held, so most of a library read again is built by :func:`build_counts`."""
    reused = [p for p in plan if isinstance(p, int)]
    if (
        len(names) != len(plan)
        or any(not 0 <= p < len(kept.sizes) for p in reused)
        or any(b <= a for a, b in itertools.pairwise(reused))
    ):
        return None
    if list(plan) == list(range(len(kept.sizes))) and list(names) == kept.names:
        return kept
    old_starts = np.zeros(len(kept.sizes) + 1, dtype=np.int64)
    np.cumsum(kept.sizes, out=old_starts[1:])
    # Read the new segments; each block's size and (for reused ones) the shift of its
    # documents.
    read: list[tuple[int, list[str], _Pairs]] = []  # (first document, terms, pairs)
    sizes: list[int] = []
    shift = np.zeros(len(kept.sizes), dtype=np.int64)
    gone = np.ones(len(kept.sizes), dtype=bool)  # the kept blocks no longer in the plan
    budget = UPDATE_READ_PAIRS if max_read is None else max_read
    at = pairs_read = 0
    for p in plan:
        if isinstance(p, int):
            shift[p], gone[p] = at - old_starts[p], False
            size = kept.sizes[p]
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
    # Old documents → new (-1: dropped).
    remap = np.arange(len(kept.doc_len), dtype=np.int64) + np.repeat(shift, kept.sizes)
    remap[np.repeat(gone, kept.sizes)] = -1
    # The terms after the update: the kept ones and the read segments' (sorted).
    extra = {t for _, ts, _ in read for t in ts}.difference(kept.terms)
    terms = sorted(extra.union(kept.terms)) if extra else list(kept.terms)
    where = {t: i for i, t in enumerate(terms)} if extra or read else {}
    n_old = len(kept.terms)
    old_rows = (
        np.fromiter((where[t] for t in kept.terms), dtype=np.int64, count=n_old)
        if extra else np.arange(n_old, dtype=np.int64)
    )  # fmt: skip
    # The read segments' non-zeros as (row, document, count), by row then document.
    parts = [
        (np.fromiter(map(where.__getitem__, ts), np.int64, len(ts))[pr.local], pr.doc + first,
         pr.tf)
        for first, ts, pr in read
    ]  # fmt: skip
    del where
    new_rows = np.concatenate([x[0] for x in parts]) if parts else np.zeros(0, np.int64)
    new_docs = np.concatenate([x[1] for x in parts]) if parts else np.zeros(0, np.int64)
    new_tf = np.concatenate([x[2] for x in parts]) if parts else np.zeros(0, np.int64)
    del parts
    order = np.lexsort((new_docs, new_rows))
    new_rows, new_docs, new_tf = new_rows[order], new_docs[order], new_tf[order]
    # What each kept row keeps (a pass over the kept pairs when documents were dropped).
    kept_per_row = np.diff(kept.indptr)
    if gone.any() and n_old:
        kept_per_row = np.zeros(n_old, dtype=np.int64)
        for r0, r1, docs, _ in kept.blocks():
            rows = np.repeat(np.arange(r1 - r0), np.diff(kept.indptr[r0 : r1 + 1]))
            kept_per_row[r0:r1] = np.bincount(rows[remap[docs] >= 0], minlength=r1 - r0)
    n_rows = len(terms)  # the rows the pairs are numbered by (dead rows dropped below)
    per_row = np.zeros(n_rows, dtype=np.int64)
    per_row[old_rows] = kept_per_row
    per_row += np.bincount(new_rows, minlength=n_rows)
    # Terms no document has any more are dropped (their rows hold nothing).
    alive = per_row > 0
    if not alive.all():
        terms = [t for t, a in zip(terms, alive.tolist(), strict=True) if a]
        per_row = per_row[alive]
    indptr = np.zeros(len(terms) + 1, dtype=np.int64)
    np.cumsum(per_row, out=indptr[1:])
    lens = [kept.doc_len[old_starts[p] : old_starts[p + 1]] if isinstance(p, int) else None
            for p in plan]  # fmt: skip
    read_lens = iter(pr.lens for _, _, pr in read)
    doc_len = np.concatenate(
        [x if x is not None else next(read_lens) for x in lens] or [np.zeros(0, np.int32)]
    ).astype(np.int32)
    del lens

    def merged() -> Iterator[Int32Array]:
        """Each block of kept rows, their documents renumbered, with the read pairs of the
        rows up to the block's last merged in (a row's pairs all in one block)."""
        taken = 0  # read pairs written so far
        blocks = kept.blocks() if n_old else iter(())
        for r0, r1, docs, tf in blocks:
            rows = np.repeat(old_rows[r0:r1], np.diff(kept.indptr[r0 : r1 + 1]))
            moved = remap[docs]
            keep = moved >= 0
            rows, moved, tf = rows[keep], moved[keep], tf[keep]
            end = int(old_rows[r1 - 1]) + 1 if r1 < n_old else n_rows
            upto = int(np.searchsorted(new_rows, end))
            if upto > taken:
                key = rows * n_docs + moved
                ins = np.searchsorted(key, new_rows[taken:upto] * n_docs + new_docs[taken:upto])
                moved = np.insert(moved, ins, new_docs[taken:upto])
                tf = np.insert(tf, ins, new_tf[taken:upto])
                taken = upto
            yield np.stack([moved, tf], axis=1)
        if taken < len(new_rows):  # no kept rows
            yield np.stack([new_docs[taken:], new_tf[taken:]], axis=1)

    return _write(path, terms, indptr, doc_len, names, sizes, merged())


def encode_segment(token_lists: Iterable[Sequence[str]]) -> bytes:
    """Some documents' tokens as one segment: a JSON line (the segment's terms in order of
    first appearance, and each document's token count), then the tokens as little-endian
    ``int32`` ids into those terms."""
    vocab: dict[str, int] = {}
    ids: list[int] = []
    lens: list[int] = []
    for tokens in token_lists:
        ids.extend(vocab.setdefault(t, len(vocab)) for t in tokens)
        lens.append(len(tokens))
    head = json.dumps({"lens": lens, "terms": list(vocab)}, ensure_ascii=False)
    return head.encode("utf-8") + b"\n" + np.asarray(ids, dtype="<i4").tobytes()


def decode_segment(raw: bytes) -> tuple[list[str], IntArray, Int32Array]:
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

    lens: IntArray
    doc: IntArray
    local: IntArray
    tf: IntArray


def _local_pairs(raw: bytes) -> tuple[list[str], _Pairs]:
    """Decode a segment: its terms and its distinct (term, document) pairs, by term then
    document (term ids into the segment's terms)."""
    terms, lens, local = decode_segment(raw)
    width = max(len(lens), 1)
    doc = np.repeat(np.arange(len(lens), dtype=np.int64), lens)
    keys, tf = np.unique(local.astype(np.int64) * width + doc, return_counts=True)
    return terms, _Pairs(lens, keys % width, keys // width, tf.astype(np.int64))


def _pairs(raw: bytes, vocab: dict[str, int]) -> tuple[IntArray, _Pairs]:
    """Decode a segment: its terms' ids in ``vocab`` (new terms numbered on from its size)
    and its distinct (term, document) pairs."""
    terms, pairs = _local_pairs(raw)
    # A segment's terms are distinct: its new ones, in order, get the next ids.
    new = [t for t in terms if t not in vocab]
    vocab.update(zip(new, range(len(vocab), len(vocab) + len(new)), strict=True))
    remap = np.fromiter(map(vocab.__getitem__, terms), dtype=np.int64, count=len(terms))
    return remap, pairs


def sorted_rank(terms: Sequence[str]) -> IntArray:
    """Each term's position in ``sorted(terms)`` (the terms are distinct)."""
    rank = np.empty(len(terms), dtype=np.int64)
    rank[sorted(range(len(terms)), key=terms.__getitem__)] = np.arange(len(terms))
    return rank
