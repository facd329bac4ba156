"""RELATED_TO edges between items, kept up to date incrementally in the per-item cache
(docs/index-format.md, "Incremental builds").

An item's ``related`` cache entry holds all of its RELATED_TO neighbours with their weights as
they were when it was written, and the *generation* of that write (one more than the highest
generation among the entries there were), keyed by a digest of the item's
:class:`~arkai.search.graph.Features` (entity and high-topic node IDs) and the graph settings.
An item whose entry is missing, damaged or made from other features is *changed*: its edges
are recomputed from an inverted index over the features the changed items have, and only its
entry is written. The edge between two items is the one the newer of their two entries
records (the same generation: written in one run, they agree): when that entry was written,
the other item already had its current features (else its own entry would be newer), so it is
what a computation over every item gives now (tested). A one-item change thus costs that
item's candidate pairs and one entry, not every pair of the library; reading the entries is
linear in the edges, like the graph files themselves.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from arkai.adapters.itemcache import ItemCache
from arkai.core import canonjson
from arkai.search.graph import Features, related_edges

PART = "related"
VERSION = 1


@dataclass(frozen=True, slots=True)
class RelatedUpdate:
    edges: dict[tuple[str, str], float]
    """``(smaller node ID, larger node ID)`` → weight, every RELATED_TO between items."""
    changed: int
    """Items whose edges were recomputed (and whose entries were written)."""


def _key(f: Features, min_shared_entities: int) -> str:
    doc = [VERSION, min_shared_entities, sorted(f.entities), sorted(f.topics)]
    return "sha256:" + hashlib.sha256(canonjson.dumps_line({"f": doc}).encode()).hexdigest()


def update_related(
    feats: Mapping[str, Features],
    content_ids: Mapping[str, str],
    cache: ItemCache,
    min_shared_entities: int,
    *,
    full: bool = False,
) -> RelatedUpdate:
    """The RELATED_TO edges between the items of ``feats`` (content node ID → features;
    ``content_ids`` maps each to its content ID, the cache's name for it), from the cache
    where it holds them and recomputed where not; the cache is brought up to date."""
    keys = {n: _key(f, min_shared_entities) for n, f in feats.items()}
    stored: dict[str, tuple[int, dict[str, float]]] = {}
    changed: set[str] = set()
    for n in feats:
        entry = _parse(None if full else cache.get(content_ids[n], keys[n], PART))
        if entry is None:
            changed.add(n)
        else:
            stored[n] = entry
    generation = 1 + max((g for g, _ in stored.values()), default=0)
    fresh: dict[str, dict[str, float]] = {n: {} for n in changed}
    if changed:
        for (a, b), w in related_edges(feats, min_shared_entities, among=changed).items():
            if a in fresh:
                fresh[a][b] = w
            if b in fresh:
                fresh[b][a] = w
    for n in sorted(changed):
        rows = [[o, w] for o, w in sorted(fresh[n].items())]
        cache.put(content_ids[n], keys[n], PART, {"generation": generation, "related": rows})
        stored[n] = (generation, fresh[n])
    edges: dict[tuple[str, str], float] = {}
    for a, (gen_a, nbs) in stored.items():
        for b, w in nbs.items():
            other = stored.get(b)  # None: an item no longer there
            if other is not None and (gen_a > other[0] or (gen_a == other[0] and a < b)):
                edges[(a, b) if a < b else (b, a)] = w
    return RelatedUpdate(edges, len(changed))


def _parse(data: dict[str, Any] | None) -> tuple[int, dict[str, float]] | None:
    """(generation, neighbours) of an intact entry's data."""
    if data is None:
        return None
    gen, rows = data.get("generation"), data.get("related")
    if not isinstance(gen, int) or not isinstance(rows, list):
        return None
    out: dict[str, float] = {}
    for r in rows:
        if not (isinstance(r, list) and len(r) == 2 and isinstance(r[0], str)):
            return None
        out[r[0]] = float(r[1])
    return gen, out
