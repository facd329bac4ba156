"""RELATED_TO edges kept incrementally (arkai.search.graphcache) and the per-item related lists
(index/related.jsonl): always what a computation over every item gives."""

from __future__ import annotations

import random
from pathlib import Path

from arkai.adapters.itemcache import ItemCache
from arkai.search.graph import (
    Features,
    Graph,
    GraphItem,
    build_graph,
    features,
    related_edges,
    related_lists,
)
from arkai.search.graphcache import PART, update_related

ENTITIES = [f"entity:person:p{i}" for i in range(12)]
TOPICS = [f"topic:t{i}" for i in range(6)]


def random_features(rng: random.Random) -> Features:
    return Features(
        frozenset(rng.sample(ENTITIES, rng.randint(0, 5))),
        frozenset(rng.sample(TOPICS, rng.randint(0, 2))),
    )


def test_incremental_edges_equal_a_full_computation(tmp_path: Path) -> None:
    rng = random.Random(7)
    feats = {f"content:{i:04d}": random_features(rng) for i in range(60)}
    cache = ItemCache(tmp_path)

    def update(**kw: bool) -> int:
        ids = {n: n.split(":")[1] for n in feats}
        got = update_related(feats, ids, ItemCache(tmp_path), 2, **kw)
        assert got.edges == related_edges(feats, 2)
        return got.changed

    assert update() == 60  # nothing cached: every item computed
    assert related_edges(feats, 2)  # the fixture has edges to keep
    assert update() == 0  # nothing changed: nothing recomputed
    # One item's features change: only its edges are recomputed.
    feats["content:0007"] = Features(frozenset(ENTITIES[:4]), frozenset(TOPICS[:1]))
    assert update() == 1
    # One added, one removed (its edges go from its old neighbours' entries).
    feats["content:0100"] = Features(frozenset(ENTITIES[2:6]), frozenset())
    del feats["content:0003"]
    assert update() == 1
    # Rounds of random changes, each to a few items (neighbours of earlier changes included).
    for _ in range(12):
        picked = rng.sample(sorted(feats), 3)
        for n in picked:
            feats[n] = random_features(rng)
        assert update() == 3
    # Damaged and missing entries are recomputed, never used.
    path = cache.path("0011", PART)
    path.write_bytes(path.read_bytes()[:-20])
    cache.path("0012", PART).unlink()
    assert update() == 2
    # Other settings: every item again; `full` trusts no entry.
    ids = {n: n.split(":")[1] for n in feats}
    got = update_related(feats, ids, ItemCache(tmp_path), 1)
    assert got.changed == len(feats) and got.edges == related_edges(feats, 1)
    assert update(full=True) == len(feats)


def test_build_graph_with_given_edges_is_the_computed_graph() -> None:
    items = [
        GraphItem(
            content_id=c,
            title=c.upper(),
            path=c,
            entities=[{"name": n, "type": "person"} for n in names],
            high_topics=[(t, 0.5) for t in topics],
        )
        for c, names, topics in (
            ("a", ["Ann", "Bo", "Cy"], ["hive"]),
            ("b", ["Ann", "Bo"], []),
            ("c", ["Cy"], ["hive"]),
            ("d", ["Dee"], []),
        )
    ]
    feats = {f"content:{it.content_id}": features(it) for it in items}
    edges = related_edges(feats, 2)
    assert set(edges) == {("content:a", "content:b"), ("content:a", "content:c")}
    assert build_graph(items, related=edges) == build_graph(items)


def test_related_lists_best_first_both_directions_capped() -> None:
    nodes = [
        {"id": f"content:{c}", "type": "Content", "label": t, "content_id": c}
        for c, t in (("a", "Zed"), ("b", "Beta"), ("c", "Alpha"), ("d", "Delta"))
    ] + [{"id": "topic:x", "type": "Topic", "label": "x"}]

    def e(s: str, t: str, kind: str, w: float) -> dict[str, object]:
        return {"source": s, "target": t, "type": kind, "weight": w, "evidence": []}

    graph = Graph(
        nodes=nodes,
        edges=[
            e("content:a", "content:b", "RELATED_TO", 0.5),
            e("content:a", "content:c", "RELATED_TO", 0.5),
            e("content:a", "content:b", "CITES", 2.0),
            e("content:a", "topic:x", "RELATED_TO", 0.9),  # not an item: left out
            e("content:a", "content:d", "MENTIONS", 3.0),  # not a relation between items
        ],
    )
    lists = list(related_lists(graph))
    assert lists == [
        # Highest weight first; a tie goes to the title (Alpha before Beta); b once.
        {"id": "a", "related": [["b", "cites", 2.0], ["c", "related", 0.5]]},
        {"id": "b", "related": [["a", "cited by", 2.0]]},
        {"id": "c", "related": [["a", "related", 0.5]]},
    ]
    assert next(x["related"] for x in related_lists(graph, limit=1)) == [["b", "cites", 2.0]]
