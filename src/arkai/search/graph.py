"""The knowledge graph (``index/graph.json`` and ``index/graph.graphml``; seed 000, "Graph DB
Requirements" and "Graph DB Indexing Guidance"). Pure: items in, a :class:`Graph` out.

Nodes: ``Content`` (one per item), ``Entity`` (merged across items by normalised name and
type), ``Tag``, ``Topic`` (terms that are highly relevant to some item). Edges:

- ``MENTIONS`` Content → Entity: weight = mention count; evidence = IDs of the item's claims
  whose quote contains the entity's name, after the seed's throttle (resolved, confidence
  ≥ 0.8, not rejected, the 50 most confident per item).
- ``TAGGED_WITH`` Content → Tag.
- ``RELATED_TO`` Content ↔ Content (stored once, source < target) when two items share at
  least two entities or a high-relevance topic; weight = Jaccard similarity of their
  entity-and-high-topic sets. Each item keeps its best ``max_related`` such neighbours
  (weight descending, then node ID; 0: all); an edge is in when either end keeps the other.
  Also Content → Topic for each high-relevance term (weight = the term's TF-IDF score).
- ``CITES`` Content → Content when an item's transcript contains another item's URL or its
  exact title (titles shorter than ``MIN_TITLE_CHARS`` are not looked for); weight = number
  of occurrences.

Node IDs are XML NMTOKENs (GraphML requires it), the same in both files: ``content:<id>``,
``entity:<type>:<name>``, ``tag:<tag>``, ``topic:<term>``; a name that has characters outside
``[\\w.-]`` is slugged and suffixed with 8 hex digits of its digest. Output is sorted.
"""

from __future__ import annotations

import hashlib
import json
import re
from array import array
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from json.encoder import encode_basestring as _encode_str  # the C one where built
from typing import Any

import numpy as np
import numpy.typing as npt

from arkai.adapters.review import is_rejected
from arkai.core import canonjson
from arkai.model.evidence import EvidenceLine
from arkai.search.topics import normalize_term

GRAPH_VERSION = 1
MIN_CONFIDENCE = 0.8
MAX_EVIDENCE = 50
MIN_SHARED_ENTITIES = 2
MAX_RELATED = 20
MIN_TITLE_CHARS = 8
GRAPHML_NS = "http://graphml.graphdrawing.org/xmlns"
_XSI = "http://www.w3.org/2001/XMLSchema-instance"
_SCHEMA = "http://graphml.graphdrawing.org/xmlns/1.0/graphml.xsd"
_UNSAFE = re.compile(r"[^\w.\-]+")
_WORDS = re.compile(r"\w+")


@dataclass(frozen=True, slots=True)
class GraphItem:
    """What the graph needs of one item."""

    content_id: str
    title: str
    path: str
    content_type: str = ""
    url: str | None = None
    tags: Sequence[str] = ()
    text: str = ""
    """The transcript (for CITES)."""
    evidence: Sequence[EvidenceLine] = ()
    entities: Sequence[Mapping[str, Any]] = ()
    """``entities.json`` entries: ``name``, ``type``, ``mentions``."""
    high_topics: Sequence[tuple[str, float]] = ()
    """(term, TF-IDF score) of the item's high-relevance topics."""
    quotes: Sequence[tuple[str, str]] | None = None
    """:func:`throttled_quotes` of ``evidence``, when the caller has them (cached): then
    ``evidence`` is not looked at."""
    quotes_digest: str | None = None
    """:func:`quotes_digest` of the item's quotes, from a caller that holds the digest and not
    the quotes (the index stage: it reads an item's quotes only to make its graph part)."""
    mentions: Sequence[tuple[str, str, int]] | None = None
    """:func:`entity_mentions` of ``entities``, when the caller has them: then ``entities``
    is not looked at."""
    cites: Mapping[str, int] | None = None
    """:func:`find_cites` of ``text``, when the caller has them: then ``text`` is not read."""
    made_from: str | None = None
    """A digest of everything the item's quotes and mentions are made from, from a caller that
    has one (the index stage: its record's inputs key): a cached graph part is then looked up
    by it instead of by the quotes and mentions themselves
    (:func:`arkai.search.graphparts.part_key`)."""


@dataclass(frozen=True, slots=True)
class Needle:
    """What a CITES edge looks for: an item's URL or exact title."""

    target: str
    """The cited item's node ID."""
    text: str
    words: frozenset[str]


@dataclass(frozen=True, slots=True)
class GraphSettings:
    min_confidence: float = MIN_CONFIDENCE
    max_evidence: int = MAX_EVIDENCE
    min_shared_entities: int = MIN_SHARED_ENTITIES
    max_related: int = MAX_RELATED
    """RELATED_TO neighbours an item keeps (0: all)."""

    @classmethod
    def from_params(cls, p: Mapping[str, Any] | None) -> GraphSettings:
        p = p or {}
        return cls(
            min_confidence=float(p.get("min_confidence", MIN_CONFIDENCE)),
            max_evidence=int(p.get("max_evidence", MAX_EVIDENCE)),
            min_shared_entities=int(p.get("min_shared_entities", MIN_SHARED_ENTITIES)),
            max_related=int(p.get("max_related", MAX_RELATED)),
        )


@dataclass
class Graph:
    nodes: list[dict[str, Any]] = field(default_factory=list)
    edges: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"version": GRAPH_VERSION, "nodes": self.nodes, "edges": self.edges}


@lru_cache(maxsize=1 << 17)
def node_id(kind: str, *parts: str) -> str:
    """An NMTOKEN-safe node ID: ``kind:part:…`` (lossy parts get a digest suffix). Memoised:
    the index stage names every item's entities and topics on each run."""
    out = [kind]
    for part in parts:
        slug = _UNSAFE.sub("_", part).strip("_") or "_"
        if slug != part:
            slug += "." + hashlib.sha256(part.encode("utf-8")).hexdigest()[:8]
        out.append(slug)
    return ":".join(out)


def throttle(
    lines: Iterable[EvidenceLine],
    *,
    min_confidence: float = MIN_CONFIDENCE,
    cap: int = MAX_EVIDENCE,
) -> list[EvidenceLine]:
    """The seed's V1 throttle: resolved, confidence ≥ ``min_confidence``, not rejected; the
    ``cap`` most confident (ties by ID)."""
    kept = [
        ln
        for ln in lines
        if ln.status == "resolved" and ln.confidence >= min_confidence and not is_rejected(ln)
    ]
    kept.sort(key=lambda ln: (-ln.confidence, ln.id))
    return kept[: max(0, cap)]


def throttled_quotes(lines: Iterable[EvidenceLine], s: GraphSettings) -> list[tuple[str, str]]:
    """(claim ID, case-folded quote) of the claims a MENTIONS edge may cite as evidence."""
    kept = throttle(lines, min_confidence=s.min_confidence, cap=s.max_evidence)
    return [(ln.id, ln.quote.casefold()) for ln in kept]


def quotes_digest(quotes: Iterable[Sequence[str]]) -> str:
    """A digest of an item's quotes (:func:`throttled_quotes`: pairs of claim ID and quote),
    for a caller that keeps it instead of the quotes."""
    h = hashlib.sha256()
    for eid, quote in quotes:
        h.update(
            b"%d:%d:" % (len(eid), len(quote)) + f"{eid}{quote}".encode("utf-8", "surrogatepass")
        )
    return "sha256:" + h.hexdigest()


def entity_mentions(entities: Iterable[Mapping[str, Any]]) -> list[tuple[str, str, int]]:
    """(name, type, mention count ≥ 1) of ``entities.json`` entries."""
    out = []
    for ent in entities:
        mentions = ent.get("mentions")
        weight = max(1, len(mentions)) if isinstance(mentions, list) else 1
        out.append((str(ent.get("name", "")), str(ent.get("type", "")), weight))
    return out


def cite_needles(items: Iterable[tuple[str, str, str | None]]) -> list[Needle]:
    """The needles of (content ID, title, URL) triples: the URL, and the title when it has
    at least ``MIN_TITLE_CHARS`` characters."""
    out = []
    for content_id, title, url in items:
        dst = node_id("content", content_id)
        title = title.strip()
        for needle in (url or "", title if len(title) >= MIN_TITLE_CHARS else ""):
            if needle:
                out.append(Needle(dst, needle, frozenset(_WORDS.findall(needle))))
    return out


def find_cites(content_id: str, text: str, needles: Sequence[Needle]) -> dict[str, int]:
    """Cited node ID → occurrences in ``text``. A needle is searched for only in a text that
    has all of its words (cheap to rule out the rest)."""
    return cite_finder(needles)(content_id, text)


def cite_finder(needles: Sequence[Needle]) -> Callable[[str, str], dict[str, int]]:
    """:func:`find_cites` for many texts: the needles prepared once."""
    targets, wanted = needle_targets(needles), distinct_needles(needles)

    def find(content_id: str, text: str) -> dict[str, int]:
        return cites_of(node_id("content", content_id), cite_counts(text, wanted), targets)

    return find


def needle_targets(needles: Iterable[Needle]) -> dict[str, list[str]]:
    """Needle text → the node IDs it stands for (two items may share a title)."""
    out: dict[str, list[str]] = {}
    for n in needles:
        out.setdefault(n.text, []).append(n.target)
    return out


def distinct_needles(needles: Iterable[Needle]) -> list[tuple[str, frozenset[str]]]:
    """Each needle text once, with its words (what :func:`cite_counts` looks for)."""
    return list({n.text: n.words for n in needles}.items())


#: Below this many needle texts :func:`cite_counts` looks for each text in ``text`` first and
#: splits ``text`` into words only when one is there; above it, it splits ``text`` once.
FEW_NEEDLES = 16


def cite_counts(text: str, needles: Sequence[tuple[str, frozenset[str]]]) -> dict[str, int]:
    """Occurrences in ``text`` of each needle text (with its words) that has all of its words
    in ``text``, the nonzero ones: a function of the text and the needle text alone, so counts
    found once stay right while both do (:mod:`arkai.search.citecache`)."""
    out: dict[str, int] = {}
    words: frozenset[str] | None = None
    if len(needles) > FEW_NEEDLES:
        words = frozenset(_WORDS.findall(text))
        for t, w in needles:
            if w <= words and (count := text.count(t)):
                out[t] = count
        return out
    for t, w in needles:
        if t in text:
            if words is None:
                words = frozenset(_WORDS.findall(text))
            if w <= words:
                out[t] = text.count(t)
    return out


def cites_of(
    src: str, counts: Mapping[str, int], targets: Mapping[str, Sequence[str]]
) -> dict[str, int]:
    """Cited node ID → occurrences, from :func:`cite_counts` of the text of node ``src`` (an
    item cites no needle of its own)."""
    cites: Counter[str] = Counter()
    for t, count in counts.items():
        for dst in targets.get(t, ()):
            if dst != src:
                cites[dst] += count
    return {dst: count for dst, count in sorted(cites.items()) if count}


def _round(x: float) -> float:
    return round(float(x), 6)


def _entities(it: GraphItem) -> Iterator[tuple[str, str, str, int]]:
    """(name, type, normalised name, mention count) of the item's entities with a name."""
    mentions = it.mentions if it.mentions is not None else entity_mentions(it.entities)
    for raw_name, raw_type, weight in mentions:
        name = raw_name.strip()
        norm = normalize_term(name)
        if norm:
            yield name, raw_type.strip().lower() or "other", norm, weight


@dataclass(frozen=True, slots=True)
class Features:
    """What an item's RELATED_TO edges to other items are a function of: its entity and
    high-relevance topic node IDs, each sorted, once (tuples: every item's are held while the
    lists are kept up to date, and a set's table is several times the size)."""

    entities: tuple[str, ...]
    topics: tuple[str, ...]

    def __post_init__(self) -> None:  # any collection given: held sorted, each once
        for name in ("entities", "topics"):
            given = getattr(self, name)
            if not isinstance(given, tuple) or list(given) != sorted(set(given)):
                object.__setattr__(self, name, tuple(sorted(set(given))))

    @property
    def all(self) -> tuple[str, ...]:
        """Both (an entity's ID and a topic's never coincide: ``entity:…``, ``topic:…``)."""
        return self.entities + self.topics


def features(it: GraphItem) -> Features:
    return Features(
        tuple(sorted({node_id("entity", etype, norm) for _, etype, norm, _ in _entities(it)})),
        tuple(sorted({node_id("topic", term) for term, _ in it.high_topics})),
    )


def related_weight(a: Features, b: Features, min_shared_entities: int) -> float | None:
    """The RELATED_TO weight of two items (Jaccard of their features), or None when they
    share fewer than ``min_shared_entities`` entities and no topic."""
    shared_e = len(set(a.entities).intersection(b.entities))
    if shared_e < min_shared_entities and not set(a.topics).intersection(b.topics):
        return None
    fa, fb = set(a.all), b.all
    union = fa.union(fb)
    return _round(len(fa.intersection(fb)) / len(union)) if union else 0.0


class RelatedIndex:
    """An inverted index over the items' features (content node IDs → :class:`Features`):
    one item's RELATED_TO neighbours in O(items) array work, not one Python set operation per
    candidate pair. Candidates are the items that share a feature with it."""

    def __init__(self, feats: Mapping[str, Features], min_shared_entities: int) -> None:
        self.feats = feats
        self.min_shared_entities = min_shared_entities
        self.ids = sorted(feats)
        self.pos = {n: i for i, n in enumerate(self.ids)}
        holders: dict[str, list[int]] = {}
        for i, n in enumerate(self.ids):
            for f in feats[n].all:
                holders.setdefault(f, []).append(i)
        self._holders = {f: np.asarray(v, dtype=np.int64) for f, v in holders.items()}
        self._sizes = np.fromiter((len(feats[n].all) for n in self.ids), np.int64, len(self.ids))

    def _counts(self, fs: Iterable[str]) -> npt.NDArray[np.int64]:
        arrays = [self._holders[f] for f in fs if f in self._holders]
        if not arrays:
            return np.zeros(len(self.ids), dtype=np.int64)
        return np.bincount(np.concatenate(arrays), minlength=len(self.ids))

    def neighbours(self, node: str, cap: int = 0) -> list[tuple[str, float]]:
        """``node``'s RELATED_TO neighbours with their weights (as :func:`related_weight`
        gives them), best first — weight descending, then node ID — the first ``cap`` of
        them (0: all)."""
        f = self.feats[node]
        shared_e, shared_t = self._counts(f.entities), self._counts(f.topics)
        ok = ((shared_e >= self.min_shared_entities) | (shared_t > 0)) & (shared_e + shared_t > 0)
        ok[self.pos[node]] = False
        idx = np.flatnonzero(ok)
        inter = shared_e[idx] + shared_t[idx]
        union = len(f.all) + self._sizes[idx] - inter
        approx = inter / union  # the float ``related_weight`` rounds: i / u of the same ints
        if cap > 0 and len(idx) > cap:
            # Rounding to 6 digits moves a weight by at most 5e-7: every item whose rounded
            # weight could reach the cap-th best's is within 2e-6 of it.
            kth = float(np.partition(-approx, cap - 1)[cap - 1])
            near = approx >= -kth - 2e-6
            idx, approx = idx[near], approx[near]
        # Rounded as `_round` does, once per distinct value (weights of small sets repeat).
        values, inverse = np.unique(approx, return_inverse=True)
        rounded = np.array([_round(v) for v in values.tolist()], dtype=np.float64)[inverse]
        order = np.lexsort((idx, -rounded))  # weight descending, then node ID
        if cap > 0:
            order = order[:cap]
        ids = self.ids
        return [
            (ids[j], w) for j, w in zip(idx[order].tolist(), rounded[order].tolist(), strict=True)
        ]


class PairTable(Mapping[tuple[str, str], float]):
    """RELATED_TO pairs ``(smaller node ID, larger node ID)`` → weight, sorted, held as
    arrays: each end by its place among ``names`` (sorted) and the weight — ≈ 16 bytes a pair,
    where a dictionary entry of a tuple and a float was ≈ 100 (≈ 190,000 pairs at 10,000
    items; issue 17). Made by :meth:`of`; equal to a ``dict`` of the same pairs."""

    __slots__ = ("_a", "_b", "_names", "_w")

    def __init__(
        self, names: Sequence[str], a: npt.NDArray[np.int32], b: npt.NDArray[np.int32],
        w: npt.NDArray[np.float64],
    ) -> None:  # fmt: skip
        self._names, self._a, self._b, self._w = names, a, b, w

    @classmethod
    def of(cls, names: Sequence[str], a: array[int], b: array[int], w: array[float]) -> PairTable:
        """The pairs ``(names[a[k]], names[b[k]])`` → ``w[k]`` with ``a[k] < b[k]`` and
        ``names`` sorted; a pair given more than once has its last weight (as a ``dict``
        assigned in that order would)."""
        first = np.frombuffer(a, dtype=np.int32) if len(a) else np.zeros(0, np.int32)
        second = np.frombuffer(b, dtype=np.int32) if len(b) else np.zeros(0, np.int32)
        weight = np.frombuffer(w, dtype=np.float64) if len(w) else np.zeros(0, np.float64)
        key = first.astype(np.int64) * max(len(names), 1) + second
        order = np.argsort(key, kind="stable")
        ordered = key[order]
        last = np.ones(len(order), dtype=bool)
        last[:-1] = ordered[1:] != ordered[:-1]
        keep = order[last]
        return cls(names, first[keep], second[keep], weight[keep])

    def __getitem__(self, pair: tuple[str, str]) -> float:
        i, j = self._place(pair[0]), self._place(pair[1])
        if i is not None and j is not None:
            lo = int(np.searchsorted(self._a, i))
            hi = int(np.searchsorted(self._a, i, side="right"))
            at = lo + int(np.searchsorted(self._b[lo:hi], j))
            if at < hi and int(self._b[at]) == j:
                return float(self._w[at])
        raise KeyError(pair)

    def _place(self, node: str) -> int | None:
        i = bisect_left(self._names, node)
        return i if i < len(self._names) and self._names[i] == node else None

    def __iter__(self) -> Iterator[tuple[str, str]]:
        names = self._names
        return (
            (names[i], names[j]) for i, j in zip(self._a.tolist(), self._b.tolist(), strict=True)
        )

    def __len__(self) -> int:
        return len(self._a)

    def arrays(
        self,
    ) -> tuple[Sequence[str], npt.NDArray[np.int32], npt.NDArray[np.int32],
               npt.NDArray[np.float64]]:  # fmt: skip
        """The pairs as held: the node IDs (sorted), each pair's ends by their place there and
        its weight, sorted by ends."""
        return self._names, self._a, self._b, self._w

    def pairs(self) -> Iterator[tuple[str, str, float]]:
        """Every pair and its weight, sorted: ``(a, b, weight)``."""
        names = self._names
        for i, j, w in zip(self._a.tolist(), self._b.tolist(), self._w.tolist(), strict=True):
            yield names[i], names[j], w


def related_edges(
    feats: Mapping[str, Features], min_shared_entities: int, cap: int = 0
) -> dict[tuple[str, str], float]:
    """RELATED_TO between items (content node IDs → :class:`Features`), each pair once as
    ``(smaller ID, larger ID)``: the union of every item's best ``cap`` neighbours
    (:meth:`RelatedIndex.neighbours`; 0: all of them) — a pair is related when either keeps
    the other — so at most items × ``cap`` edges."""
    index = RelatedIndex(feats, min_shared_entities)
    out: dict[tuple[str, str], float] = {}
    for a in index.ids:
        for b, w in index.neighbours(a, cap):
            out[(a, b) if a < b else (b, a)] = w
    return dict(sorted(out.items()))


def build_graph(
    items: Sequence[GraphItem],
    settings: GraphSettings | None = None,
    related: Mapping[tuple[str, str], float] | None = None,
) -> Graph:
    """The graph over ``items`` (any order; the result does not depend on it). ``related``:
    the :func:`related_edges` of the items when the caller has them (kept incrementally)."""
    s = settings or GraphSettings()
    items = sorted(items, key=lambda it: it.content_id)
    nodes: dict[str, dict[str, Any]] = {}
    edges: dict[tuple[str, str, str], dict[str, Any]] = {}
    labels: dict[str, Counter[str]] = {}

    def edge(src: str, dst: str, kind: str, weight: float, evidence: Iterable[str] = ()) -> None:
        key = (src, dst, kind)
        if key in edges:
            e = edges[key]
            e["weight"] = _round(e["weight"] + weight)
            e["evidence"] = sorted(set(e["evidence"]) | set(evidence))
        else:
            edges[key] = {
                "source": src,
                "target": dst,
                "type": kind,
                "weight": _round(weight),
                "evidence": sorted(set(evidence)),
            }

    for it in items:
        cid = node_id("content", it.content_id)
        node: dict[str, Any] = {
            "id": cid,
            "type": "Content",
            "label": it.title,
            "content_id": it.content_id,
            "content_type": it.content_type,
            "path": it.path,
        }
        if it.url:
            node["url"] = it.url
        nodes[cid] = node
        for tag in sorted({str(t) for t in it.tags if str(t).strip()}):
            tid = node_id("tag", tag)
            nodes.setdefault(tid, {"id": tid, "type": "Tag", "label": tag})
            edge(cid, tid, "TAGGED_WITH", 1.0)
        quotes = it.quotes if it.quotes is not None else throttled_quotes(it.evidence, s)
        for raw_name, etype, norm, weight in _entities(it):
            eid = node_id("entity", etype, norm)
            labels.setdefault(eid, Counter())[" ".join(raw_name.split())] += 1
            nodes.setdefault(eid, {"id": eid, "type": "Entity", "entity_type": etype})
            evidence = [eid_ for eid_, q in quotes if norm in q]
            edge(cid, eid, "MENTIONS", float(weight), evidence)
        for term, score in it.high_topics:
            tid = node_id("topic", term)
            nodes.setdefault(tid, {"id": tid, "type": "Topic", "label": term})
            edge(cid, tid, "RELATED_TO", float(score))

    for eid, counts in labels.items():
        # The most frequent spelling; ties go to the first in sort order.
        nodes[eid]["label"] = min(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0]

    # RELATED_TO between items: from the caller (kept up to date incrementally) or computed.
    if related is None:
        related = related_edges({node_id("content", it.content_id): features(it) for it in items},
                                s.min_shared_entities, s.max_related)  # fmt: skip
    for (a, b), jaccard in sorted(related.items()):
        edge(a, b, "RELATED_TO", jaccard)

    # CITES: an item's transcript holds another item's URL or exact title.
    find = cite_finder(cite_needles((it.content_id, it.title, it.url) for it in items))
    for it in items:
        src = node_id("content", it.content_id)
        cites = it.cites if it.cites is not None else find(it.content_id, it.text)
        for dst, count in sorted(cites.items()):
            if count:
                edge(src, dst, "CITES", float(count))

    return Graph(
        nodes=[nodes[k] for k in sorted(nodes)],
        edges=[edges[k] for k in sorted(edges)],
    )


# -- graph.json ----------------------------------------------------------------------------


def _scalar(v: Any) -> str:
    """A JSON scalar as :func:`json.dumps` writes it (``ensure_ascii=False``)."""
    if isinstance(v, str):
        return _encode_str(v)
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return _FLOATS.get(repr(v), repr(v))
    if isinstance(v, int):
        return int.__repr__(v)
    return json.dumps(v, ensure_ascii=False)


_FLOATS = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def _indented(v: Any, pad: str) -> str:
    """``v`` as ``json.dumps(v, indent=2, sort_keys=True, ensure_ascii=False)`` writes it
    nested at indent ``pad``."""
    if isinstance(v, dict):
        if not v:
            return "{}"
        if not all(isinstance(k, str) for k in v):
            text = json.dumps(v, indent=2, sort_keys=True, ensure_ascii=False)
            return text.replace("\n", "\n" + pad)
        inner = pad + "  "
        body = ",\n".join(f"{inner}{_encode_str(k)}: {_indented(v[k], inner)}" for k in sorted(v))
        return f"{{\n{body}\n{pad}}}"
    if isinstance(v, list):
        if not v:
            return "[]"
        inner = pad + "  "
        body = ",\n".join(inner + _indented(x, inner) for x in v)
        return f"[\n{body}\n{pad}]"
    return _scalar(v)


def json_row(row: Mapping[str, Any]) -> str:
    """One node or edge of :func:`iter_json` as it stands in the file (indented, no comma)."""
    return "    " + _indented(row, "    ")


def iter_json(graph: Graph, batch: int = 4096) -> Iterator[bytes]:
    """``graph.json`` in pieces (a few thousand nodes or edges each): the bytes
    :func:`arkai.core.canonjson.dumps` gives for :meth:`Graph.to_dict` (tested), without the
    standard library's pure-Python encoder that an indented document goes through (several
    times slower on a large graph) and without the whole document in memory."""
    doc = graph.to_dict()
    if set(doc) != {"edges", "nodes", "version"}:  # pragma: no cover - to_dict's shape
        yield (_indented(doc, "") + "\n").encode("utf-8")
        return
    yield b"{\n"
    for key in ("edges", "nodes"):
        rows = doc[key]
        if not rows:
            yield f'  "{key}": [],\n'.encode()
            continue
        yield f'  "{key}": [\n'.encode()
        for start in range(0, len(rows), batch):
            part = ",\n".join(json_row(r) for r in rows[start : start + batch])
            yield (part + (",\n" if start + batch < len(rows) else "\n")).encode("utf-8")
        yield b"  ],\n"
    yield f'  "version": {_scalar(doc["version"])}\n}}\n'.encode()


def to_json(graph: Graph) -> bytes:
    """:func:`iter_json`, whole."""
    return b"".join(iter_json(graph))


# -- related.jsonl -------------------------------------------------------------------------

#: Most related items listed per item in ``index/related.jsonl``.
RELATED_LIMIT = 20
_RELATIONS = {"RELATED_TO": ("related", "related"), "CITES": ("cites", "cited by")}
#: The edge types :func:`related_lines_of` lists, in the order of its type codes.
RELATION_TYPES = tuple(_RELATIONS)


def related_lists(graph: Graph, limit: int = RELATED_LIMIT) -> Iterator[dict[str, Any]]:
    """Per item (by content ID, sorted) the items it is related to, cites or is cited by:
    ``{"id", "related": [[content_id, relation, weight], …]}``, best first (weight, then the
    other item's title), each other item once, at most ``limit``; items with none are left
    out. What a reader of one item's neighbours needs without reading the whole graph."""
    content = [n for n in graph.nodes if n["type"] == "Content"]
    titles = {n["id"]: str(n.get("label", "")) for n in content}
    ids = {n["id"]: str(n["content_id"]) for n in content}
    links = (
        (e["source"], e["target"], e["type"], float(e["weight"]))
        for e in graph.edges
        if e["type"] in _RELATIONS
    )
    return related_rows(links, titles, ids, limit)


def related_rows(
    links: Iterable[tuple[str, str, str, float]],
    titles: Mapping[str, str],
    ids: Mapping[str, str],
    limit: int = RELATED_LIMIT,
) -> Iterator[dict[str, Any]]:
    """:func:`related_lists` from the edges alone: (source, target, type, weight) of the
    RELATED_TO and CITES edges; ``titles`` and ``ids`` (label and content ID by content node
    ID) say which ends are items. Each edge is held as four numbers (:func:`related_lines_of`)."""
    nodes = item_nodes(titles, ids)
    place = {n: i for i, n in enumerate(nodes)}
    kinds = {kind: i for i, kind in enumerate(_RELATIONS)}
    src, dst, kind, weight = array("i"), array("i"), array("b"), array("d")
    for s, t, k, w in links:
        code = kinds.get(k)
        i, j = place.get(s), place.get(t)
        if code is None or i is None or j is None:
            continue
        src.append(i)
        dst.append(j)
        kind.append(code)
        weight.append(w)
    del place
    arrays = (np.frombuffer(src, np.int32), np.frombuffer(dst, np.int32),
              np.frombuffer(kind, np.int8), np.frombuffer(weight, np.float64))  # fmt: skip
    for piece in related_lines_of(nodes, *arrays, titles, ids, limit):
        # (Split on newlines only: U+2028 may sit inside an ID.)
        yield from map(json.loads, piece.split("\n")[:-1])


def item_nodes(titles: Mapping[str, str], ids: Mapping[str, str]) -> list[str]:
    """The items' content node IDs in the order of their content IDs (``related.jsonl``'s)."""
    return sorted(titles, key=ids.__getitem__)


def _dense_rank(values: Sequence[str]) -> npt.NDArray[np.int64]:
    """Each value's place among the distinct values sorted (equal values, equal places)."""
    order = sorted(range(len(values)), key=values.__getitem__)
    rank = np.zeros(len(values), dtype=np.int64)
    at, last = -1, None
    for n, i in enumerate(order):
        if n == 0 or values[i] != last:
            at, last = at + 1, values[i]
        rank[i] = at
    return rank


def related_lines_of(
    nodes: Sequence[str],
    src: npt.NDArray[np.int32],
    dst: npt.NDArray[np.int32],
    kind: npt.NDArray[np.int8],
    weight: npt.NDArray[np.float64],
    titles: Mapping[str, str],
    ids: Mapping[str, str],
    limit: int = RELATED_LIMIT,
    batch: int = 2048,
) -> Iterator[str]:
    """:func:`related_lists`'s rows from the edges as arrays — both ends by their place in
    ``nodes`` (:func:`item_nodes`), the type by its place in ``RELATED_TO``, ``CITES``, the
    weight — as lines of compact canonical JSON (:func:`arkai.core.canonjson.dumps_line`'s
    text, tested), ``batch`` lines a piece.

    Each edge is listed both ways round (its relation seen from each end), and every item's
    entries are sorted in one pass — weight (highest first), then the other item's title,
    the relation and the other item's node ID — each other item kept once (its best entry)
    and the first ``limit`` kept (issue 17: sorting each item's entries as tuples was ≈ 0.9
    s at 10,000 items). The lines are made as text: each item's and relation's JSON string
    and each distinct weight's number once, each entry joined from them (the rows made as
    lists, then encoded, were ≈ 0.4 s at 10,000 items)."""
    keep = src != dst
    src, dst, kind, weight = src[keep], dst[keep], kind[keep], weight[keep]
    if not len(src):
        return
    names = sorted({rel for pair in _RELATIONS.values() for rel in pair})
    code = {rel: i for i, rel in enumerate(names)}
    forward = np.array([code[pair[0]] for pair in _RELATIONS.values()], dtype=np.int64)
    backward = np.array([code[pair[1]] for pair in _RELATIONS.values()], dtype=np.int64)
    s = np.concatenate([src, dst]).astype(np.int64)
    d = np.concatenate([dst, src]).astype(np.int64)
    rel = np.concatenate([forward[kind], backward[kind]])
    neg = -np.concatenate([weight, weight])
    title_rank = _dense_rank([titles[n] for n in nodes])
    node_rank = _dense_rank(list(nodes))
    order = np.lexsort((node_rank[d], rel, title_rank[d], neg, s))
    s, d, rel, neg = s[order], d[order], rel[order], neg[order]
    # Each other item once: its first (best) entry.
    _, first = np.unique(s * len(nodes) + d, return_index=True)
    once = np.zeros(len(s), dtype=bool)
    once[first] = True
    s, d, rel, neg = s[once], d[once], rel[once], neg[once]
    starts = np.flatnonzero(np.diff(s, prepend=-1))
    ends = [*starts.tolist()[1:], len(s)]
    bounds = [(lo, min(hi, lo + limit)) for lo, hi in zip(starts.tolist(), ends, strict=True)]
    quoted = np.array([canonjson.dumps_compact(ids[n]) for n in nodes], dtype=object)
    opened = "[" + quoted + ","  # each item as an entry's first field
    rel_text = np.array([canonjson.dumps_compact(r) + "," for r in names], dtype=object)
    # Each distinct weight (by its bits: -0.0 is not 0.0) written once, as the encoder does.
    bits, at = np.unique(np.negative(neg).view(np.uint64), return_inverse=True)
    numbers = np.array(
        [canonjson.dumps_compact(float(w)) + "]" for w in bits.view(np.float64).tolist()],
        dtype=object,
    )
    listed = np.zeros(len(s), dtype=bool)  # each item's first ``limit`` entries
    for lo, hi in bounds:
        listed[lo:hi] = True
    entries = (opened[d[listed]] + rel_text[rel[listed]] + numbers[at.reshape(-1)[listed]]).tolist()
    firsts = quoted[s[listed]].tolist()
    lines: list[str] = []
    at_entry = 0
    for lo, hi in bounds:
        end = at_entry + hi - lo
        lines.append(
            '{"id":' + firsts[at_entry] + ',"related":[' + ",".join(entries[at_entry:end]) + "]}\n"
        )
        at_entry = end
        if len(lines) >= batch:
            yield "".join(lines)
            lines.clear()
    if lines:
        yield "".join(lines)


# -- GraphML ------------------------------------------------------------------------------

_NODE_ATTRS: tuple[tuple[str, str], ...] = (
    ("type", "string"),
    ("label", "string"),
    ("content_id", "string"),
    ("content_type", "string"),
    ("path", "string"),
    ("url", "string"),
    ("entity_type", "string"),
)
_EDGE_ATTRS: tuple[tuple[str, str], ...] = (
    ("type", "string"),
    ("weight", "double"),
    ("evidence", "string"),
)


def _value(value: Any, kind: str) -> str:
    if kind == "double":
        return repr(float(value))
    if isinstance(value, list):
        return " ".join(str(v) for v in value)
    return str(value)


_ATTR_ESCAPES = str.maketrans(
    {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "\r": "&#13;", "\n": "&#10;",
     "\t": "&#09;"}
)  # fmt: skip
_TEXT_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})


def _data(key: str, text: str) -> str:
    if not text:
        return f'      <data key="{key}" />\n'
    return f'      <data key="{key}">{text.translate(_TEXT_ESCAPES)}</data>\n'


def _attr(value: str) -> str:
    return value.translate(_ATTR_ESCAPES)


def xml_node(node: Mapping[str, Any]) -> str:
    """One ``<node>`` element of :func:`iter_graphml`, its lines."""
    body = [
        _data(f"n_{name}", _value(node[name], kind))
        for name, kind in _NODE_ATTRS
        if node.get(name) not in (None, "")
    ]
    head = f'    <node id="{_attr(node["id"])}"'
    return f"{head}>\n{''.join(body)}    </node>\n" if body else f"{head} />\n"


def xml_edge(edge: Mapping[str, Any]) -> str:
    """One ``<edge>`` element of :func:`iter_graphml`, its lines. It has no ``id`` (optional
    in GraphML): a position in the file would name another edge whenever one before it came
    or went, and would keep an item's edges from being copied as they were written."""
    body = [
        _data(f"e_{name}", _value(edge[name], kind))
        for name, kind in _EDGE_ATTRS
        if edge.get(name) is not None and not (isinstance(edge[name], list) and not edge[name])
    ]
    head = f'    <edge source="{_attr(edge["source"])}" target="{_attr(edge["target"])}"'
    return f"{head}>\n{''.join(body)}    </edge>\n" if body else f"{head} />\n"


GRAPHML_EMPTY = '  <graph id="arkai" edgedefault="directed" />\n'
GRAPHML_OPEN = '  <graph id="arkai" edgedefault="directed">\n'
GRAPHML_CLOSE = "  </graph>\n"
GRAPHML_END = "</graphml>\n"


def graphml_head() -> list[str]:
    """The lines of :func:`iter_graphml` before the graph: the declaration and the keys."""
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>\n',
        f'<graphml xmlns="{GRAPHML_NS}" xmlns:xsi="{_XSI}" '
        f'xsi:schemaLocation="{_attr(f"{GRAPHML_NS} {_SCHEMA}")}">\n',
    ]
    for scope, attrs, prefix in (("node", _NODE_ATTRS, "n"), ("edge", _EDGE_ATTRS, "e")):
        for name, kind in attrs:
            out.append(
                f'  <key id="{prefix}_{name}" for="{scope}" attr.name="{name}" '
                f'attr.type="{kind}" />\n'
            )
    return out


def to_graphml(graph: Graph) -> bytes:
    """:func:`iter_graphml`, whole."""
    return b"".join(iter_graphml(graph))


def iter_graphml(graph: Graph, batch: int = 4096) -> Iterator[bytes]:
    """The graph as GraphML 1.0 (keys declared with types; ``evidence`` space-separated),
    written line by line, in pieces of a few thousand nodes or edges: the bytes
    ``xml.etree.ElementTree`` gives for the same document indented by two spaces (tested), at
    a fraction of the cost of building the tree."""

    out = graphml_head()
    if not graph.nodes and not graph.edges:
        out.append(GRAPHML_EMPTY)
    else:
        out.append(GRAPHML_OPEN)
        for node in graph.nodes:
            out.append(xml_node(node))
            if len(out) >= batch:
                yield "".join(out).encode("utf-8")
                out.clear()
        for edge in graph.edges:
            out.append(xml_edge(edge))
            if len(out) >= batch:
                yield "".join(out).encode("utf-8")
                out.clear()
        out.append(GRAPHML_CLOSE)
    out.append(GRAPHML_END)
    yield "".join(out).encode("utf-8")
