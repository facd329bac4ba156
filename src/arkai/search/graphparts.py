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

**What is cached.** An item's *part* — its Content node and its edges to entities, tags and
topics, serialized for both files, with the Entity, Tag and Topic nodes it names and the
spellings of its entities — is a function of the item alone (its :class:`GraphItem` fields but
``cites``, and the settings). Parts are kept in one file, ``.arkai/index-cache/graph-parts.jsonl``,
one line per item: its node ID, key (a digest of those inputs), the SHA-256 of its payload and
the payload. A line whose digest or shape is wrong, or whose key is not the item's, is rebuilt,
never used (:attr:`PartStore.rejected` counts the damaged ones).

**What is computed each run.** The edges between items (RELATED_TO from
:mod:`arkai.search.graphcache`, CITES from the per-item counts) and the shared nodes (an
Entity's label is the most frequent spelling over every item) are written from small tuples
with fixed templates; everything else is the cached text, copied. ``related.jsonl`` comes from
the same edge tuples (:func:`arkai.search.graph.related_rows`).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from json.encoder import encode_basestring as _encode_str  # the C one where built
from pathlib import Path
from typing import Any

from arkai.adapters.fs import atomic_write
from arkai.core import canonjson
from arkai.search.graph import (
    GRAPH_VERSION,
    GRAPHML_CLOSE,
    GRAPHML_EMPTY,
    GRAPHML_END,
    GRAPHML_OPEN,
    GraphItem,
    GraphSettings,
    Needle,
    _entities,
    _scalar,
    build_graph,
    cite_needles,
    entity_mentions,
    find_cites,
    graphml_head,
    json_row,
    node_id,
    related_rows,
    throttled_quotes,
    xml_edge_rest,
    xml_node,
)

VERSION = 1
PARTS = Path(".arkai") / "index-cache" / "graph-parts.jsonl"


@dataclass(frozen=True, slots=True)
class ItemPart:
    """One item's share of the graph files that depends on it alone."""

    node: str
    """Its Content node ID."""
    json_node: str
    json_edges: tuple[str, ...]
    """Its edges to entities, tags and topics as ``graph.json`` has them (no commas)."""
    xml_node: str
    xml_edges: tuple[str, ...]
    """The same edges as ``graph.graphml`` has them, each after its ``id`` attribute."""
    shared: tuple[tuple[str, str, str], ...]
    """(node ID, ``Entity``/``Tag``/``Topic``, entity type or label) of the nodes it names."""
    spellings: tuple[tuple[str, str, int], ...]
    """(entity node ID, spelling, times) of its entities: an Entity's label is the most
    frequent spelling over every item."""

    def to_json(self) -> dict[str, Any]:
        return {
            "node": self.node, "jn": self.json_node, "je": list(self.json_edges),
            "xn": self.xml_node, "xe": list(self.xml_edges),
            "shared": [list(r) for r in self.shared], "spell": [list(r) for r in self.spellings],
        }  # fmt: skip

    @classmethod
    def from_json(cls, d: Any) -> ItemPart | None:
        """The part of a payload, or None when it has not this shape."""
        try:
            part = cls(
                d["node"], d["jn"], tuple(d["je"]), d["xn"], tuple(d["xe"]),
                tuple((a, b, c) for a, b, c in d["shared"]),
                tuple((a, b, c) for a, b, c in d["spell"]),
            )  # fmt: skip
        except (KeyError, TypeError, ValueError):
            return None
        strings = (part.node, part.json_node, part.xml_node, *part.json_edges, *part.xml_edges)
        rows_ok = all(isinstance(x, str) for r in part.shared for x in r) and all(
            isinstance(a, str) and isinstance(b, str) and type(c) is int
            for a, b, c in part.spellings
        )
        return part if rows_ok and all(isinstance(x, str) for x in strings) else None


def _own(it: GraphItem, s: GraphSettings) -> GraphItem:
    """``it`` with its quotes and mentions worked out and no CITES (not the part's)."""
    return replace(
        it,
        quotes=it.quotes if it.quotes is not None else throttled_quotes(it.evidence, s),
        mentions=it.mentions if it.mentions is not None else entity_mentions(it.entities),
        evidence=(), entities=(), text="", cites={},
    )  # fmt: skip


def part_key(it: GraphItem, s: GraphSettings) -> str:
    """A digest of what ``it``'s part is made from (``it`` as :func:`_own` gives it)."""
    doc = repr((
        VERSION, GRAPH_VERSION, s.min_confidence, s.max_evidence, it.content_id, it.title,
        it.path, it.content_type, it.url, tuple(it.tags), tuple(it.quotes or ()),
        tuple(it.mentions or ()), tuple(it.high_topics),
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
        json_node=json_row(content),
        json_edges=tuple(json_row(e) for e in g.edges),
        xml_node=xml_node(content),
        xml_edges=tuple(xml_edge_rest(e) for e in g.edges),
        shared=shared,
        spellings=tuple((e, sp, c) for (e, sp), c in sorted(spell.items())),
    )


class PartStore:
    """The parts file: read whole when opened, written back whole when a part changed."""

    def __init__(self, root: Path, *, full: bool = False) -> None:
        self.path = root / PARTS
        self.rejected = 0
        """Lines that failed a check (damaged): rebuilt, never used."""
        self.built = 0
        self._lines: dict[str, tuple[str, bytes]] = {}  # node → (key, line)
        self._dirty = full
        if full:
            return
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return
        for line in raw.splitlines(keepends=True):
            head = line.split(b"\t", 3)
            if len(head) != 4 or not line.endswith(b"\n"):
                self.rejected += 1
                self._dirty = True
                continue
            node, key = head[0].decode("utf-8", "replace"), head[1].decode("ascii", "replace")
            self._lines[node] = (key, line)

    def get(self, node: str, key: str) -> ItemPart | None:
        """The intact part stored for ``node`` with this ``key``."""
        entry = self._lines.get(node)
        if entry is None or entry[0] != key:
            return None
        _, _, digest, payload = entry[1].split(b"\t", 3)
        part = None
        if digest.decode("ascii", "replace") == hashlib.sha256(payload).hexdigest():
            try:
                part = ItemPart.from_json(json.loads(payload))
            except (ValueError, UnicodeDecodeError):
                part = None
        if part is None or part.node != node:
            self.rejected += 1
            return None
        return part

    def put(self, node: str, key: str, part: ItemPart) -> None:
        payload = canonjson.dumps_line(part.to_json()).encode("utf-8")
        digest = hashlib.sha256(payload).hexdigest()
        self._lines[node] = (key, b"\t".join((node.encode(), key.encode(), digest.encode(),
                                              payload)))  # fmt: skip
        self.built += 1
        self._dirty = True

    def save(self, keep: Iterable[str]) -> None:
        """Write the parts of the nodes in ``keep`` (sorted) when any changed or went."""
        nodes = sorted(keep)
        if not self._dirty and len(nodes) == len(self._lines):
            return
        lines = self._lines

        def write(fh: Any) -> None:
            for n in nodes:
                fh.write(lines[n][1])

        atomic_write(self.path, write, fsync=False)  # derived: rebuilt when lost


Links = dict[str, list[tuple[str, str, float]]]


@dataclass(frozen=True, slots=True)
class GraphParts:
    """Every item's part (sorted by node ID) and what joins them."""

    parts: Sequence[ItemPart]
    links: Links
    """Per source node, its edges to other items: (target, type, weight), sorted."""
    shared: Sequence[dict[str, Any]]
    """The Entity, Tag and Topic nodes, sorted."""
    titles: Mapping[str, str]
    ids: Mapping[str, str]
    """Content node ID → title, content ID."""

    @property
    def edges(self) -> int:
        return sum(len(p.json_edges) for p in self.parts) + sum(map(len, self.links.values()))

    @property
    def nodes(self) -> int:
        return len(self.parts) + len(self.shared)


def assemble(
    parts: Iterable[ItemPart],
    related: Mapping[tuple[str, str], float],
    cites: Mapping[str, Mapping[str, int]],
    titles: Mapping[str, str],
    ids: Mapping[str, str],
) -> GraphParts:
    """The graph of the items whose ``parts`` these are, with ``related`` (RELATED_TO between
    items, ``(smaller node ID, larger node ID)`` → weight) and ``cites`` (content node ID →
    cited content node ID → occurrences); ``titles`` and ``ids``: each item's title and
    content ID by node ID."""
    links: Links = {}
    for (a, b), w in related.items():
        links.setdefault(a, []).append((b, "RELATED_TO", round(float(w), 6)))
    for src, cited in cites.items():
        for dst, count in cited.items():
            if count:
                links.setdefault(src, []).append((dst, "CITES", float(count)))
    for rows in links.values():
        rows.sort()
    ordered = sorted(parts, key=lambda p: p.node)
    return GraphParts(ordered, links, _shared_nodes(ordered), titles, ids)


def _shared_nodes(parts: Iterable[ItemPart]) -> list[dict[str, Any]]:
    nodes: dict[str, dict[str, Any]] = {}
    spellings: dict[str, Counter[str]] = {}
    for p in parts:
        for nid, kind, value in p.shared:
            if nid not in nodes:
                key = "entity_type" if kind == "Entity" else "label"
                nodes[nid] = {"id": nid, "type": kind, key: value}
        for eid, spelling, times in p.spellings:
            spellings.setdefault(eid, Counter())[spelling] += times
    for eid, counts in spellings.items():
        # The most frequent spelling; ties go to the first in sort order (as build_graph).
        nodes[eid]["label"] = min(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0]
    return [nodes[k] for k in sorted(nodes)]


def _json_link(src: str, dst: str, kind: str, weight: float) -> str:
    return (
        f'    {{\n      "evidence": [],\n      "source": {_encode_str(src)},\n'
        f'      "target": {_encode_str(dst)},\n      "type": "{kind}",\n'
        f'      "weight": {_scalar(weight)}\n    }}'
    )


def _xml_link(src: str, dst: str, kind: str, weight: float) -> str:
    return xml_edge_rest({"source": src, "target": dst, "type": kind, "weight": weight})


def _json_list(key: str, rows: Iterable[str], batch: int) -> Iterator[bytes]:
    """``  "key": [ … ],`` of :func:`arkai.search.graph.iter_json`, in pieces."""
    out: list[str] = []
    started = False
    for row in rows:
        out.append(row)
        if len(out) >= batch:
            yield ((",\n" if started else f'  "{key}": [\n') + ",\n".join(out)).encode("utf-8")
            started = True
            out.clear()
    if out:
        yield ((",\n" if started else f'  "{key}": [\n') + ",\n".join(out)).encode("utf-8")
        started = True
    yield b"\n  ],\n" if started else f'  "{key}": [],\n'.encode()


def iter_json(gp: GraphParts, batch: int = 4096) -> Iterator[bytes]:
    """``graph.json`` (the bytes of :func:`arkai.search.graph.iter_json` for the same
    graph), in pieces."""
    links = gp.links

    def edges() -> Iterator[str]:
        for p in gp.parts:
            for d, k, w in links.get(p.node, ()):
                yield _json_link(p.node, d, k, w)
            yield from p.json_edges

    def nodes() -> Iterator[str]:
        for p in gp.parts:
            yield p.json_node
        for node in gp.shared:
            yield json_row(node)

    yield b"{\n"
    yield from _json_list("edges", edges(), batch)
    yield from _json_list("nodes", nodes(), batch)
    yield f'  "version": {GRAPH_VERSION}\n}}\n'.encode()


def iter_graphml(gp: GraphParts, batch: int = 4096) -> Iterator[bytes]:
    """``graph.graphml`` (the bytes of :func:`arkai.search.graph.iter_graphml` for the same
    graph), in pieces."""
    out = graphml_head()
    if not gp.parts:  # no Content node: no other node and no edge either
        out.append(GRAPHML_EMPTY + GRAPHML_END)
        yield "".join(out).encode("utf-8")
        return
    out.append(GRAPHML_OPEN)
    for p in gp.parts:
        out.append(p.xml_node)
    for node in gp.shared:
        out.append(xml_node(node))
        if len(out) >= batch:
            yield "".join(out).encode("utf-8")
            out.clear()
    links = gp.links
    n = 0
    for p in gp.parts:
        for d, k, w in links.get(p.node, ()):
            out.append(f'    <edge id="e{n}"{_xml_link(p.node, d, k, w)}')
            n += 1
        for rest in p.xml_edges:
            out.append(f'    <edge id="e{n}"{rest}')
            n += 1
        if len(out) >= batch:
            yield "".join(out).encode("utf-8")
            out.clear()
    out.append(GRAPHML_CLOSE + GRAPHML_END)
    yield "".join(out).encode("utf-8")


def related_jsonl(gp: GraphParts) -> bytes:
    """``related.jsonl`` (what :func:`arkai.search.graph.related_lists` gives for the same
    graph)."""
    edges = ((s, d, k, w) for s, rows in gp.links.items() for d, k, w in rows)
    return canonjson.dumps_lines(related_rows(edges, gp.titles, gp.ids)).encode("utf-8")


def graph_parts(
    items: Sequence[GraphItem],
    settings: GraphSettings,
    related: Mapping[tuple[str, str], float],
    store: PartStore,
) -> GraphParts:
    """The graph of ``items`` with ``related`` (the :func:`arkai.search.graph.related_edges`
    of the items, kept incrementally): each item's part from ``store`` when it holds it for
    the item's inputs, else made and put there; the store is saved (with only these items)."""
    parts: list[ItemPart] = []
    cites: dict[str, Mapping[str, int]] = {}
    titles: dict[str, str] = {}
    ids: dict[str, str] = {}
    needles: list[Needle] | None = None
    for it in items:
        own = _own(it, settings)
        key = part_key(own, settings)
        node = node_id("content", it.content_id)
        part = store.get(node, key)
        if part is None:
            part = make_part(own, settings)
            store.put(node, key, part)
        parts.append(part)
        if it.cites is None:
            if needles is None:
                needles = cite_needles((i.content_id, i.title, i.url) for i in items)
            cites[node] = find_cites(it.content_id, it.text, needles)
        else:
            cites[node] = it.cites
        titles[node], ids[node] = it.title, it.content_id
    store.save(titles)
    return assemble(parts, related, cites, titles, ids)
