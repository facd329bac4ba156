"""The vector lane's store: float32 rows keyed by chunk content hash (DESIGN §7).

A :class:`VectorStore` holds one row per chunk, keyed by the chunk's content hash
(``sha256:…``), for one embedding model. Because the key is the content, re-indexing embeds
only what :meth:`VectorStore.missing` reports — new or changed chunks — and
:meth:`VectorStore.prune` drops the rows of chunks that are gone.

On disk a store is a folder of segments and a record (format 2). A segment is two files named
by the SHA-256 of their content: ``seg-<digest>.npy`` (float32, ``rows`` × ``dim``) and
``seg-<digest>.keys`` (its keys, one per line, in row order). ``meta.json``
(``{"format", "model", "dim", "count", "keys_sha256", "segments"}``, the segments in row
order with their row counts) is written last, and only then are the files of segments it no
longer lists removed; every file is written to a temporary name and renamed into place. So a
crash leaves the old record and every file it names, or the new one. A save writes only the
segments that changed: rows added since the last save go to the last segment (a new one
once it holds :data:`SEGMENT_ROWS`), a segment that lost rows is written again without them
(merged with a neighbour when it falls under half of that and the two fit in one). With one
item changed, a save writes two segments of at most 12 MB at width 384, not the whole store;
DVC hashes, caches and pushes only those files (docs/scale.md).

A store is read by memory-mapping its segments: loading it reads the keys and the record,
not the rows, so the index stage's incremental run never holds the rows it does not touch.
The keys are held as 32-byte ids (:func:`key_id`: the digest a ``sha256:<64 hex>`` key names;
for any other key, a SHA-256 of its text, whose text is kept beside it) in one array with its
sort order, ≈ 40 bytes a row, where a list of strings and a dict held ≈ 400.
A folder whose files disagree with the record (a missing, truncated or edited segment), or
that was built by another model, loads as an empty store, so everything is embedded again
rather than mixed. A folder of format 1 (one ``vectors.npy`` and ``keys.json``, the layout
before) is still read; the next save writes it as segments.

:meth:`VectorStore.search` is an exact dot-product scan (the rows are unit length, so it ranks
by cosine) with ``np.argpartition`` for the top ``k``: 6–9 ms for 100,000 × 384 on one core,
bound by reading the 150 MB of rows from memory.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from arkai.adapters.fs import Reindexed, atomic_write, read_rows
from arkai.adapters.itemcache import Stamp, StatMemo, stamp
from arkai.errors import InvalidInputError, NotFoundError

__all__ = [
    "FORMAT",
    "ID_DTYPE",
    "META_FILE",
    "SEGMENT_ROWS",
    "KeySnapshot",
    "VectorStore",
    "key_id",
    "key_ids",
    "keys_digest",
    "stored_rows",
]

FORMAT = 2
META_FILE = "meta.json"
#: Rows per segment file (12 MB at width 384): a save writes the segments that changed.
SEGMENT_ROWS = 8192
SEGMENT_PREFIX = "seg-"
_SEGMENT_NAME = re.compile(r"seg-[0-9a-f]{32}")
#: The format-1 files (one matrix and its keys), read and replaced by segments on save.
LEGACY_VECTORS = "vectors.npy"
LEGACY_KEYS = "keys.json"

F32 = npt.NDArray[np.float32]
#: Keys as ids, one ``S32`` element each (read them with :func:`_raw`, not by indexing:
#: numpy drops an element's trailing zero bytes).
Ids = npt.NDArray[np.bytes_]
ID_DTYPE = np.dtype("S32")

KEY_PREFIX = "sha256:"
_CANONICAL = re.compile(r"sha256:[0-9a-f]{64}")
#: Prefixed to a key that is not ``sha256:<64 hex>`` before it is hashed into its id, so no
#: such key can take the id of a digest key.
_OTHER_KEY = b"arkai vector key\n"
_HEX_DIGITS = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
_HEX_VALUE = np.full(256, 255, dtype=np.uint8)
_HEX_VALUE[_HEX_DIGITS] = np.arange(16, dtype=np.uint8)
_LINE = len(KEY_PREFIX) + 64 + 1
#: Rows appended since the sort order was made, looked up in a dict, before it is made again.
_RECENT_ROWS = 65_536


def keys_digest(keys: Iterable[str]) -> str:
    """The SHA-256 of ``keys`` one per line (``meta.json``'s ``keys_sha256``)."""
    h = hashlib.sha256()
    for k in keys:
        h.update(k.encode("utf-8"))
        h.update(b"\n")
    return "sha256:" + h.hexdigest()


def key_id(key: str) -> bytes:
    """The 32-byte id of ``key``: the digest it names when it is ``sha256:`` and 64 lowercase
    hex digits (a chunk's or a statement's key), else the SHA-256 of its text."""
    if len(key) == _LINE - 1 and _CANONICAL.fullmatch(key):
        return bytes.fromhex(key[len(KEY_PREFIX) :])
    return hashlib.sha256(_OTHER_KEY + key.encode("utf-8")).digest()


def key_ids(keys: Iterable[str]) -> Ids:
    """The ids of ``keys`` (:func:`key_id`), in order."""
    raw = b"".join(key_id(k) for k in keys)
    return np.frombuffer(raw, dtype=ID_DTYPE).copy()


@dataclass(frozen=True)
class KeySnapshot:
    """A store's keys at one moment: their ids in row order and :func:`keys_digest` of them
    (what an ANN index records it was built for)."""

    ids: Ids
    sha256: str

    @classmethod
    def empty(cls) -> KeySnapshot:
        return cls(np.zeros(0, dtype=ID_DTYPE), keys_digest([]))


def _raw(ids: Ids) -> list[bytes]:
    """Each id's 32 bytes."""
    data = ids.tobytes()
    return [data[i : i + 32] for i in range(0, len(data), 32)]


def _key_text(ids: Ids, other: dict[bytes, str]) -> bytes:
    """The keys of ``ids``, one per line (a ``.keys`` file's bytes); ``other`` gives the text of
    each key that is not a digest key."""
    n = len(ids)
    grid = np.empty((n, _LINE), dtype=np.uint8)
    grid[:, : len(KEY_PREFIX)] = np.frombuffer(KEY_PREFIX.encode(), dtype=np.uint8)
    digits = np.frombuffer(np.ascontiguousarray(ids).tobytes(), dtype=np.uint8).reshape(n, 32)
    grid[:, len(KEY_PREFIX) : _LINE - 1 : 2] = _HEX_DIGITS[digits >> 4]
    grid[:, len(KEY_PREFIX) + 1 : _LINE - 1 : 2] = _HEX_DIGITS[digits & 15]
    grid[:, -1] = ord("\n")
    if not other:
        return grid.tobytes()
    lines = [other[r].encode("utf-8") + b"\n" if r in other else bytes(grid[i])
             for i, r in enumerate(_raw(ids))]  # fmt: skip
    return b"".join(lines)


def _first_bytes(ids: Ids) -> npt.NDArray[np.uint64]:
    """The first 8 bytes of each id as a big-endian number: ids sorted (bytewise, as numpy
    orders them) have these in ascending order."""
    whole = np.ascontiguousarray(ids, dtype=ID_DTYPE).view(">u8")
    return whole[:: ID_DTYPE.itemsize // 8].astype(np.uint64)


def _parse_keys(text: bytes, count: int) -> tuple[Ids, dict[bytes, str]] | None:
    """The ids of a ``.keys`` file's ``count`` lines and the text of each key that is not a
    digest key; None when it does not hold ``count`` one-per-line keys."""
    if count and len(text) == count * _LINE:
        grid = np.frombuffer(text, dtype=np.uint8).reshape(count, _LINE)
        prefix = np.frombuffer(KEY_PREFIX.encode(), dtype=np.uint8)
        values = _HEX_VALUE[grid[:, len(KEY_PREFIX) : _LINE - 1]]
        if (
            (grid[:, : len(KEY_PREFIX)] == prefix).all()
            and (grid[:, -1] == ord("\n")).all()
            and (values != 255).all()
        ):
            digits = (values[:, 0::2] << 4) | values[:, 1::2]
            return np.frombuffer(digits.tobytes(), dtype=ID_DTYPE).copy(), {}
    try:
        keys = text.decode("utf-8").split("\n")
    except UnicodeDecodeError:
        return None
    if keys[-1] != "" or len(keys) - 1 != count or not all(keys[:-1]):
        return None
    return _ids_of(keys[:-1])


def _ids_of(keys: Sequence[str]) -> tuple[Ids, dict[bytes, str]]:
    """The ids of ``keys`` and the text of those that are not digest keys."""
    ids = key_ids(keys)
    other = {r: k for r, k in zip(_raw(ids), keys, strict=True) if not _CANONICAL.fullmatch(k)}
    return ids, other


@dataclass
class _Segment:
    """Consecutive rows of the store: ``rows`` (memory-mapped when ``name`` is set and the
    segment is as saved, else in memory) and their key ids."""

    rows: F32
    ids: Ids
    name: str | None = None
    """The saved segment these rows are, unchanged; None once they differ from any file."""


class VectorStore:
    """Rows of width ``dim`` from the embedding model ``model_name`` made by its ``recipe``
    (:func:`arkai.search.embed.recipe_of`; "" for none), keyed by content hash."""

    def __init__(self, dim: int, model_name: str, recipe: str = "") -> None:
        if dim < 1:
            raise InvalidInputError(f"vector dimension must be >= 1, got {dim}")
        self.dim = int(dim)
        self.model_name = str(model_name)
        self.recipe = str(recipe)
        self._segs: list[_Segment] = []
        self._n = 0
        self.damage: str | None = None
        """Set by :meth:`load` when the folder held a store for this model, width and recipe
        that it could not read as its record says (then the store is empty): what and where."""
        self._other: dict[bytes, str] = {}
        """The text of each key that is not a digest key, by id."""
        self._sorted: Ids = np.zeros(0, dtype=ID_DTYPE)
        """The ids of rows ``0 … len(_order) - 1`` when the order was made (the segments' ids
        are views of it)."""
        self._order: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        """Those rows sorted by id."""
        self._firsts: npt.NDArray[np.uint64] = np.zeros(0, dtype=np.uint64)
        """The first 8 bytes of each id in that order, as numbers (:func:`_first_bytes`): what
        a lookup searches (a search over the 32-byte ids through ``_order`` took 3× as long:
        ≈ 80 ms for the 182,000 chunks of 10,000 items, five times a run)."""
        self._recent: dict[bytes, int] = {}
        """The rows appended since, by id."""
        self._starts: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self._tail: F32 = np.zeros((0, self.dim), dtype=np.float32)
        """Capacity behind the last segment's rows while it grows (it is a prefix view)."""
        self._tail_ids: Ids = np.zeros(0, dtype=ID_DTYPE)
        self._whole: F32 | None = None
        self._digest: str | None = None
        """:meth:`keys_sha256` while the keys are as when it was made."""
        self._saved: list[str] | None = None
        """The segment names of the record this store was loaded from or last saved to."""

    # -- contents --------------------------------------------------------------------

    def __len__(self) -> int:
        return self._n

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and bool(self.rows_of(key_ids([key]))[0] >= 0)

    @property
    def keys(self) -> list[str]:
        """The keys in row order (row ``i`` of :attr:`rows` belongs to ``keys[i]``); a list
        made on each call (:attr:`ids` is the compact form)."""
        text = b"".join(_key_text(s.ids, self._other) for s in self._segs)
        return text.decode("utf-8").split("\n")[:-1]

    @property
    def ids(self) -> Ids:
        """Each row's key id (:func:`key_id`), in row order (read-only)."""
        if len(self._order) == self._n:  # the array the order was made over, unchanged since
            out = self._sorted.view()
        elif not self._segs:
            out = np.zeros(0, dtype=ID_DTYPE)
        else:
            out = np.concatenate([s.ids for s in self._segs])
        out.flags.writeable = False
        return out

    def present(self, ids: Ids) -> npt.NDArray[np.bool_]:
        """For each row, whether its key is one of ``ids``."""
        out = np.zeros(self._n, dtype=bool)
        rows = self.rows_of(ids)
        out[rows[rows >= 0]] = True
        return out

    def keys_sha256(self) -> str:
        """:func:`keys_digest` of :attr:`keys`, made a segment at a time (and kept until the
        keys change)."""
        if self._digest is None:
            h = hashlib.sha256()
            for s in self._segs:
                h.update(_key_text(s.ids, self._other))
            self._digest = "sha256:" + h.hexdigest()
        return self._digest

    def snapshot(self) -> KeySnapshot:
        """The keys as they are now (their ids and digest)."""
        return KeySnapshot(self.ids, self.keys_sha256())

    @property
    def rows(self) -> F32:
        """All rows, ``(len(self), dim)`` (read-only: do not modify). A store of several
        segments is joined into one matrix on the first call after a change."""
        if self._whole is None:
            if len(self._segs) == 1:
                self._whole = self._segs[0].rows
            elif not self._segs:
                self._whole = np.zeros((0, self.dim), dtype=np.float32)
            else:
                self._whole = np.concatenate([s.rows for s in self._segs])
        return self._whole

    @property
    def segments(self) -> int:
        """How many segments the rows are in."""
        return len(self._segs)

    def rows_of(self, ids: Ids) -> npt.NDArray[np.int64]:
        """The row of each id in ``ids`` (:func:`key_ids`), -1 where there is none."""
        want = np.asarray(ids, dtype=ID_DTYPE).reshape(-1)
        out = np.full(want.shape[0], -1, dtype=np.int64)
        if len(self._order) and want.size:
            firsts = _first_bytes(want)
            at = np.searchsorted(self._firsts, firsts)
            at = np.minimum(at, len(self._order) - 1)
            rows = self._order[at]
            hit = self._sorted[rows] == want
            out[hit] = rows[hit]
            # Ids that share their first 8 bytes (sorted by the rest among themselves): the
            # one found first need not be the one asked for.
            for i in np.flatnonzero(~hit & (self._firsts[at] == firsts)).tolist():
                j = int(at[i]) + 1
                while j < len(self._order) and self._firsts[j] == firsts[i]:
                    if self._sorted[self._order[j]] == want[i]:
                        out[i] = self._order[j]
                        break
                    j += 1
        if self._recent and want.size:
            for i in np.flatnonzero(out < 0).tolist():
                out[i] = self._recent.get(want[i : i + 1].tobytes(), -1)
        return out

    def row_of(self, key: str) -> int:
        """The row number of ``key``."""
        row = int(self.rows_of(key_ids([key]))[0])
        if row < 0:
            raise NotFoundError(f"no vector for {key}")
        return row

    def vector(self, row: int) -> F32:
        """Row ``row`` (a view: do not modify)."""
        if not 0 <= row < self._n:
            raise NotFoundError(f"no vector row {row}")
        s, at = self._locate(row)
        out: F32 = self._segs[s].rows[at]
        return out

    def _locate(self, row: int) -> tuple[int, int]:
        """(segment, row within it) of store row ``row``."""
        s = int(np.searchsorted(self._starts, row, side="right")) - 1
        return s, row - int(self._starts[s])

    def take(self, rows: npt.ArrayLike) -> F32:
        """The rows numbered ``rows``, ``(len(rows), dim)``, read only from the segments
        holding them."""
        idx = np.asarray(rows, dtype=np.int64).reshape(-1)
        if idx.size and (idx.min() < 0 or idx.max() >= self._n):
            raise NotFoundError("vector row out of range")
        if self._whole is not None:
            return np.asarray(self._whole[idx], dtype=np.float32)
        out = np.empty((idx.size, self.dim), dtype=np.float32)
        seg_of = np.searchsorted(self._starts, idx, side="right") - 1
        for s in np.unique(seg_of).tolist():
            pick = np.flatnonzero(seg_of == s)
            out[pick] = _read(self._segs[s].rows, idx[pick] - self._starts[s])
        return out

    def missing(self, keys: Iterable[str], ids: Ids | None = None) -> list[str]:
        """The keys (first occurrence, in order) that have no row yet: what to embed.
        ``ids``: the keys' :func:`key_ids` when the caller has made them (one per key, repeats
        included), not made again."""
        if ids is None:
            listed = list(dict.fromkeys(keys))
            absent = self.rows_of(key_ids(listed)) < 0
            return [k for k, a in zip(listed, absent.tolist(), strict=True) if a]
        gone = (self.rows_of(ids) < 0).tolist()
        return list(dict.fromkeys(k for k, a in zip(keys, gone, strict=True) if a))

    def add(self, keys: Sequence[str], rows: npt.ArrayLike) -> None:
        """Store ``rows[i]`` under ``keys[i]``; a key already present gets its row replaced."""
        arr = np.asarray(rows, dtype=np.float32)
        if arr.ndim == 1 and len(keys) == 1:
            arr = arr.reshape(1, -1)
        if arr.ndim != 2 or arr.shape[0] != len(keys) or (len(keys) and arr.shape[1] != self.dim):
            raise InvalidInputError(
                f"expected {len(keys)} rows of width {self.dim}, got shape {arr.shape}"
            )
        if not np.isfinite(arr).all():
            raise InvalidInputError("vectors must be finite")
        for k in keys:
            if not isinstance(k, str) or not k or "\n" in k:
                raise InvalidInputError(
                    f"vector keys must be non-empty one-line strings, got {k!r}"
                )
        ids, other = _ids_of(keys)
        self._other.update(other)
        found = self.rows_of(ids)
        new: dict[bytes, int] = {}
        for i, (r, row) in enumerate(zip(_raw(ids), found.tolist(), strict=True)):
            if row >= 0:
                self._replace(row, arr[i])
            else:
                new[r] = i  # a key repeated within one call: the last row wins
        if new:
            at = np.fromiter(new.values(), np.int64, len(new))
            self._append(ids[at], arr[at])
        self._whole = None

    def _replace(self, row: int, value: F32) -> None:
        s, at = self._locate(row)
        seg = self._segs[s]
        if seg.name is not None:  # memory-mapped as saved: copy before changing it
            seg.rows, seg.name = np.array(seg.rows, dtype=np.float32), None
            if s == len(self._segs) - 1:
                self._tail = seg.rows
        seg.rows[at] = value

    def _append(self, ids: Ids, arr: F32) -> None:
        last = self._segs[-1] if self._segs else None
        if last is None or (last.name is not None and len(last.ids) >= SEGMENT_ROWS):
            last = _Segment(np.zeros((0, self.dim), dtype=np.float32), ids[:0].copy())
            self._segs.append(last)
            self._tail, self._tail_ids = last.rows, last.ids
            self._starts = np.append(self._starts, self._n)
        n, need = len(last.ids), len(last.ids) + len(ids)
        if last.name is not None or need > self._tail.shape[0]:
            cap = max(need, int(self._tail.shape[0] * 1.5) + 16)
            buf = np.zeros((cap, self.dim), dtype=np.float32)
            buf[:n] = last.rows[:n]
            self._tail = buf
        # The last segment's ids are always `_tail_ids` or a prefix view of it (set together
        # here, in _place and in _reindex): only a lack of room makes a new buffer.
        if need > self._tail_ids.shape[0]:
            ibuf = np.zeros(self._tail.shape[0], dtype=ID_DTYPE)
            ibuf[:n] = last.ids[:n]
            self._tail_ids = ibuf
        self._tail[n:need] = arr
        self._tail_ids[n:need] = ids
        last.rows, last.ids, last.name = self._tail[:need], self._tail_ids[:need], None
        for j, r in enumerate(_raw(ids)):
            self._recent[r] = self._n + j
        self._n += len(ids)
        self._digest = None
        if len(self._recent) > max(_RECENT_ROWS, len(self._order) // 4):
            self._reindex()

    def get(self, keys: Sequence[str]) -> F32:
        """The rows of ``keys``, ``(len(keys), dim)``; :class:`NotFoundError` for an unknown key."""
        idx = self.rows_of(key_ids(keys))
        if (idx < 0).any():
            raise NotFoundError(f"no vector for {keys[int(np.flatnonzero(idx < 0)[0])]}")
        return self.take(idx)

    def prune(self, keep: Iterable[str] | Ids) -> int:
        """Drop every row whose key is not in ``keep`` (keys, or their ids); return how many
        were dropped.

        The remaining rows keep their relative order; only the segments that lose rows are
        read (and written again on save).
        """
        marked = self.present(keep if isinstance(keep, np.ndarray) else key_ids(keep))
        segs: list[_Segment] = []
        dropped = 0
        for seg, start in zip(self._segs, self._starts.tolist(), strict=True):
            kept = np.flatnonzero(marked[start : start + len(seg.ids)])
            if len(kept) == len(seg.ids):
                segs.append(seg)
                continue
            dropped += len(seg.ids) - len(kept)
            if len(kept):
                segs.append(_Segment(np.array(seg.rows[kept], dtype=np.float32),
                                     seg.ids[kept]))  # fmt: skip
        if dropped:
            self._place(segs)
            self._reindex()
            self._digest = None
        return dropped

    def saved_segments(self) -> list[str]:
        """The names of the segments as saved (those read or written, unchanged since)."""
        return [s.name for s in self._segs if s.name is not None]

    def damaged_segments(self, names: Collection[str]) -> list[str]:
        """Of the saved segments ``names``, those whose rows and keys are not what their name
        (a digest of them) says: a file altered after it was written (a byte of a row, which
        no other check sees). Reads those segments' rows whole."""
        return [
            s.name
            for s in self._segs
            if s.name is not None
            and s.name in names
            and _segment_name(s.rows, _key_text(s.ids, self._other), self.dim) != s.name
        ]

    def drop_segments(self, names: Collection[str]) -> int:
        """Drop the rows of the segments ``names`` (their keys are then missing: embedded
        again); return how many."""
        keep = [s.ids for s in self._segs if s.name is None or s.name not in names]
        return self.prune(np.concatenate(keep) if keep else np.zeros(0, dtype=ID_DTYPE))

    def _reindex(self) -> None:
        """Make the sort order again over every row (the segments' ids become views of one
        array)."""
        self._sorted = np.concatenate([s.ids for s in self._segs]) if self._segs \
            else np.zeros(0, dtype=ID_DTYPE)  # fmt: skip
        at = 0
        for seg in self._segs:
            seg.ids = self._sorted[at : at + len(seg.ids)]
            at += len(seg.ids)
        self._tail_ids = self._segs[-1].ids if self._segs else self._sorted[:0]
        self._order = np.argsort(self._sorted, kind="stable")
        self._firsts = _first_bytes(self._sorted)[self._order]
        self._recent = {}
        self._n = at
        if self._other:
            held = set(_raw(self._sorted))
            self._other = {r: k for r, k in self._other.items() if r in held}

    def _duplicated(self) -> bool:
        """Whether two rows hold one key."""
        block = 1 << 20
        for lo in range(0, max(len(self._order) - 1, 0), block):
            run = self._sorted[self._order[lo : lo + block + 1]]
            if (run[1:] == run[:-1]).any():
                return True
        return False

    def _place(self, segs: list[_Segment]) -> None:
        """Hold ``segs``, cut as given."""
        self._segs = segs
        sizes = [len(s.ids) for s in segs]
        self._starts = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64) if segs \
            else np.zeros(0, dtype=np.int64)  # fmt: skip
        self._tail = segs[-1].rows if segs else np.zeros((0, self.dim), dtype=np.float32)
        self._tail_ids = segs[-1].ids if segs else np.zeros(0, dtype=ID_DTYPE)
        self._whole = None

    # -- search ----------------------------------------------------------------------

    def _scores(self, q: F32, candidates: npt.NDArray[np.int64] | None) -> F32:
        """The dot products of ``q`` with the rows ``candidates`` (None: every row), each
        computed as from the one matrix (a product per segment could differ in the last
        bits, and with it a near-tie)."""
        if candidates is not None:
            return self.take(candidates) @ q
        return self.rows @ q

    def search(
        self,
        query_vec: npt.ArrayLike,
        k: int,
        rows_mask: npt.NDArray[np.bool_] | None = None,
        among: npt.NDArray[np.int64] | None = None,
    ) -> list[tuple[int, float]]:
        """The ``k`` rows with the largest dot product with ``query_vec``, best first, as
        ``(row, score)``; ties by row. ``rows_mask`` (boolean, one per row) restricts the
        search to the rows marked True; ``among`` (row numbers, e.g. an ANN index's
        candidates) to those rows."""
        q = np.asarray(query_vec, dtype=np.float32).reshape(-1)
        if q.shape[0] != self.dim:
            raise InvalidInputError(f"query vector has width {q.shape[0]}, expected {self.dim}")
        if not np.isfinite(q).all():
            raise InvalidInputError("query vector must be finite")
        n = self._n
        if k <= 0 or n == 0:
            return []
        if among is not None:
            candidates: npt.NDArray[np.int64] | None = np.unique(np.asarray(among, np.int64))
            assert candidates is not None
            if rows_mask is not None:
                candidates = candidates[np.asarray(rows_mask, dtype=bool)[candidates]]
            if candidates.size == 0:
                return []
            scores = self._scores(q, candidates)
        elif rows_mask is None:
            candidates = None
            scores = self._scores(q, None)
        else:
            mask = np.asarray(rows_mask, dtype=bool)
            if mask.shape != (n,):
                raise InvalidInputError(f"rows_mask must have shape ({n},), got {mask.shape}")
            candidates = np.flatnonzero(mask)
            if candidates.size == 0:
                return []
            if candidates.size * 4 < n:
                scores = self._scores(q, candidates)
            else:
                scores = self._scores(q, None)[candidates]
        m = scores.shape[0]
        if k < m:
            top = np.argpartition(-scores, k - 1)[:k]
            # Include every row tied with the k-th score, so ties resolve by row number.
            kth = scores[top].min()
            top = np.flatnonzero(scores >= kth)
        else:
            top = np.arange(m)
        rows_of = top if candidates is None else candidates[top]
        order = np.lexsort((rows_of, -scores[top]))[:k]
        return [(int(rows_of[i]), float(scores[top[i]])) for i in order]

    # -- persistence -----------------------------------------------------------------

    @property
    def unsaved(self) -> bool:
        """Whether the store differs from the record it was loaded from (or last saved to)."""
        return self._saved is None or [s.name for s in self._segs] != self._saved

    def save(self, directory: str | os.PathLike[str]) -> None:
        """Write the store into ``directory`` (created if need be): the segments that are not
        there yet, then ``meta.json``, then remove the files of segments no longer listed."""
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        segs = self._layout()
        for seg in segs:
            if seg.name is None:
                seg.name = _write_segment(d, seg, self.dim, self._other)
        self._place(segs)
        names = [s.name for s in segs]
        meta = {
            "format": FORMAT,
            "model": self.model_name,
            **({"recipe": self.recipe} if self.recipe else {}),
            "dim": self.dim,
            "count": self._n,
            "keys_sha256": self.keys_sha256(),
            "segments": [{"name": s.name, "rows": len(s.ids)} for s in segs],
        }
        meta_text = json.dumps(meta, indent=2, sort_keys=True) + "\n"
        atomic_write(d / META_FILE, lambda f: f.write(meta_text.encode("utf-8")))
        self._saved = [str(n) for n in names]
        listed = {f"{n}{ext}" for n in names for ext in (".npy", ".keys")}
        for p in d.iterdir():
            stale = p.name.startswith(SEGMENT_PREFIX) and p.name not in listed
            if stale or p.name in (LEGACY_VECTORS, LEGACY_KEYS):
                p.unlink(missing_ok=True)

    def _layout(self) -> list[_Segment]:
        """The segments to save. A changed segment under half of :data:`SEGMENT_ROWS`
        is merged with a neighbour when the two fit in one; a changed one over it is cut."""
        out: list[_Segment] = []
        for seg in self._segs:
            if (
                out
                and len(out[-1].ids) + len(seg.ids) <= SEGMENT_ROWS
                and (_small(seg) or _small(out[-1]))
            ):
                prev = out[-1]
                joined = np.concatenate([prev.ids, seg.ids])
                out[-1] = _Segment(np.concatenate([prev.rows, seg.rows]), joined)
            else:
                out.append(seg)
        cut: list[_Segment] = []
        for seg in out:
            if seg.name is not None or len(seg.ids) <= SEGMENT_ROWS:
                cut.append(seg)
                continue
            for lo in range(0, len(seg.ids), SEGMENT_ROWS):
                cut.append(_Segment(seg.rows[lo : lo + SEGMENT_ROWS],
                                    seg.ids[lo : lo + SEGMENT_ROWS]))  # fmt: skip
        return cut

    @classmethod
    def load(
        cls,
        directory: str | os.PathLike[str],
        model_name: str,
        *,
        dim: int | None = None,
        recipe: str | None = None,
    ) -> VectorStore:
        """The store saved in ``directory`` for ``model_name``.

        A missing or inconsistent folder, or one written for another model (or, when ``dim``
        is given, another width; or, when ``recipe`` is given, under another recipe), gives an
        empty store, so every chunk is embedded again. ``dim`` is needed when the folder cannot
        supply it. A reader that passes no ``recipe`` takes the store's.
        """
        d = Path(directory)
        meta = _read_json(d / META_FILE)
        meta_dim = meta.get("dim") if isinstance(meta, dict) else None
        width = dim if dim is not None else meta_dim if isinstance(meta_dim, int) else None
        if width is None:
            raise InvalidInputError(
                f"{d / META_FILE}: no vector store's record (missing, not JSON, or no width in "
                "it): its dimension is unknown"
            )
        stored = meta.get("recipe", "") if isinstance(meta, dict) else ""
        kept = str(stored) if recipe is None else recipe
        store = cls(width, model_name, kept)
        if not isinstance(meta, dict) or meta.get("format") not in (1, FORMAT):
            return store
        if meta.get("model") != model_name or meta_dim != width or stored != kept:
            return store
        read = _read_segments(d, meta, width) if meta["format"] == FORMAT \
            else _read_legacy(d, meta, width)  # fmt: skip
        if isinstance(read, str) or read is None:
            store.damage = read or f"{d}: the vectors its record lists cannot be read"
            return store
        segs, other = read
        store._other = other
        store._place(segs)
        store._reindex()
        if store._n != meta.get("count") or meta.get("keys_sha256") != store.keys_sha256():
            empty = cls(width, model_name, kept)
            empty.damage = (
                f"{d / META_FILE}: lists {meta.get('count')!r} vectors, its segments hold "
                f"{store._n}" if store._n != meta.get("count") else
                f"{d / META_FILE}: its keys' digest is not that of its segments' keys"
            )  # fmt: skip
            return empty
        if store._duplicated():  # a key twice
            empty = cls(width, model_name, kept)
            empty.damage = f"{d}: a key is in two segments"
            return empty
        store._saved = [str(s.name) for s in segs] if meta["format"] == FORMAT else None
        return store


#: What :func:`drop_damaged`'s memo depends on (a change makes every segment be read again).
CHECKS_SALT = "segments named by their rows and keys 1"


def _segment_stamps(folder: Path, name: str) -> list[Stamp]:
    return [stamp(folder / f"{name}.npy"), stamp(folder / f"{name}.keys")]


def drop_damaged(store: VectorStore, folder: Path, checks: Path | None) -> int:
    """Drop from ``store`` (as loaded from ``folder``) the rows of each segment whose files are
    not what its name — a digest of its rows and keys — says, so that a writer embeds them
    again (a byte of a row altered passes every other check: the store loads, its keys are
    right); returns how many rows. Only the segments whose files changed since they were last
    found intact (their stamps in the memo ``checks``, :func:`record_intact`) are read;
    ``checks`` None: none is."""
    if checks is None or not len(store):
        return 0
    unseen = _unchecked(store, folder, StatMemo(checks, CHECKS_SALT))
    return store.drop_segments(store.damaged_segments(unseen)) if unseen else 0


def saved_intact(folder: Path, model_name: str, checks: Path) -> bool:
    """Whether the store saved in ``folder`` for ``model_name`` reads as its record says and
    every segment holds what its name says (only those changed since :func:`record_intact`
    last recorded them are read; found intact, they are recorded)."""
    try:
        store = VectorStore.load(folder, model_name)
    except InvalidInputError:
        return False
    if store.damage is not None:
        return False
    memo = StatMemo(checks, CHECKS_SALT)
    unseen = _unchecked(store, folder, memo)
    if unseen and store.damaged_segments(unseen):
        return False
    if unseen:
        record_intact(store, folder, checks)
    return True


def _unchecked(store: VectorStore, folder: Path, memo: StatMemo) -> set[str]:
    """The saved segments of ``store`` not recorded in ``memo`` as intact with their files'
    stamps as they are now."""
    return {n for n in store.saved_segments()
            if memo.get(n, _segment_stamps(folder, n)) != "intact"}  # fmt: skip


def record_intact(store: VectorStore, folder: Path, checks: Path) -> None:
    """Record in the memo ``checks`` every segment of ``store`` as saved in ``folder`` (found
    intact, or written by this run) with its files' stamps: the next :func:`drop_damaged`
    reads only those changed since."""
    memo = StatMemo(checks, CHECKS_SALT)
    for n in store.saved_segments():
        memo.put(n, _segment_stamps(folder, n), "intact")
    memo.save()


def stored_rows(store: VectorStore, at: npt.ArrayLike) -> Reindexed:
    """The rows of ``store`` numbered ``at``, in that order, read from its segments when
    indexed (:class:`~arkai.adapters.fs.Reindexed`): the beliefs step's statement vectors in
    episode order, never copied (≈ 120 MB a run at 10,000 items, 1.2 GB at 100,000). The store
    must not change while they are read. :class:`NotFoundError` when a number is not a row."""
    rows = np.asarray(at, dtype=np.int64).reshape(-1)
    if rows.size and (int(rows.min()) < 0 or int(rows.max()) >= len(store)):
        raise NotFoundError("vector row out of range")
    return Reindexed(store.take, rows, store.dim)


def _read(rows: F32, at: npt.NDArray[np.int64]) -> F32:
    """Rows ``at`` of a segment: a saved one's read from its file (:func:`read_rows`: only
    those bytes, where indexing the memory map would map a whole folio per row touched), one
    in memory indexed. Segment files are named by their content, so the file of that name
    holds these rows; if it is gone (a later save dropped it) the map is read."""
    name = getattr(rows, "filename", None) if isinstance(rows, np.memmap) else None
    if name:
        try:
            fd = os.open(name, os.O_RDONLY)
        except OSError:
            return np.asarray(rows[at], dtype=np.float32)
        try:
            out: F32 = read_rows(fd, int(getattr(rows, "offset", 0)), rows.shape[1], at)
            return out
        finally:
            os.close(fd)
    return np.asarray(rows[at], dtype=np.float32)


def _small(seg: _Segment) -> bool:
    """A changed segment small enough to merge with a neighbour."""
    return seg.name is None and len(seg.ids) < SEGMENT_ROWS // 2


def _segment_name(rows: F32, keys_text: bytes, dim: int) -> str:
    """A segment's name: a digest of its rows and keys (so a file of that name holds them)."""
    h = hashlib.sha256()
    h.update(f"{len(rows)} {dim}\n".encode())
    h.update(keys_text)
    for lo in range(0, len(rows), _HASH_ROWS):  # (a memory map read a block at a time)
        h.update(np.ascontiguousarray(rows[lo : lo + _HASH_ROWS], dtype=np.float32).tobytes())
    return SEGMENT_PREFIX + h.hexdigest()[:32]


#: Rows hashed at a time by :func:`_segment_name`.
_HASH_ROWS = 4096


def _write_segment(d: Path, seg: _Segment, dim: int, other: dict[bytes, str]) -> str:
    rows = np.ascontiguousarray(seg.rows, dtype=np.float32)
    keys_text = _key_text(seg.ids, other)
    name = _segment_name(rows, keys_text, dim)
    atomic_write(d / f"{name}.npy", lambda f: np.save(f, rows, allow_pickle=False))
    atomic_write(d / f"{name}.keys", lambda f: f.write(keys_text))
    return name


_Read = tuple[list[_Segment], dict[bytes, str]]


def _read_segments(d: Path, meta: dict[str, Any], width: int) -> _Read | str:
    """The segments ``meta`` lists, or what is wrong with them (naming the file)."""
    listed = meta.get("segments")
    if not isinstance(listed, list):
        return f"{d / META_FILE}: no list of segments"
    segs: list[_Segment] = []
    other: dict[bytes, str] = {}
    for entry in listed:
        name = entry.get("name") if isinstance(entry, dict) else None
        count = entry.get("rows") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not _SEGMENT_NAME.fullmatch(name):
            return f"{d / META_FILE}: a segment without a segment's name ({name!r})"
        if not isinstance(count, int) or count < 1:
            return f"{d / META_FILE}: segment {name} has no number of rows ({count!r})"
        try:
            text = (d / f"{name}.keys").read_bytes()
        except OSError as exc:
            return f"{d / name}.keys: cannot be read ({exc.strerror or exc})"
        try:
            rows = np.load(d / f"{name}.npy", allow_pickle=False, mmap_mode="r")
        except (OSError, ValueError, EOFError) as exc:
            return f"{d / name}.npy: not a readable array ({exc})"
        parsed = _parse_keys(text, count)
        if parsed is None:
            return f"{d / name}.keys: not {count} keys, one a line"
        if rows.dtype != np.float32 or rows.ndim != 2 or rows.shape != (count, width):
            return (f"{d / name}.npy: {rows.dtype} {rows.shape}, where the record lists "
                    f"float32 ({count}, {width})")  # fmt: skip
        segs.append(_Segment(rows, parsed[0], name))
        other.update(parsed[1])
    return segs, other


def _read_legacy(d: Path, meta: dict[str, Any], width: int) -> _Read | None:
    keys = _read_json(d / LEGACY_KEYS)
    if not isinstance(keys, list) or not all(isinstance(k, str) and k for k in keys):
        return None
    if any("\n" in k for k in keys):
        return None
    try:
        rows = np.load(d / LEGACY_VECTORS, allow_pickle=False)
    except (OSError, ValueError):
        return None
    if rows.ndim != 2 or rows.shape != (len(keys), width):
        return None
    if not keys:
        return [], {}
    ids, other = _ids_of(keys)
    return [_Segment(np.ascontiguousarray(rows, dtype=np.float32), ids)], other


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
