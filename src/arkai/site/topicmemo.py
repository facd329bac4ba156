"""What the site kept of each ``topics.json`` topic the last time it read the file (issue 17).

Reading ``topics.json`` made a :class:`~arkai.site.indexes.TopicEntry` of every entry —
≈ 305,000 at 10,000 items, ≈ 1.7 s of the site stage — though one changed item changes the
lines of only the topics it is under. The site now keeps, per topic, the digest of its line's
value and what it made of it: the topic's size, item count, listing digest and first entries
(:class:`arkai.site.indexes.Topic`, their chunk numbers the item's own) and each entry's item
and relevance as two arrays (for every item's first topics). A topic whose value has the same
digest is taken from here, its entries never read; the others are read as before and kept.

All of it is valid only for the library it was made under: the memo's key is the digest of
the site's code (:func:`arkai.site.build.code_digest`), every item's ID and title (a topic's
order and listing name the titles) and the IDs the catalog places in ``index/chunks/``
(an entry of an item the catalog does not list is left out). A memo of another key is not
used. ``.site-build/topics-read.bin``, written with ``write_checked_parts`` (a digest over all
of it; damaged or cut short: not used), only when a topic was read afresh.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from arkai.adapters.itemcache import read_checked_head, write_checked_parts

FILE = "topics-read.bin"
FORMAT = 1

#: ``(content ID, relevance, its first chunk numbers within the item, its passage count)``.
TopEntry = tuple[str, str, tuple[int, ...], int]
_RELEVANCES = ("high", "medium", "low")


@dataclass(frozen=True, slots=True)
class Memo:
    """One topic as the site read it (what :func:`arkai.site.indexes.make_topic` made, its
    entries' chunk numbers the item's own) and each of its entries of a library item."""

    size: int
    count: int
    listing: bytes
    top: tuple[TopEntry, ...]
    items: npt.NDArray[np.int32]
    """Each entry's item: its place in the memo's list of items, in the line's order."""
    ranks: npt.NDArray[np.int8]
    """Each entry's relevance: 0 high, 1 medium, 2 low."""


def value_digest(value: str) -> bytes:
    """The digest a topic's line value (``{"items":[…]}``) is kept under."""
    return hashlib.blake2b(value.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def memo_key(code: str, titles: Mapping[str, str | None], placed: Iterable[str]) -> str:
    """The library a memo holds for: the site's code, every item's ID and title, the IDs the
    catalog places."""
    h = hashlib.sha256(code.encode("utf-8"))
    h.update(json.dumps(sorted(titles.items(), key=_first)).encode("utf-8", "surrogatepass"))
    h.update(json.dumps(sorted(placed)).encode("utf-8", "surrogatepass"))
    return "sha256:" + h.hexdigest()


def _first(pair: tuple[str, Any]) -> str:
    return pair[0]


class TopicMemo:
    """The memo of one read of ``topics.json``: the topics kept from the last (``get``) and
    those of this read (``put``), written back by :meth:`save` when any was read afresh or
    any went."""

    def __init__(self, key: str, known: list[str], kept: dict[str, tuple[bytes, Memo]]) -> None:
        self.key = key
        self.known = known
        """The library's items in the order the arrays number them (sorted IDs)."""
        self.index = {cid: i for i, cid in enumerate(known)}
        self._kept = kept
        self._now: dict[str, tuple[bytes, Memo]] = {}
        self.hits = self.misses = 0

    @classmethod
    def load(cls, path: Path, key: str, known: list[str]) -> TopicMemo:
        """The memo at ``path`` when it was made under ``key`` for these items; else an
        empty one."""
        return cls(key, known, _read(path, key, known) or {})

    def get(self, term: str, digest: bytes) -> Memo | None:
        found = self._kept.get(term)
        if found is None or found[0] != digest:
            return None
        self.hits += 1
        self._now[term] = found
        return found[1]

    def put(self, term: str, digest: bytes, memo: Memo) -> None:
        self.misses += 1
        self._now[term] = (digest, memo)

    def save(self, path: Path) -> None:
        """Write this read's topics when it differs from what was kept."""
        if not self.misses and self._now.keys() == self._kept.keys():
            return
        topics = list(self._now.items())
        head = {
            "format": FORMAT,
            "key": self.key,
            "known": self.known,
            "topics": [[term, digest.hex(), m.size, m.count, m.listing.hex(),
                        [list(e) for e in m.top], len(m.items)]
                       for term, (digest, m) in topics],
        }  # fmt: skip
        line = json.dumps(head, separators=(",", ":")).encode("ascii") + b"\n"

        def fill(put: Callable[[bytes | memoryview], None]) -> None:
            put(line)
            for _, (_, m) in topics:
                put(m.items.astype("<i4").tobytes())
            for _, (_, m) in topics:
                put(m.ranks.astype("<i1").tobytes())

        write_checked_parts(path, fill)


def _read(path: Path, key: str, known: list[str]) -> dict[str, tuple[bytes, Memo]] | None:
    """The topics kept at ``path``; None when it is missing, damaged, of another key or
    items, or not such a record."""
    got = read_checked_head(path, FORMAT)
    if got is None:
        return None
    head, arrays = got
    if head.get("key") != key or head.get("known") != known:
        return None
    rows = head.get("topics")
    if not isinstance(rows, list):
        return None
    try:
        sizes = [int(r[6]) for r in rows]
        total = sum(sizes)
        if any(z < 0 for z in sizes) or len(arrays) != 5 * total:
            return None
        items = np.frombuffer(arrays[: 4 * total], "<i4").astype(np.int32)
        ranks = np.frombuffer(arrays[4 * total :], "<i1").astype(np.int8)
        if total and (items.min() < 0 or items.max() >= len(known) or ranks.min() < 0
                      or ranks.max() >= len(_RELEVANCES)):  # fmt: skip
            return None
        out: dict[str, tuple[bytes, Memo]] = {}
        at = 0
        for (term, digest, size, count, listing, top, _), z in zip(rows, sizes, strict=True):
            entries = tuple(_top_entry(e) for e in top)
            if not isinstance(term, str) or term in out:
                return None
            memo = Memo(int(size), int(count), bytes.fromhex(listing), entries,
                        items[at : at + z], ranks[at : at + z])  # fmt: skip
            out[term] = (bytes.fromhex(digest), memo)
            at += z
    except (TypeError, ValueError, IndexError):
        return None
    return out


def _top_entry(raw: Any) -> TopEntry:
    cid, relevance, chunks, passages = raw
    if not (type(cid) is str and relevance in _RELEVANCES and isinstance(chunks, list)
            and all(type(c) is int and c >= 0 for c in chunks)
            and type(passages) is int):  # fmt: skip
        raise ValueError("not a topic entry")
    return cid, relevance, tuple(chunks), passages
