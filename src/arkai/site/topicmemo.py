"""What the site kept of each ``topics.json`` topic the last time it read the file (issue 17).

Reading ``topics.json`` made a :class:`~arkai.site.indexes.TopicEntry` of every entry —
≈ 305,000 at 10,000 items, ≈ 1.7 s of the site stage — though one changed item changes the
lines of only the topics it is under. The site now keeps, per topic, the digest of its line's
value and what it made of it: the topic's size, item count, listing digest and first entries
(:class:`arkai.site.indexes.Topic`, their chunk numbers the item's own) and each entry's item
and relevance as two arrays (for every item's first topics). A topic whose value has the same
digest is taken from here, its entries never read; the others are read as before and kept.

All of it is valid only for the site's code that made it: the memo's key is the digest of that
code (:func:`arkai.site.build.code_digest`); a memo of another key is not used. Of the library,
a topic read depends on its items' titles (a topic's order and listing name them; an item with
none is not the library's) and on which items the catalog places in ``index/chunks/`` (an entry
of an item it does not place is left out): the memo keeps each item's :func:`item_marks`. When
an item was added, removed, retitled or placed otherwise since, a kept topic is used only when
its line does not name that item (its ID nowhere in the line, and no escape in the line that
could spell it): one added talk made every topic be read again (≈ 1 s of the site stage at
10,000 items, issue 17), though only the lines that name it changed. With more than
:data:`MAX_CHANGED` such items the memo is not used. The kept topics' entries number the items
in the memo's list of them, renumbered into the library's list as they are taken.
``.site-build/topics-read.bin``, written with ``write_checked_parts`` (a digest over all of
it; damaged or cut short: not used), when a topic was read afresh or the items changed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from arkai.adapters.itemcache import read_checked_head, write_checked_parts

FILE = "topics-read.bin"
FORMAT = 2
#: Items whose mark changed since the memo was written (added, removed, retitled, placed
#: otherwise) up to which its topics are still used: each topic's line is searched for each
#: one's ID (≈ 7 ms per ID over the 29 MB of lines at 10,000 items). More: the memo is unused.
MAX_CHANGED = 16

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


def memo_key(code: str) -> str:
    """The key a memo is kept under: the site's code (and this format)."""
    h = hashlib.sha256(f"topics-read {FORMAT}\0{code}".encode())
    return "sha256:" + h.hexdigest()


def item_marks(titles: Mapping[str, str | None], placed: Iterable[str]) -> dict[str, str]:
    """Per item (any ``titles`` names or the catalog places), what a topic read depends on of
    it, as a short digest: its title (None: not one of the library's items) and whether the
    catalog places its chunks."""
    where = set(placed)
    out: dict[str, str] = {}
    for cid in where.union(titles):
        title = titles.get(cid)
        mark = ("+" if cid in where else "-") + ("\0" if title is None else "\1" + title)
        out[cid] = hashlib.blake2b(mark.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()
    return out


class TopicMemo:
    """The memo of one read of ``topics.json``: the topics kept from the last (``get``) and
    those of this read (``put``), written back by :meth:`save` when any was read afresh or
    went, or the items changed."""

    def __init__(
        self,
        key: str,
        known: list[str],
        marks: dict[str, str],
        kept: dict[str, tuple[bytes, Memo]] | None = None,
        changed: Iterable[str] = (),
        renumber: npt.NDArray[np.int32] | None = None,
    ) -> None:
        self.key = key
        self.known = known
        """The library's items in the order the arrays number them (sorted IDs)."""
        self.marks = marks
        self.index = {cid: i for i, cid in enumerate(known)}
        self._kept = kept or {}
        self._changed = tuple(sorted(changed))
        """The items whose mark differs from the memo's: a line naming one is read again."""
        self._renumber = renumber
        """The memo's item numbers → the library's (None: the same list)."""
        self._now: dict[str, tuple[bytes, Memo]] = {}
        self.hits = self.misses = 0

    @classmethod
    def load(cls, path: Path, key: str, known: list[str], marks: dict[str, str]) -> TopicMemo:
        """The memo at ``path`` when it was made under ``key``, with the items changed since
        (:func:`item_marks`) at most :data:`MAX_CHANGED`; else an empty one."""
        got = _read(path, key)
        if got is None:
            return cls(key, known, marks)
        was_known, was_marked, kept = got
        changed = {c for c in was_marked.keys() | marks.keys() if was_marked.get(c) != marks.get(c)}
        if len(changed) > MAX_CHANGED:
            return cls(key, known, marks)
        renumber = None
        if was_known != known:
            index = {cid: i for i, cid in enumerate(known)}
            renumber = np.array([index.get(c, -1) for c in was_known], dtype=np.int32)
        return cls(key, known, marks, kept, changed, renumber)

    def get(self, term: str, digest: bytes, line: str) -> Memo | None:
        """The topic kept under ``term`` when its line's value has ``digest`` and ``line``
        names no changed item."""
        found = self._kept.get(term)
        if found is None or found[0] != digest:
            return None
        if self._changed and ("\\" in line or any(cid in line for cid in self._changed)):
            return None
        if self._renumber is not None and len(found[1].items):
            items = self._renumber[found[1].items]
            if int(items.min()) < 0:  # an item gone that no changed mark named: not used
                return None
            found = (digest, replace(found[1], items=items))
        self.hits += 1
        self._now[term] = found
        return found[1]

    def put(self, term: str, digest: bytes, memo: Memo) -> None:
        self.misses += 1
        self._now[term] = (digest, memo)

    def save(self, path: Path) -> None:
        """Write this read's topics when it differs from what was kept."""
        same_items = not self._changed and self._renumber is None
        if not self.misses and same_items and self._now.keys() == self._kept.keys():
            return
        topics = list(self._now.items())
        head = {
            "format": FORMAT,
            "key": self.key,
            "known": self.known,
            "marks": self.marks,
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


def _read(
    path: Path, key: str
) -> tuple[list[str], dict[str, str], dict[str, tuple[bytes, Memo]]] | None:
    """The items, their marks and the topics kept at ``path``; None when it is missing,
    damaged, of another key, or not such a record."""
    got = read_checked_head(path, FORMAT)
    if got is None:
        return None
    head, arrays = got
    known, marks, rows = head.get("known"), head.get("marks"), head.get("topics")
    if (
        head.get("key") != key
        or not isinstance(known, list)
        or not all(type(c) is str for c in known)
        or not isinstance(marks, dict)
        or not all(type(m) is str for m in marks.values())
        or not isinstance(rows, list)
    ):
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
    return known, marks, out


def _top_entry(raw: Any) -> TopEntry:
    cid, relevance, chunks, passages = raw
    if not (type(cid) is str and relevance in _RELEVANCES and isinstance(chunks, list)
            and all(type(c) is int and c >= 0 for c in chunks)
            and type(passages) is int):  # fmt: skip
        raise ValueError("not a topic entry")
    return cid, relevance, tuple(chunks), passages
