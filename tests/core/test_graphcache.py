"""RELATED_TO edges kept incrementally (arkai.search.graphcache) and the per-item related lists
(index/related.jsonl): always what a computation over every item gives."""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Any

import pytest

from arkai.adapters.itemcache import CACHE_DIR
from arkai.adapters.itemtable import seal_row
from arkai.search.graph import (
    Features,
    Graph,
    GraphItem,
    RelatedIndex,
    build_graph,
    features,
    related_edges,
    related_lists,
    related_weight,
)
from arkai.search.graphcache import PART, UNION, RelatedUpdate, related_table, update_related

ENTITIES = [f"entity:person:p{i}" for i in range(12)]
TOPICS = [f"topic:t{i}" for i in range(6)]


def random_features(rng: random.Random) -> Features:
    return Features(
        frozenset(rng.sample(ENTITIES, rng.randint(0, 5))),
        frozenset(rng.sample(TOPICS, rng.randint(0, 2))),
    )


def reference(feats: dict[str, Features], mse: int, cap: int) -> dict[tuple[str, str], float]:
    """The capped RELATED_TO edges by definition, every pair weighed with related_weight:
    each item keeps its best `cap` (weight desc, then ID; 0: all), the union of those."""
    edges: dict[tuple[str, str], float] = {}
    for a in feats:
        rows = []
        for b in feats:
            w = related_weight(feats[a], feats[b], mse) if a != b else None
            if w is not None and set(feats[a].all) & set(feats[b].all):
                rows.append((-w, b))
        rows.sort()
        for neg_w, b in rows[:cap] if cap else rows:
            edges[(a, b) if a < b else (b, a)] = -neg_w
    return edges


@pytest.mark.parametrize("cap", [0, 1, 3])
def test_related_edges_are_the_capped_union(cap: int) -> None:
    rng = random.Random(cap)
    feats = {f"content:{i:04d}": random_features(rng) for i in range(50)}
    want = reference(feats, 2, cap)
    assert related_edges(feats, 2, cap) == want
    if cap:
        # The cap bites: fewer edges than all pairs, at most items × cap, and some item is
        # in the union through the other end's list only.
        assert len(want) < len(reference(feats, 2, 0)) and len(want) <= 50 * cap
        kept = {a: RelatedIndex(feats, 2).neighbours(a, cap) for a in feats}
        assert any(b not in dict(kept[a]) for a in feats for b in feats if (a, b) in want)


def test_ties_go_to_the_smaller_id_and_rounding_is_exact() -> None:
    # Four items tie with x at 2/4; a cap of 2 keeps the two smallest IDs.
    base = frozenset(ENTITIES[:2])
    feats = {
        "content:x": Features(base | {ENTITIES[10]}, frozenset()),
        **{f"content:{c}": Features(base | {ENTITIES[i]}, frozenset()) for c, i in
           (("d", 5), ("b", 3), ("c", 4), ("a", 2))},
    }  # fmt: skip
    assert RelatedIndex(feats, 2).neighbours("content:x", 2) == [
        ("content:a", 0.5),
        ("content:b", 0.5),
    ]
    # Weights that differ before rounding to 6 digits but not after tie too: y's 50/1111 and
    # z's 41/911 both give 0.045005, so y (the smaller ID) is x's best, though z's is larger.
    many = [f"entity:person:q{i}" for i in range(3000)]
    feats = {
        "content:x": Features(frozenset(many[:59]), frozenset()),
        "content:y": Features(frozenset(many[:50] + many[100:1152]), frozenset()),
        "content:z": Features(frozenset(many[:41] + many[2000:2852]), frozenset()),
    }
    assert 41 / 911 > 50 / 1111 and round(41 / 911, 6) == round(50 / 1111, 6) == 0.045005
    assert RelatedIndex(feats, 2).neighbours("content:x", 1) == [("content:y", 0.045005)]
    assert related_edges(feats, 2, 1) == reference(feats, 2, 1)


def _run(
    root: Path, feats: dict[str, Features], ids: dict[str, str], mse: int, cap: int = 0,
    **kw: bool,
) -> RelatedUpdate:  # fmt: skip
    """One graph step's use of the table: read, update, saved whole."""
    table = related_table(root)
    got = update_related(feats, ids, table, mse, cap, **kw)
    table.save(prune=True)
    return got


def _edit_row(root: Path, cid: str, how: str) -> None:
    """Damage (``cut``: its body shortened, the digest no longer matching) or drop an item's
    row of the table: the item's last line (the one in force), or every line of it."""
    path = root / CACHE_DIR / f"{PART}.tsv"
    lines = path.read_bytes().split(b"\n")
    ats = [i for i, ln in enumerate(lines) if ln.split(b"\t")[1:2] == [cid.encode()]]
    if how == "cut":
        lines[ats[-1]] = lines[ats[-1]][:-7]
    else:
        lines = [ln for i, ln in enumerate(lines) if i not in ats]
    path.write_bytes(b"\n".join(lines))


def _base_only(root: Path) -> list[str]:
    """The items whose every line is in the table's base (none in a batch appended since)."""
    lines = (root / CACHE_DIR / f"{PART}.tsv").read_bytes().split(b"\n")[1:-1]
    cids = [ln.split(b"\t")[1].decode() for ln in lines]
    base = cids.index("") if "" in cids else len(cids)
    later = set(cids[base:])
    return [c for c in cids[:base] if c not in later]


def test_incremental_edges_equal_a_full_computation(tmp_path: Path) -> None:
    rng = random.Random(7)
    feats = {f"content:{i:04d}": random_features(rng) for i in range(60)}

    def update(**kw: bool) -> int:
        ids = {n: n.split(":")[1] for n in feats}
        got = _run(tmp_path, feats, ids, 2, **kw)
        assert got.edges == related_edges(feats, 2) == reference(feats, 2, 0)
        return got.changed

    assert update() == 60  # nothing kept: every item computed
    assert related_edges(feats, 2)  # the fixture has edges to keep
    assert update() == 0  # nothing changed: nothing recomputed
    # One item's features change: only its edges are recomputed.
    feats["content:0007"] = Features(frozenset(ENTITIES[:4]), frozenset(TOPICS[:1]))
    assert update() == 1
    # One added, one removed (its edges go from its old neighbours' rows).
    feats["content:0100"] = Features(frozenset(ENTITIES[2:6]), frozenset())
    del feats["content:0003"]
    assert update() == 1
    # The removed item's row went with it (the table's last word on it drops it).
    assert sorted(related_table(tmp_path).rows) == sorted(n.split(":")[1] for n in feats)
    # Rounds of random changes, each to a few items (neighbours of earlier changes included).
    for _ in range(12):
        picked = rng.sample(sorted(feats), 3)
        for n in picked:
            feats[n] = random_features(rng)
        assert update() == 3
    # Damaged and missing rows of the table's base (the rows last written whole) are
    # recomputed, never used; each such row alone.
    a, b = _base_only(tmp_path)[:2]
    _edit_row(tmp_path, a, "cut")
    _edit_row(tmp_path, b, "drop")
    assert update() == 2
    # A row sealed right but not a list of neighbours: recomputed too.
    path = tmp_path / CACHE_DIR / f"{PART}.tsv"
    head, *rows = path.read_bytes().split(b"\n")
    fields = rows[0].split(b"\t", 1)[1].split(b"\t", 3)
    rows[0] = seal_row(b"\t".join([*fields[:3], b'{"related": [["x"]]}']))
    path.write_bytes(b"\n".join([head, *rows]))
    assert update() == 1
    # Other settings: every item again; `full` trusts no row.
    ids = {n: n.split(":")[1] for n in feats}
    got = _run(tmp_path, feats, ids, 1)
    assert got.changed == len(feats) and got.edges == related_edges(feats, 1)
    assert update(full=True) == len(feats)


@pytest.mark.parametrize("cap", [1, 2, 3])
def test_capped_incremental_edges_equal_a_full_computation(tmp_path: Path, cap: int) -> None:
    """Random rounds of changes, additions and removals, damaged and missing rows, runs cut
    short; a small cap so it bites and a small feature vocabulary so weights tie."""
    rng = random.Random(100 + cap)
    feats = {f"content:{i:04d}": random_features(rng) for i in range(40)}
    ids = {n: n.split(":")[1] for n in feats}
    kinds = {"merged": 0, "recomputed": 0}

    def update(**kw: bool) -> int:
        ids.update({n: n.split(":")[1] for n in feats})
        got = _run(tmp_path, feats, ids, 2, cap, **kw)
        assert got.edges == reference(feats, 2, cap) == related_edges(feats, 2, cap)
        kinds["merged"] += got.merged
        kinds["recomputed"] += got.recomputed
        return got.changed

    assert update() == 40 and update() == 0
    for round_ in range(30):
        for n in rng.sample(sorted(feats), rng.randint(1, 3)):
            feats[n] = random_features(rng)
        if round_ % 3 == 0:
            feats[f"content:{100 + round_:04d}"] = random_features(rng)
        if round_ % 4 == 1:
            del feats[rng.choice(sorted(feats))]
        if round_ % 5 == 2:  # a damaged row and a missing one
            a, b = rng.sample(sorted(feats), 2)
            _edit_row(tmp_path, ids[a], "cut")
            _edit_row(tmp_path, ids[b], "drop")
        if round_ % 7 == 3:  # a run stopped before its table was saved
            ids.update({n: n.split(":")[1] for n in feats})
            update_related(feats, ids, related_table(tmp_path), 2, cap)
            for n in rng.sample(sorted(feats), 2):
                feats[n] = random_features(rng)
        update()
    # Both ways of bringing an unchanged item's list up to date were taken.
    assert kinds["merged"] > 0 and kinds["recomputed"] > 0
    assert update() == 0


def test_a_run_stopped_before_or_while_saving_leaves_the_last_lists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The table is saved after every list is made (a batch appended, or the file written
    whole, atomically): a run that stops before saving leaves the last run's table, and one
    that stops while appending leaves a torn batch, which undoes that save whole (a list
    depends on the other items' lists of the same save); either way the next run is
    exact."""
    import arkai.adapters.itemtable as itemtable

    rng = random.Random(5)
    feats = {f"content:{i:04d}": random_features(rng) for i in range(40)}
    ids = {n: n.split(":")[1] for n in feats}
    _run(tmp_path, feats, ids, 2, 2)
    path = tmp_path / CACHE_DIR / f"{PART}.tsv"
    saved = path.read_bytes()
    for n in rng.sample(sorted(feats), 4):
        feats[n] = random_features(rng)
    real, writes = itemtable.seal_row, [0]

    def failing(body: bytes) -> bytes:
        writes[0] += 1
        if writes[0] == 10:
            raise OSError("disk full")
        return real(body)

    monkeypatch.setattr(itemtable, "seal_row", failing)
    with pytest.raises(OSError):
        _run(tmp_path, feats, ids, 2, 2)
    monkeypatch.setattr(itemtable, "seal_row", real)
    assert path.read_bytes() == saved and not list(path.parent.glob(".*.tmp"))
    update_related(feats, ids, related_table(tmp_path), 2, 2)  # stopped before saving
    assert path.read_bytes() == saved
    got = _run(tmp_path, feats, ids, 2, 2)
    assert got.changed == 4 and got.edges == reference(feats, 2, 2)
    # Stopped while appending: the batch torn a few bytes before its end.
    appended = path.read_bytes()
    for n in rng.sample(sorted(feats), 3):
        feats[n] = random_features(rng)
    _run(tmp_path, feats, ids, 2, 2)
    data = path.read_bytes()
    assert data.startswith(appended) and len(data) > len(appended)
    path.write_bytes(data[: len(data) - 9])
    for n in rng.sample(sorted(feats), 2):
        feats[n] = random_features(rng)
    got = _run(tmp_path, feats, ids, 2, 2)
    assert got.edges == reference(feats, 2, 2) and got.changed >= 2
    assert _run(tmp_path, feats, ids, 2, 2).changed == 0


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


def test_pair_table_is_the_dict_of_its_pairs() -> None:
    """RELATED_TO pairs held as arrays (issue 17): a pair given twice has its last weight, as
    a dict assigned in the same order; lookups, iteration (sorted) and equality are a dict's."""
    from array import array

    from arkai.search.graph import PairTable

    names = ["content:a", "content:b", "content:c", "content:d"]
    given = [(2, 3, 0.5), (0, 1, 0.25), (0, 2, 0.125), (0, 1, 0.75), (1, 3, 1.0)]
    table = PairTable.of(
        names,
        array("i", [a for a, _, _ in given]),
        array("i", [b for _, b, _ in given]),
        array("d", [w for _, _, w in given]),
    )
    want: dict[tuple[str, str], float] = {}
    for a, b, w in given:
        want[(names[a], names[b])] = w
    assert table == want and want == table and len(table) == 4
    assert list(table) == sorted(want) and table[("content:a", "content:b")] == 0.75
    assert list(table.pairs()) == [(a, b, w) for (a, b), w in sorted(want.items())]
    for missing in [("content:b", "content:a"), ("content:a", "content:d"), ("content:x", "a")]:
        assert missing not in table
        with pytest.raises(KeyError):
            table[missing]
    empty = PairTable.of([], array("i"), array("i"), array("d"))
    assert empty == {} and not list(empty.pairs())


def _run_union(root: Path, feats: dict[str, Features], ids: dict[str, str], cap: int,
               **kw: bool) -> RelatedUpdate:  # fmt: skip
    """The index stage's use: the table saved and the union kept by update_related."""
    return update_related(feats, ids, related_table(root), 2, cap, union=root / UNION, **kw)


@pytest.mark.parametrize("cap", [0, 2])
def test_the_kept_union_is_used_only_for_the_table_and_keys_it_was_made_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cap: int
) -> None:
    """With nothing changed the union kept beside the table is the edges and no row is read;
    a changed, added or removed item, an edited or damaged row, a damaged, cut or foreign
    union file, or ``full`` reads the rows — the edges always the computation's."""
    from arkai.search import graphcache

    parsed: list[int] = []
    real = graphcache._parse

    def counting(body: bytes, names: Any) -> Any:
        parsed.append(1)
        return real(body, names)

    monkeypatch.setattr(graphcache, "_parse", counting)
    rng = random.Random(cap)
    feats = {f"content:{i:04d}": random_features(rng) for i in range(40)}
    ids = {n: n.split(":")[1] for n in feats}

    def update(**kw: bool) -> int:
        parsed.clear()
        ids.update({n: n.split(":")[1] for n in feats})
        got = _run_union(tmp_path, feats, ids, cap, **kw)
        assert got.edges == reference(feats, 2, cap)
        return len(parsed)

    update()
    assert update() == 0 and update() == 0  # kept: no row read
    union = tmp_path / UNION

    def flip() -> None:
        data = bytearray(union.read_bytes())
        data[-3] ^= 0x10
        union.write_bytes(bytes(data))

    def foreign() -> None:  # a union made for other rows: its key is not this table's
        other = tmp_path / "other"
        other_feats = {n: random_features(rng) for n in feats}
        update_related(other_feats, ids, related_table(other), 2, cap, union=other / UNION)
        union.write_bytes((other / UNION).read_bytes())

    for attack in (flip, lambda: union.write_bytes(union.read_bytes()[:100]), union.unlink,
                   foreign):  # fmt: skip
        attack()
        assert update() == len(feats)  # every row read (and the union written again)
        assert update() == 0
    # An item's features change, one comes, one goes: rows read; then kept again.
    feats["content:0005"] = random_features(rng)
    feats["content:0100"] = random_features(rng)
    del feats["content:0007"]
    assert update() > 0 and update() == 0
    # A row damaged or dropped by hand: the table's file differs from the union's.
    _edit_row(tmp_path, ids["content:0009"], "cut")
    assert update() > 0 and update() == 0
    # A row rewritten by hand, sealed, under its key (an empty list): every key is as the
    # union's, the table's file is not — the rows are read, and give what they give
    # without a kept union.
    path = tmp_path / CACHE_DIR / f"{PART}.tsv"
    head, *rows = path.read_bytes().split(b"\n")
    fields = rows[0].split(b"\t", 1)[1].split(b"\t", 3)
    rows[0] = seal_row(b"\t".join([*fields[:3], b'{"related": []}']))
    path.write_bytes(b"\n".join([head, *rows]))
    copy = tmp_path / "copy"
    shutil.copytree(tmp_path / CACHE_DIR, copy / CACHE_DIR)
    parsed.clear()
    got = _run_union(tmp_path, feats, ids, cap)
    assert len(parsed) == len(feats)
    assert got.edges == _run(copy, feats, ids, 2, cap).edges
    assert update(full=True) == 0  # full trusts no row: all recomputed, none parsed
    assert update() == 0
