"""The graph files assembled from per-item parts (docs/index-format.md, "The graph files from
per-item parts"): ``graph.json``, ``graph.graphml`` and ``related.jsonl`` at a cost that
follows what changed, with the bytes :func:`arkai.search.graph.build_graph` and its writers
give for the same items (tested).

**Why the files split by item.** Every edge starts at a Content node (MENTIONS, TAGGED_WITH,
RELATED_TO to a topic or to an item with a larger node ID, CITES), and edges are sorted by
(source, target, type), so the edge lists are the items' edge lists, one after the other in
node-ID order. Within one item, the edges to other items come first (``content:`` sorts
before ``entity:``, ``tag:`` and ``topic:``). Nodes: every Content node (sorted) comes before
every Entity, Tag and Topic node.

**What is cached.** An item's *part* — its Content node and its edges to entities and tags,
serialized for both files, with the Entity and Tag nodes it names and the spellings of its
entities — is a function of the item alone (its :class:`GraphItem` fields but ``cites`` and
``high_topics``, and the settings). Parts are kept in one file,
``.arkai/index-cache/graph-parts.bin`` (:class:`PartStore`): per item a header line (node ID,
key — a digest of those inputs —, the SHA-256 of the payload and its size), then the payload:
a JSON header line and the serialized text, copied into the files as it is, never parsed. A
record whose digest, shape or node is wrong is rebuilt, never used (:attr:`PartStore.rejected`);
one that cannot be framed ends the reading, and the items from there on are rebuilt.

**What is computed each run.** The edges between items (RELATED_TO from
:mod:`arkai.search.graphcache`, CITES from the per-item counts), the edges to topics (RELATED_TO
weighted by the term's TF-IDF score: every score moves when the library gains or loses an item,
so they are not part of what is cached — an added item would otherwise remake every part) and
the shared nodes (an Entity's label is the most frequent spelling over every item; a Topic's
is its term) are written from small tuples with fixed templates; everything else is the cached
text, copied. An item's edges are sorted by target, and ``content:`` sorts before ``entity:``
and ``tag:``, which sort before ``topic:``: its edges to items, then its part's, then its
topics'. ``related.jsonl`` comes from
the same edges, as arrays (:func:`arkai.search.graph.related_lines_of`).
"""

from __future__ import annotations

import hashlib
import json
import os
from array import array
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from json.encoder import encode_basestring as _encode_str  # as the graph writers escape
from pathlib import Path
from sys import intern
from typing import Any, BinaryIO

import numpy as np
import numpy.typing as npt

from arkai.adapters.fs import append_to_loaded, atomic_write, write_if_changed
from arkai.adapters.itemcache import CACHE_DIR
from arkai.core import canonjson
from arkai.core.hashing import source_digest
from arkai.search.graph import (
    GRAPH_VERSION,
    GRAPHML_CLOSE,
    GRAPHML_EMPTY,
    GRAPHML_END,
    GRAPHML_OPEN,
    RELATED_LIMIT,
    RELATION_TYPES,
    GraphItem,
    GraphSettings,
    PairTable,
    _attr,
    _entities,
    _round,
    build_graph,
    cite_finder,
    cite_needles,
    entity_mentions,
    graphml_head,
    item_nodes,
    json_row,
    node_id,
    quotes_digest,
    related_lines_of,
    throttled_quotes,
    xml_edge,
    xml_node,
)
from arkai.search.termcounts import sorted_rank

VERSION = 4
PARTS = CACHE_DIR / "graph-parts.bin"
"""Beside the item cache's folders (whose pruning leaves files alone)."""
SUMS = CACHE_DIR / "graph-sums.json"
"""The parts' share of the counts as the last run without exports left it (:class:`PartSums`)."""
SUMS_VERSION = 1


@dataclass(frozen=True, slots=True)
class FileSpan:
    """Bytes of the parts file, read when written out (:func:`raw`): a part read back holds
    where its text is, not the text, so the parts file is never held whole."""

    file: BinaryIO
    """The parts file as it was opened (a file replaced since is still read as it was)."""
    offset: int
    size: int

    def __len__(self) -> int:
        return self.size

    def read(self) -> bytes:
        data = os.pread(self.file.fileno(), self.size, self.offset)
        if len(data) != self.size:
            raise OSError(f"{self.file.name}: ended inside a graph part (changed while read)")
        return data


Bytes = bytes | memoryview
Blob = Bytes | FileSpan
"""Serialized text, UTF-8: a part made in this run holds it, a part read back where it is in
the parts file."""


def raw(blob: Blob) -> Bytes:
    """The bytes of ``blob``."""
    return blob.read() if isinstance(blob, FileSpan) else blob


@dataclass(frozen=True, slots=True)
class ItemPart:
    """One item's share of the graph files that depends on it alone."""

    node: str
    """Its Content node ID."""
    json_node: Blob
    json_edges: Blob
    """Its edges to entities, tags and topics as ``graph.json`` has them, joined by ``,\\n``
    (empty when it has none)."""
    xml_node: Blob
    xml_edges: Blob
    """The same edges as ``graph.graphml`` has them, back to back."""
    edge_count: int
    """How many edges that is."""
    shared: tuple[tuple[str, str, str], ...]
    """(node ID, ``Entity``/``Tag``, entity type or label) of the nodes it names."""
    spellings: tuple[tuple[str, str, int], ...]
    """(entity node ID, spelling, times) of its entities: an Entity's label is the most
    frequent spelling over every item."""

    def encode(self) -> bytes:
        """The payload: a header line (node ID, shared nodes, spellings, the blobs' sizes),
        then the blobs, back to back."""
        blobs = (self.json_node, self.json_edges, self.xml_node, self.xml_edges)
        head = {"n": self.node, "s": [list(r) for r in self.shared],
                "p": [list(r) for r in self.spellings], "x": self.edge_count,
                "z": [len(x) for x in blobs]}  # fmt: skip
        return b"".join((canonjson.dumps_line(head).encode("utf-8"), *map(raw, blobs)))

    @classmethod
    def decode(cls, payload: memoryview) -> ItemPart | None:
        """The part of a payload, or None when it has not this shape."""
        end = bytes(payload[:4096]).find(b"\n")
        if end < 0:
            end = bytes(payload).find(b"\n")
        if end < 0:
            return None
        head = _decode_head(bytes(payload[:end]), len(payload) - end - 1)
        if head is None:
            return None
        node, sizes, count, shared, spell = head
        blobs, pos = [], end + 1
        for z in sizes:
            blobs.append(payload[pos : pos + z])
            pos += z
        return cls(node, blobs[0], blobs[1], blobs[2], blobs[3], count, shared, spell)


_Head = tuple[
    str, list[int], int, tuple[tuple[str, str, str], ...], tuple[tuple[str, str, int], ...]
]


def _decode_head(line: bytes, text: int) -> _Head | None:
    """A payload's header line (:meth:`ItemPart.encode`): the node ID, the blobs' sizes, the
    edge count, the shared nodes and spellings — None when it has not that shape or its
    sizes do not add up to ``text``, the bytes after it."""
    try:
        head = json.loads(line)
        node, sizes, count = head["n"], head["z"], head["x"]
        # Interned: a shared node (entity, tag) is named in many items' heads, and the
        # graph step holds every head (decoded JSON makes a string per occurrence).
        shared = tuple((intern(str(a)), intern(str(b)), intern(str(c))) for a, b, c in head["s"])
        spell = tuple((intern(str(a)), intern(str(b)), int(c)) for a, b, c in head["p"])
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        return None
    if not (
        isinstance(node, str)
        and isinstance(sizes, list)
        and len(sizes) == 4
        and all(type(z) is int and z >= 0 for z in (*sizes, count))
        and sum(sizes) == text
    ):
        return None
    return node, sizes, count, shared, spell


#: The text of a part read without it (:meth:`PartStore.get` with ``text=False``).
NO_TEXT = b""


def _own(it: GraphItem, s: GraphSettings) -> GraphItem:
    """``it`` with its quotes (or only their digest, when that is what it has) and mentions
    worked out and no CITES or topics (not the part's)."""
    quotes = it.quotes
    if quotes is None and it.quotes_digest is None:
        quotes = throttled_quotes(it.evidence, s)
    return replace(
        it,
        quotes=quotes,
        quotes_digest=it.quotes_digest if quotes is None else quotes_digest(quotes),
        mentions=it.mentions if it.mentions is not None else entity_mentions(it.entities),
        evidence=(), entities=(), text="", cites={}, high_topics=(),
    )  # fmt: skip


def part_key(it: GraphItem, s: GraphSettings) -> str:
    """A digest of what ``it``'s part is made from (``it`` as :func:`_own` gives it: its
    quotes by their digest) — with ``made_from`` (the digest of what its quotes and mentions
    are made from), that instead of them: ``it`` as given then (issue 17: the mentions'
    ``repr`` was ≈ 0.15 s a run at 10,000 items)."""
    made = (it.made_from,) if it.made_from else (it.quotes_digest, tuple(it.mentions or ()))
    doc = repr((
        VERSION, GRAPH_VERSION, s.min_confidence, s.max_evidence, it.content_id, it.title,
        it.path, it.content_type, it.url, tuple(it.tags), *made,
    ))  # fmt: skip
    return "sha256:" + hashlib.sha256(doc.encode("utf-8")).hexdigest()


def make_part(it: GraphItem, s: GraphSettings) -> ItemPart:
    """``it``'s part: the graph of it alone, serialized (``it`` as :func:`_own` gives it)."""
    g = build_graph([it], s, related={})
    content = g.nodes[0]
    assert content["type"] == "Content"  # "content:" sorts first
    shared = tuple(
        (n["id"], n["type"], n["entity_type"] if n["type"] == "Entity" else n["label"])
        for n in g.nodes[1:]
    )
    spell: Counter[tuple[str, str]] = Counter()
    for raw_name, etype, norm, _ in _entities(it):
        spell[(node_id("entity", etype, norm), " ".join(raw_name.split()))] += 1
    return ItemPart(
        node=content["id"],
        json_node=json_row(content).encode("utf-8"),
        json_edges=",\n".join(json_row(e) for e in g.edges).encode("utf-8"),
        xml_node=xml_node(content).encode("utf-8"),
        xml_edges="".join(map(xml_edge, g.edges)).encode("utf-8"),
        edge_count=len(g.edges),
        shared=shared,
        spellings=tuple((e, sp, c) for (e, sp), c in sorted(spell.items())),
    )


@dataclass(frozen=True, slots=True)
class _Record:
    key: str
    digest: str
    """SHA-256 of the payload."""
    start: int
    """Where the record's payload starts in the file (0 for one made in this run)."""
    size: int
    """The payload's size."""
    head: int
    """The size of the record's header line."""
    data: bytes | None = None
    """The whole record, for one made in this run (else it is read from the file)."""
    head_digest: str = ""
    """SHA-256 of the payload's header line (with its line break), read alone when a part's
    text is not wanted; empty for a record of the first layout (4 fields)."""
    head_size: int = 0
    as_read: bool = False
    """Its header line in the file is :meth:`header`'s, byte for byte (so the record is
    copied from the file as it is)."""

    def header(self, node: str) -> bytes:
        """The record's header line."""
        return _header(node, self.key, self.digest, self.size, self.head_digest, self.head_size)


def _header(node: str, key: str, digest: str, size: int, head_digest: str, head_size: int) -> bytes:
    fields = [node, key, digest, str(size)]
    if head_digest:
        fields += [head_digest, str(head_size)]
    return ("\t".join(fields) + "\n").encode()


def _payload_head(payload: bytes) -> tuple[str, int]:
    """The digest and size of a payload's header line (with its line break)."""
    size = payload.find(b"\n") + 1
    return hashlib.sha256(payload[:size]).hexdigest(), size


#: A header line longer than this is not one (node ID, key, digest and size are short).
MAX_HEAD = 1 << 16


#: Bytes of the parts file copied at a time when it is written whole (the kept records, back
#: to back, are copied as runs of bytes).
_COPY_BLOCK = 1 << 23


class PartStore:
    """The parts file: its record headers read when opened (the payloads stay in the file
    until a part is asked for, and a part's text until it is written out), brought up to
    date when a part changed or went (:meth:`save`). A record per item: a header line
    ``node ID\tkey\tSHA-256 of the payload\tits size``, then the payload
    (:meth:`ItemPart.encode`); a changed part's record is appended, and a node's last record
    is its part. A record that cannot be framed ends the reading (the items from there on are
    rebuilt; a torn append is the last record). Open until :meth:`close` (a context
    manager): the parts it gives read their text from it.

    A header line may also hold the digest and size of the payload's own header line (the
    part's node, edge count, shared nodes and spellings): a part asked for without its text
    (``text=False``: the graph exports are not written) is read and checked from that line
    alone, not its whole payload (≈ 107 MB at 10,000 items). A record without them is read
    whole, and written back with them."""

    def __init__(self, root: Path, *, full: bool = False) -> None:
        self.path = root / PARTS
        self.rejected = 0
        """Records that failed a check (damaged): rebuilt, never used."""
        self.built = 0
        self._records: dict[str, _Record] = {}
        self._dirty = full
        self._file: BinaryIO | None = None
        self._size = 0
        """The file's size as read (where an append starts)."""
        self._damaged = False
        """A record could not be framed: the file is written whole."""
        if full:
            return
        try:
            fh = self.path.open("rb")
        except FileNotFoundError:
            return
        self._file = fh
        total, pos = os.fstat(fh.fileno()).st_size, 0
        while pos < total:
            line = fh.readline(MAX_HEAD)
            head = line[:-1].split(b"\t") if line.endswith(b"\n") else []
            size = int(head[3]) if len(head) in (4, 6) and head[3].isdigit() else -1
            own = int(head[5]) if len(head) == 6 and head[5].isdigit() else 0
            start = pos + len(line)
            if size < 0 or start + size > total or own > size or (len(head) == 6 and not own):
                self.rejected += 1
                self._dirty = self._damaged = True
                break
            node = head[0].decode("utf-8", "replace")
            key, digest = head[1].decode("ascii", "replace"), head[2].decode("ascii", "replace")
            own_digest = head[4].decode("ascii", "replace") if own else ""
            same = _header(node, key, digest, size, own_digest, own) == line
            # A node's last record is its part (an earlier one was superseded by an append).
            self._records[node] = _Record(key, digest, start, size, len(line), None,
                                          own_digest, own, same)  # fmt: skip
            pos = start + size
            fh.seek(pos)
        self._size = pos

    def __enter__(self) -> PartStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the file (the parts read from it can no longer be written out)."""
        if self._file is not None:
            self._file.close()

    def get(self, node: str, key: str, *, text: bool = True) -> ItemPart | None:
        """The intact part stored for ``node`` with this ``key``: checked against its digest
        when read, its text then left in the file (:class:`FileSpan`). ``text=False``: its
        text is not wanted (:data:`NO_TEXT` instead), so only its payload's header line is
        read and checked when the record has that line's digest."""
        rec = self._records.get(node)
        if rec is None or rec.key != key:
            return None
        if not text and rec.head_digest and rec.data is None and self._file is not None:
            line = os.pread(self._file.fileno(), rec.head_size, rec.start)
            if len(line) == rec.head_size and hashlib.sha256(line).hexdigest() == (rec.head_digest):
                head = _decode_head(line[:-1], rec.size - rec.head_size)
                if head is not None and head[0] == node and line.endswith(b"\n"):
                    _, _, count, shared, spell = head
                    return ItemPart(node, NO_TEXT, NO_TEXT, NO_TEXT, NO_TEXT, count, shared,
                                    spell)  # fmt: skip
            # Not as its line says: the whole payload is read (and the record dropped when
            # that is damaged too).
        if rec.data is not None:
            payload: bytes = rec.data[rec.head :]
        else:
            assert self._file is not None  # a record not made here was read from the file
            payload = os.pread(self._file.fileno(), rec.size, rec.start)
        part = None
        if len(payload) == rec.size and rec.digest == hashlib.sha256(payload).hexdigest():
            part = ItemPart.decode(memoryview(payload))
        if part is None or part.node != node:
            self.rejected += 1
            del self._records[node]
            self._dirty = self._damaged = True  # written whole: without the damaged bytes
            return None
        if rec.data is None:
            # A record of the first layout, or one whose own line failed its digest: written
            # back with that line's digest.
            own_digest, own = _payload_head(payload)
            if (rec.head_digest, rec.head_size) != (own_digest, own):
                new = replace(rec, head_digest=own_digest, head_size=own, as_read=False)
                self._records[node] = new
                self._dirty = True
        if rec.data is not None or self._file is None:
            return part
        # The blobs are the payload's tail, back to back: where each is in the file.
        blobs = (part.json_node, part.json_edges, part.xml_node, part.xml_edges)
        at = rec.start + rec.size - sum(map(len, blobs))
        spans = []
        for b in blobs:
            spans.append(FileSpan(self._file, at, len(b)))
            at += len(b)
        # Made directly (dataclasses.replace costs ≈ 7 µs a call: 10,000 parts a run).
        return ItemPart(part.node, spans[0], spans[1], spans[2], spans[3], part.edge_count,
                        part.shared, part.spellings)  # fmt: skip

    def put(self, node: str, key: str, part: ItemPart) -> ItemPart:
        """Store ``part``; returns it as read back (its text a view into the stored record,
        so that it is held once)."""
        payload = part.encode()
        digest = hashlib.sha256(payload).hexdigest()
        own_digest, own = _payload_head(payload)
        rec = _Record(key, digest, 0, len(payload), 0, None, own_digest, own)
        head = rec.header(node)
        record = head + payload
        self._records[node] = replace(rec, head=len(head), data=record)
        self.built += 1
        self._dirty = True
        back = ItemPart.decode(memoryview(record)[len(head) :])
        assert back is not None  # what encode writes, decode reads (tested)
        return back

    def save(self, keep: Iterable[str]) -> None:
        """Bring the file to the records of the nodes in ``keep`` when any changed or went:
        the new and changed records appended (:meth:`_append`), or the file written whole —
        sorted, those read from it copied as runs of bytes — when a node went, the file was
        damaged or replaced, or records no node uses would outweigh the used ones."""
        nodes = sorted(keep)
        if not self._dirty and len(nodes) == len(self._records):
            return
        if self._append(nodes):
            return
        records, source = self._records, self._file

        def write(fh: Any) -> None:
            run = [0, 0]  # records read from the file as they are, back to back: one copy

            def copy() -> None:
                if run[1] == run[0]:
                    return
                assert source is not None
                for at in range(run[0], run[1], _COPY_BLOCK):
                    fh.write(FileSpan(source, at, min(_COPY_BLOCK, run[1] - at)).read())
                run[0] = run[1] = 0

            for n in nodes:
                rec = records[n]
                if rec.data is None and rec.as_read:
                    if rec.start - rec.head != run[1] or not run[1]:
                        copy()
                        run[0] = rec.start - rec.head
                    run[1] = rec.start + rec.size
                    continue
                copy()
                if rec.data is not None:
                    fh.write(rec.data)
                    continue
                assert source is not None
                # Its header line as it is now (a record of the first layout gains its
                # payload's own line), then its payload copied.
                fh.write(rec.header(n))
                fh.write(FileSpan(source, rec.start, rec.size).read())
            copy()

        atomic_write(self.path, write, fsync=False)  # derived: rebuilt when lost

    def _append(self, nodes: list[str]) -> bool:
        """Append the records made in this run (a node's last record is its part when the
        file is read again): the file is not written whole for a part or two (≈ 107 MB at
        10,000 items, ≈ 0.2 s a run). False, having written nothing, when the file must be
        written whole instead."""
        records, source = self._records, self._file
        if source is None or self._damaged or self._size == 0 or set(nodes) != set(records):
            return False
        if any(r.data is None and not r.as_read for r in records.values()):
            return False  # records of an earlier layout: written whole, once
        pieces: list[bytes] = []
        placed: dict[str, _Record] = {}
        at = self._size
        for n in nodes:
            rec = records[n]
            if rec.data is None:
                continue
            pieces.append(rec.data)
            placed[n] = replace(rec, start=at + rec.head, data=None, as_read=True)
            at += len(rec.data)
        live = sum(r.head + r.size for n, r in records.items() if n not in placed)
        live += sum(r.head + r.size for r in placed.values())
        if not pieces or at > 2 * live:
            return False  # mostly records no node uses: written whole
        if not append_to_loaded(self.path, source.fileno(), self._size, b"".join(pieces)):
            return False  # not the file read (replaced, or grown by another process)
        records.update(placed)
        self._size, self._dirty = at, False
        return True


class Links:
    """Per source node its edges to other items, ``(target, type, weight)`` sorted — every
    RELATED_TO pair (from its smaller node ID) and every CITES edge of a library — held as
    arrays: both ends by their place among the node IDs named (sorted), the type and the
    weight, ≈ 21 bytes an edge where a list of tuples was ≈ 92 (≈ 195,000 edges, 18 MB, at
    10,000 items; issue 17)."""

    TYPES = ("CITES", "RELATED_TO")  # sorted: a type's code orders as its name does

    def __init__(
        self,
        related: Iterable[tuple[str, str, float]] | PairTable,
        cites: Mapping[str, Mapping[str, int]],
    ) -> None:
        if isinstance(related, PairTable):
            names, src, dst, kind, weight = self._from_table(related, cites)
        else:
            names, src, dst, kind, weight = self._from_pairs(related, cites)
        self._names = names  # sorted
        order = np.lexsort((weight, kind, dst, src))
        self._dst, self._kind, self._weight = dst[order], kind[order], weight[order]
        self._starts = np.searchsorted(src[order], np.arange(len(names) + 1))

    @staticmethod
    def _from_pairs(
        related: Iterable[tuple[str, str, float]], cites: Mapping[str, Mapping[str, int]]
    ) -> tuple[list[str], npt.NDArray[np.int32], npt.NDArray[np.int32], npt.NDArray[np.int8],
               npt.NDArray[np.float64]]:  # fmt: skip
        """The edges (sources and targets by their place among the sorted node IDs named),
        one pair at a time."""
        place: dict[str, int] = {}
        src, dst, kind, weight = array("i"), array("i"), array("b"), array("d")

        def add(a: str, b: str, code: int, w: float) -> None:
            src.append(place.setdefault(a, len(place)))
            dst.append(place.setdefault(b, len(place)))
            kind.append(code)
            weight.append(w)

        for a, b, pair_weight in related:
            add(a, b, 1, round(float(pair_weight), 6))
        for a, cited in cites.items():
            for b, count in cited.items():
                if count:
                    add(a, b, 0, float(count))
        names = list(place)
        place.clear()
        rank = sorted_rank(names).astype(np.int32)
        ordered: list[str] = [""] * len(names)  # sorted: each name at its rank
        for name, at in zip(names, rank.tolist(), strict=True):
            ordered[at] = name
        n = len(src)
        s = rank[np.frombuffer(src, np.int32)] if n else np.zeros(0, np.int32)
        d = rank[np.frombuffer(dst, np.int32)] if n else np.zeros(0, np.int32)
        k = np.frombuffer(kind, np.int8) if n else np.zeros(0, np.int8)
        w = np.frombuffer(weight, np.float64) if n else np.zeros(0, np.float64)
        return ordered, s, d, k, w

    @staticmethod
    def _from_table(
        table: PairTable, cites: Mapping[str, Mapping[str, int]]
    ) -> tuple[list[str], npt.NDArray[np.int32], npt.NDArray[np.int32], npt.NDArray[np.int8],
               npt.NDArray[np.float64]]:  # fmt: skip
        """:meth:`_from_pairs` of the table's pairs, in arrays: the pairs' ends renumbered
        among the node IDs named, no Python work per pair but its weight's rounding (≈ 195,000
        pairs at 10,000 items: 0.2 s one at a time)."""
        table_names, a, b, w = table.arrays()
        cite_rows = [(x, y, float(count)) for x, cited in cites.items()
                     for y, count in cited.items() if count]  # fmt: skip
        used = np.unique(np.concatenate((a, b))) if len(a) else np.zeros(0, np.int64)
        named = {table_names[i] for i in used.tolist()}
        named.update(x for x, _, _ in cite_rows)
        named.update(y for _, y, _ in cite_rows)
        names = sorted(named)
        # Each of the table's names at its place among ``names`` (-1: in no pair).
        place = {n: i for i, n in enumerate(names)}
        renumber = np.array([place.get(n, -1) for n in table_names], dtype=np.int32)
        rounded = np.array([round(x, 6) for x in w.tolist()], dtype=np.float64)
        s = np.concatenate((renumber[a], np.array([place[x] for x, _, _ in cite_rows], np.int32)))
        d = np.concatenate((renumber[b], np.array([place[y] for _, y, _ in cite_rows], np.int32)))
        k = np.concatenate((np.ones(len(a), np.int8), np.zeros(len(cite_rows), np.int8)))
        weight = np.concatenate((rounded, np.array([c for _, _, c in cite_rows], np.float64)))
        return names, s.astype(np.int32), d.astype(np.int32), k, weight

    def __len__(self) -> int:
        """The number of edges."""
        return len(self._dst)

    def get(self, node: str) -> list[tuple[str, str, float]]:
        """``node``'s edges, sorted (none when it has none)."""
        i = bisect_left(self._names, node)
        if i == len(self._names) or self._names[i] != node:
            return []
        return self._rows(i)

    def _rows(self, i: int) -> list[tuple[str, str, float]]:
        lo, hi = int(self._starts[i]), int(self._starts[i + 1])
        names, types = self._names, self.TYPES
        return [(names[d], types[k], w) for d, k, w in zip(
            self._dst[lo:hi].tolist(), self._kind[lo:hi].tolist(), self._weight[lo:hi].tolist(),
            strict=True)]  # fmt: skip

    def arrays(
        self,
    ) -> tuple[list[str], npt.NDArray[np.int64], npt.NDArray[np.int32], npt.NDArray[np.int8],
               npt.NDArray[np.float64]]:  # fmt: skip
        """Every edge as arrays: the node IDs named (sorted), then each edge's source and
        target by their place there, its type (its place in :attr:`TYPES`) and weight, by
        source."""
        counts = np.diff(self._starts)
        src = np.repeat(np.arange(len(self._names), dtype=np.int64), counts)
        return self._names, src, self._dst, self._kind, self._weight

    def edges(self) -> Iterator[tuple[str, str, str, float]]:
        """Every edge: ``(source, target, type, weight)``, by source."""
        for i, source in enumerate(self._names):
            if self._starts[i + 1] > self._starts[i]:
                for d, k, w in self._rows(i):
                    yield source, d, k, w


Topics = dict[str, list[tuple[str, float]]]
"""Per content node, its edges to topics: (topic node ID, weight), sorted."""


def topic_edges(high_topics: Iterable[tuple[str, float]]) -> list[tuple[str, float]]:
    """An item's edges to topics as :func:`arkai.search.graph.build_graph` makes them from its
    high-relevance terms: one per topic node (the weights of terms that share a node added),
    sorted."""
    weights: dict[str, float] = {}
    for term, score in high_topics:
        tid = node_id("topic", term)
        weights[tid] = _round(weights[tid] + float(score)) if tid in weights else _round(score)
    return sorted(weights.items())


@dataclass(frozen=True, slots=True)
class GraphParts:
    """Every item's part (sorted by node ID; their shared nodes and spellings already folded
    into ``shared``) and what joins them."""

    parts: Sequence[ItemPart]
    links: Links
    """Per source node, its edges to other items: (target, type, weight), sorted."""
    topics: Topics
    shared: SharedNodes
    """The Entity, Tag and Topic nodes, sorted."""
    titles: Mapping[str, str]
    ids: Mapping[str, str]
    """Content node ID → title, content ID."""
    text: bool = True
    """The parts hold their text (else only ``related.jsonl`` and the counts can be made)."""

    @property
    def edges(self) -> int:
        return (
            sum(p.edge_count for p in self.parts)
            + len(self.links)
            + sum(map(len, self.topics.values()))
        )

    @property
    def nodes(self) -> int:
        return len(self.parts) + len(self.shared)


def assemble(
    parts: Sequence[ItemPart],
    shared: SharedNodes,
    related: Mapping[tuple[str, str], float],
    cites: Mapping[str, Mapping[str, int]],
    titles: Mapping[str, str],
    ids: Mapping[str, str],
    high_topics: Mapping[str, Sequence[tuple[str, float]]],
) -> GraphParts:
    """The graph of the items whose ``parts`` these are (in node order, their shared nodes
    folded into ``shared``), with ``related`` (RELATED_TO between items, ``(smaller node ID,
    larger node ID)`` → weight), ``cites`` (content node ID → cited content node ID →
    occurrences) and ``high_topics`` (content node ID → its high-relevance terms and their
    scores); ``titles`` and ``ids``: each item's title and content ID by node ID. A
    ``related`` that is a ``dict`` is emptied as its pairs become links (every RELATED_TO
    pair of a library: it and the links are not held together)."""

    def pairs() -> Iterator[tuple[str, str, float]]:
        if isinstance(related, dict):
            while related:
                (a, b), w = related.popitem()
                yield a, b, w
        else:
            for (a, b), w in related.items():
                yield a, b, w

    links = Links(related if isinstance(related, PairTable) else pairs(), cites)
    topics = {p.node: t for p in parts if (t := topic_edges(high_topics.get(p.node, ())))}
    return GraphParts(parts, links, topics, shared, titles, ids)


class SharedNodes:
    """The Entity, Tag and Topic nodes, gathered from each item's part as it comes (in node
    order), so the parts need not keep their lists: a node that several items name is labelled
    as the first of them names it, an entity by its most frequent spelling (ties: the first
    in sort order), as :func:`build_graph` does. Iterated, the nodes sorted, as dicts."""

    def __init__(self) -> None:
        self._nodes: dict[str, tuple[str, str]] = {}
        """Node ID → (type, label or entity type)."""
        self._spelled: dict[str, tuple[str, int] | Counter[str]] = {}
        """Entity node ID → its one spelling and times, or a count of each once it has two."""

    def add(self, part: ItemPart, high_topics: Sequence[tuple[str, float]]) -> None:
        nodes = self._nodes
        for nid, kind, value in part.shared:
            if nid not in nodes:
                nodes[nid] = (kind, value)
        for eid, spelling, times in part.spellings:
            had = self._spelled.get(eid)
            if had is None:
                self._spelled[eid] = (spelling, times)
            elif isinstance(had, Counter):
                had[spelling] += times
            elif had[0] == spelling:
                self._spelled[eid] = (spelling, had[1] + times)
            else:
                self._spelled[eid] = Counter({had[0]: had[1], spelling: times})
        for term, _ in high_topics:
            tid = node_id("topic", term)
            if tid not in nodes:
                nodes[tid] = ("Topic", term)

    def __len__(self) -> int:
        return len(self._nodes)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for nid in sorted(self._nodes):
            kind, value = self._nodes[nid]
            if kind == "Entity":
                yield {"id": nid, "type": kind, "entity_type": value, "label": self._label(nid)}
            else:
                yield {"id": nid, "type": kind, "label": value}

    def _label(self, eid: str) -> str:
        had = self._spelled[eid]
        if isinstance(had, tuple):
            return had[0]
        return min(had.items(), key=lambda kv: (-kv[1], kv[0]))[0]


# The edges between items, from fixed templates: their ends are content node IDs, NMTOKENs by
# construction (:func:`arkai.search.graph.node_id`), which neither JSON nor XML escapes; their
# weights are floats (``repr``, as both writers give them); their evidence is empty.


def _json_link(src: str, dst: str, kind: str, weight: float) -> str:
    return (
        f'    {{\n      "evidence": [],\n      "source": "{src}",\n      "target": "{dst}",\n'
        f'      "type": "{kind}",\n      "weight": {weight!r}\n    }}'
    )


def _xml_link(src: str, dst: str, kind: str, weight: float) -> str:
    return (
        f'    <edge source="{src}" target="{dst}">\n      <data key="e_type">{kind}</data>\n'
        f'      <data key="e_weight">{weight!r}</data>\n    </edge>\n'
    )


# A topic node ID is an NMTOKEN too; it is escaped all the same (once per topic), so that the
# templates never depend on it.


class _TopicTargets:
    """A topic node ID as each file writes it, escaped once per topic."""

    def __init__(self) -> None:
        self._json: dict[str, str] = {}
        self._xml: dict[str, str] = {}

    def json(self, tid: str) -> str:
        out = self._json.get(tid)
        if out is None:
            out = self._json[tid] = _encode_str(tid)[1:-1]
        return out

    def xml(self, tid: str) -> str:
        out = self._xml.get(tid)
        if out is None:
            out = self._xml[tid] = _attr(tid)
        return out


def _need_text(gp: GraphParts) -> None:
    if not gp.text:
        raise ValueError("the graph's parts were read without their text: no export")


def _json_list(key: str, rows: Iterable[Bytes], batch: int) -> Iterator[bytes]:
    """``  "key": [ … ],`` of :func:`arkai.search.graph.iter_json`, in pieces. A row may be
    several rows already joined by ``,\\n``."""
    out: list[Bytes] = []
    started = False
    for row in rows:
        out.append(row)
        if len(out) >= batch:
            yield (b",\n" if started else f'  "{key}": [\n'.encode()) + b",\n".join(out)
            started = True
            out.clear()
    if out:
        yield (b",\n" if started else f'  "{key}": [\n'.encode()) + b",\n".join(out)
        started = True
    yield b"\n  ],\n" if started else f'  "{key}": [],\n'.encode()


def iter_json(gp: GraphParts, batch: int = 4096) -> Iterator[bytes]:
    """``graph.json`` (the bytes of :func:`arkai.search.graph.iter_json` for the same
    graph), in pieces."""
    _need_text(gp)
    links, topics, target = gp.links, gp.topics, _TopicTargets()

    def edges() -> Iterator[Bytes]:
        for p in gp.parts:
            for d, k, w in links.get(p.node):
                yield _json_link(p.node, d, k, w).encode()
            if len(p.json_edges):
                yield raw(p.json_edges)
            for tid, w in topics.get(p.node, ()):
                yield _json_link(p.node, target.json(tid), "RELATED_TO", w).encode()

    def nodes() -> Iterator[Bytes]:
        for p in gp.parts:
            yield raw(p.json_node)
        for node in gp.shared:
            yield json_row(node).encode("utf-8")

    yield b"{\n"
    yield from _json_list("edges", edges(), batch)
    yield from _json_list("nodes", nodes(), batch)
    yield f'  "version": {GRAPH_VERSION}\n}}\n'.encode()


def iter_graphml(gp: GraphParts, batch: int = 4096) -> Iterator[bytes]:
    """``graph.graphml`` (the bytes of :func:`arkai.search.graph.iter_graphml` for the same
    graph), in pieces."""
    _need_text(gp)
    out: list[Bytes] = [x.encode("utf-8") for x in graphml_head()]
    if not gp.parts:  # no Content node: no other node and no edge either
        out.append((GRAPHML_EMPTY + GRAPHML_END).encode())
        yield b"".join(out)
        return
    out.append(GRAPHML_OPEN.encode())
    for p in gp.parts:
        out.append(raw(p.xml_node))
        if len(out) >= batch:
            yield b"".join(out)
            out.clear()
    for node in gp.shared:
        out.append(xml_node(node).encode("utf-8"))
        if len(out) >= batch:
            yield b"".join(out)
            out.clear()
    links, topics, target = gp.links, gp.topics, _TopicTargets()
    for p in gp.parts:
        for d, k, w in links.get(p.node):
            out.append(_xml_link(p.node, d, k, w).encode())
        if len(p.xml_edges):
            out.append(raw(p.xml_edges))  # the part's edges as they were written
        for tid, w in topics.get(p.node, ()):
            out.append(_xml_link(p.node, target.xml(tid), "RELATED_TO", w).encode())
        if len(out) >= batch:
            yield b"".join(out)
            out.clear()
    out.append((GRAPHML_CLOSE + GRAPHML_END).encode())
    yield b"".join(out)


def related_jsonl(gp: GraphParts, batch: int = 2048) -> Iterator[bytes]:
    """``related.jsonl`` (what :func:`arkai.search.graph.related_lists` gives for the same
    graph), ``batch`` lines a piece."""
    return related_inputs(gp).lines(batch)


#: The modules whose code makes ``related.jsonl``'s lines from :class:`RelatedInputs`: their
#: source is part of :meth:`RelatedInputs.key` (other code, other lines).
RELATED_CODE = ("arkai.search.graph", "arkai.search.graphparts", "arkai.core.canonjson")


@dataclass(frozen=True)
class RelatedInputs:
    """Everything ``related.jsonl`` is made from: the item nodes in the file's order, the
    edges between two items (both ends by their place among them, the type by its place in
    ``RELATION_TYPES``, the weight) and each item's title and content ID."""

    nodes: list[str]
    src: npt.NDArray[np.int32]
    dst: npt.NDArray[np.int32]
    kind: npt.NDArray[np.int8]
    weight: npt.NDArray[np.float64]
    titles: Mapping[str, str]
    ids: Mapping[str, str]

    def lines(self, batch: int = 2048) -> Iterator[bytes]:
        """The file, ``batch`` lines a piece."""
        for piece in related_lines_of(self.nodes, self.src, self.dst, self.kind, self.weight,
                                      self.titles, self.ids, batch=batch):  # fmt: skip
            yield piece.encode("utf-8")

    def key(self) -> str:
        """A digest of every input of :meth:`lines` — and of the code that makes them, and
        its limit — so that equal keys give equal files (tested): the index stage writes the
        file again only when the key changed (≈ 0.35 s a run at 10,000 items, where one
        changed talk seldom moves a related list)."""
        h = hashlib.sha256(b"related.jsonl\0%d\0" % RELATED_LIMIT)
        h.update(json.dumps(list(RELATION_TYPES)).encode("utf-8"))
        h.update(source_digest(*RELATED_CODE).encode("ascii"))
        h.update(json.dumps([[n, self.ids[n], self.titles[n]] for n in self.nodes],
                            ensure_ascii=False).encode("utf-8", "surrogatepass"))  # fmt: skip
        for arr, dtype in ((self.src, "<i4"), (self.dst, "<i4"), (self.kind, "i1"),
                           (self.weight, "<f8")):  # fmt: skip
            data = np.ascontiguousarray(arr, dtype=dtype).tobytes()
            h.update(b"%d\0" % len(data) + data)
        return "sha256:" + h.hexdigest()


def related_inputs(gp: GraphParts) -> RelatedInputs:
    """What ``related.jsonl`` is made from, of the graph ``gp``: its links between items."""
    return related_inputs_of(gp.links, gp.titles, gp.ids)


def related_inputs_of(
    links: Links, titles: Mapping[str, str], ids: Mapping[str, str]
) -> RelatedInputs:
    """What ``related.jsonl`` is made from: the ``links`` between the items whose titles and
    content IDs (by node ID) these are."""
    nodes = item_nodes(titles, ids)
    place = {n: i for i, n in enumerate(nodes)}
    names, src, dst, kind, weight = links.arrays()
    # Each name's place among the items (-1: not an item), each type's among related_lines_of's.
    at = np.array([place.get(n, -1) for n in names], dtype=np.int64)
    del place
    codes = np.array([list(RELATION_TYPES).index(t) for t in Links.TYPES], dtype=np.int8)
    s, d = at[src], at[dst]
    items = (s >= 0) & (d >= 0)
    return RelatedInputs(nodes, s[items].astype(np.int32), d[items].astype(np.int32),
                         codes[kind[items]], weight[items], titles, ids)  # fmt: skip


def _first(pair: tuple[str, GraphItem]) -> str:
    return pair[0]


def part_key_of(it: GraphItem, settings: GraphSettings) -> str:
    """The key of ``it``'s part in the store (:func:`part_key`)."""
    # With ``made_from`` the key needs nothing _own works out (only a part made does).
    return part_key(it if it.made_from else _own(it, settings), settings)


def _item_part(
    store: PartStore,
    node: str,
    it: GraphItem,
    settings: GraphSettings,
    quotes: Callable[[GraphItem], Sequence[tuple[str, str]]] | None,
    text: bool,
    key: str,
) -> ItemPart:
    """``it``'s part from ``store`` when it holds it under ``key``, else made (its quotes from
    ``quotes`` when it has only their digest) and put there."""
    part = store.get(node, key, text=text)
    if part is None:
        own = _own(it, settings)
        if own.quotes is None:
            if quotes is None:
                raise ValueError(f"{it.content_id}: its quotes are needed for its part")
            got = quotes(it)
            if quotes_digest(got) != own.quotes_digest:
                raise ValueError(f"{it.content_id}: its quotes are not the ones digested")
            own = replace(own, quotes=got)
        part = store.put(node, key, make_part(own, settings))
    return part


def graph_parts(
    items: Sequence[GraphItem],
    settings: GraphSettings,
    related: Mapping[tuple[str, str], float],
    store: PartStore,
    quotes: Callable[[GraphItem], Sequence[tuple[str, str]]] | None = None,
    *,
    text: bool = True,
) -> GraphParts:
    """The graph of ``items`` with ``related`` (the :func:`arkai.search.graph.related_edges`
    of the items, kept incrementally): each item's part from ``store`` when it holds it for
    the item's inputs, else made and put there; the store is saved (with only these items).
    An item given with only its quotes' digest gets its quotes from ``quotes`` when its part
    is made (and only then). ``related`` is emptied when it is a ``dict`` (:func:`assemble`).
    ``text=False``: the parts' text is not read (:meth:`PartStore.get`), so the result makes
    ``related.jsonl`` and the counts, not the exports."""
    parts: list[ItemPart] = []
    shared = SharedNodes()
    cites: dict[str, Mapping[str, int]] = {}
    titles: dict[str, str] = {}
    ids: dict[str, str] = {}
    high: dict[str, Sequence[tuple[str, float]]] = {}
    find: Callable[[str, str], dict[str, int]] | None = None
    # In node order, each part's shared nodes and spellings folded in as it comes and not
    # kept with it (every item's lists were held: ≈ 40 MB at 10,000 items).
    nodes = sorted(((node_id("content", it.content_id), it) for it in items), key=_first)
    for node, it in nodes:
        part = _item_part(store, node, it, settings, quotes, text, part_key_of(it, settings))
        shared.add(part, it.high_topics or ())
        parts.append(ItemPart(part.node, part.json_node, part.json_edges, part.xml_node,
                              part.xml_edges, part.edge_count, (), ()))  # fmt: skip
        if it.cites is None:
            if find is None:
                find = cite_finder(cite_needles((i.content_id, i.title, i.url) for i in items))
            cites[node] = find(it.content_id, it.text)
        else:
            cites[node] = it.cites
        titles[node], ids[node] = it.title, it.content_id
        if it.high_topics:
            high[node] = it.high_topics
    store.save(titles)
    graph = assemble(parts, shared, related, cites, titles, ids, high)
    return graph if text else replace(graph, text=False)


# -- the counts without the exports: only the changed items' parts looked at ---------------


@dataclass
class PartSums:
    """The parts' share of the graph's counts: per item the key of the part it was counted
    with, the sum of those parts' edge counts, and per shared (Entity, Tag) node how many of
    them name it. A part is a function of its key, so these are right for any items with the
    same keys: a run adds and takes away only the parts of items whose key changed, came or
    went (:func:`counted_parts`). Kept in ``.arkai/index-cache/graph-sums.json`` — a header
    line with the SHA-256 of the body, then the body — rebuilt from every part when it is
    missing, damaged, of another version, or names a part the store no longer holds."""

    keys: dict[str, str]
    edges: int
    shared: dict[str, int]

    def add(self, part: ItemPart, sign: int) -> bool:
        """Count ``part`` in (``sign`` 1) or out (-1); False when that takes a count below
        zero (the sums are not what they claim)."""
        self.edges += sign * part.edge_count
        for nid, _, _ in part.shared:
            left = self.shared.get(nid, 0) + sign
            if left < 0:
                return False
            if left:
                self.shared[nid] = left
            else:
                self.shared.pop(nid, None)
        return self.edges >= 0

    def dump(self) -> bytes:
        body = canonjson.dumps_compact({"edges": self.edges, "keys": self.keys,
                                        "shared": self.shared}).encode("utf-8")  # fmt: skip
        head = {"digest": "sha256:" + hashlib.sha256(body).hexdigest(), "version": SUMS_VERSION}
        return canonjson.dumps_line(head).encode("utf-8") + body

    @classmethod
    def read(cls, path: Path) -> PartSums | None:
        """The sums kept in ``path``; None when there are none to trust."""
        try:
            raw = path.read_bytes()
            end = raw.index(b"\n")
            head, body = json.loads(raw[:end]), raw[end + 1 :]
            if not isinstance(head, dict) or head.get("version") != SUMS_VERSION:
                return None
            if head.get("digest") != "sha256:" + hashlib.sha256(body).hexdigest():
                return None
            doc = json.loads(body)
            keys, edges, shared = doc["keys"], doc["edges"], doc["shared"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if not (
            isinstance(keys, dict)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in keys.items())
            and type(edges) is int
            and edges >= 0
            and isinstance(shared, dict)
            and all(isinstance(k, str) and type(v) is int and v > 0 for k, v in shared.items())
        ):
            return None
        return cls(keys, edges, shared)


@dataclass(frozen=True, slots=True)
class Counted:
    """The graph's counts and what ``related.jsonl`` is made from, without its files."""

    nodes: int
    edges: int
    links: Links
    titles: dict[str, str]
    ids: dict[str, str]


def counted_parts(
    items: Sequence[GraphItem],
    settings: GraphSettings,
    related: Mapping[tuple[str, str], float],
    store: PartStore,
    quotes: Callable[[GraphItem], Sequence[tuple[str, str]]] | None,
    sums_path: Path,
    *,
    full: bool = False,
) -> Counted:
    """What :func:`graph_parts` with ``text=False`` gives — the node and edge counts, the
    links between items, each item's title and content ID — with only the parts of items
    whose part key changed, came or went looked at: the last run's :class:`PartSums` (in
    ``sums_path``) less their old parts plus their new ones. Every part is read (and the sums
    made again) with ``full``, without trusted sums, or when an old part is not in the store
    under the key the sums counted it with. Each item's part is kept in ``store`` as
    :func:`graph_parts` keeps it (made when missing; the store saved with these items only).
    Every item must come with its ``cites``."""
    nodes = sorted(((node_id("content", it.content_id), it) for it in items), key=_first)
    # Each item's CITES and topic edges first: an item given without its CITES is refused
    # before any part or sum is written.
    cites: dict[str, Mapping[str, int]] = {}
    topics: set[str] = set()
    topic_edges_count = 0
    for node, it in nodes:
        if it.cites is None:
            raise ValueError(f"{it.content_id}: its CITES counts are needed")
        cites[node] = it.cites
        # One edge per topic node its terms name (topic_edges' nodes, without their weights).
        named = {node_id("topic", term) for term, _ in it.high_topics or ()}
        topic_edges_count += len(named)
        topics |= named
    by_node = dict(nodes)
    keys = {node: part_key_of(it, settings) for node, it in nodes}
    sums = None if full else PartSums.read(sums_path)
    if sums is not None:
        for node in sorted(set(sums.keys) | set(keys)):
            old, new = sums.keys.get(node), keys.get(node)
            if old == new:
                continue
            if old is not None:
                gone = store.get(node, old, text=False)
                if gone is None or not sums.add(gone, -1):
                    sums = None
                    break
            if new is not None:
                sums.add(_item_part(store, node, by_node[node], settings, quotes, False, new), 1)
    if sums is None:
        sums = PartSums({}, 0, {})
        for node, it in nodes:
            sums.add(_item_part(store, node, it, settings, quotes, False, keys[node]), 1)
    sums.keys = keys
    titles = {node: it.title for node, it in nodes}
    ids = {node: it.content_id for node, it in nodes}
    store.save(titles)
    sums_path.parent.mkdir(parents=True, exist_ok=True)
    write_if_changed(sums_path, sums.dump(), fsync=False)  # derived: rebuilt when lost
    links = Links(related if isinstance(related, PairTable) else (
        (a, b, w) for (a, b), w in related.items()), cites)  # fmt: skip
    shared_nodes = len(topics.union(sums.shared))
    return Counted(len(nodes) + shared_nodes, sums.edges + len(links) + topic_edges_count,
                   links, titles, ids)  # fmt: skip
