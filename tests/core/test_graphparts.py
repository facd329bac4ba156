"""The graph files assembled from cached per-item parts (arkai.search.graphparts): always the
bytes build_graph and its writers give for the same items, after any change, addition or
removal, and whatever was done to the parts file."""

from __future__ import annotations

import hashlib
import os
import random
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from arkai.core import canonjson
from arkai.search.graph import (
    GraphItem,
    GraphSettings,
    build_graph,
    features,
    node_id,
    related_edges,
    related_lists,
    to_graphml,
    to_json,
)
from arkai.search.graphparts import (
    PARTS,
    FileSpan,
    PartStore,
    graph_parts,
    iter_graphml,
    iter_json,
    related_jsonl,
)

SETTINGS = GraphSettings(max_related=3)
NAMES = ["Amara Okafor", "amara  okafor", "HiveSense", "HIVESENSE", "Lisbon", "Café <&> Ltd",
         "Zoë", "R&D \"Lab\"", "x"]  # fmt: skip
TAGS = ["bees", "city", "two words", "a&b", "ünï"]
TERMS = ["hives", "varroa", "firmware", "pollen <b>", "wax"]


def random_item(rng: random.Random, i: int, salt: int = 0) -> GraphItem:
    cid = f"{i:016x}"
    names = rng.sample(NAMES, rng.randint(0, 5))
    mentions = [(n, rng.choice(["person", "org", "Person", ""]), rng.randint(1, 4)) for n in names]
    quotes = [(f"{i:08x}{k:08x}", rng.choice(NAMES).casefold() + f" said {salt}") for k in
              range(rng.randint(0, 3))]  # fmt: skip
    others = [f"Title number {rng.randrange(40)}", f"https://example.org/{rng.randrange(40)}"]
    return GraphItem(
        content_id=cid,
        title=f"Title number {i}" if rng.random() < 0.9 else f"T{i}",
        path=f'library/notes/{i} "quoted" & <b>',
        content_type=rng.choice(["notes", "talks", ""]),
        url=f"https://example.org/{i}" if rng.random() < 0.5 else None,
        tags=rng.sample(TAGS, rng.randint(0, 2)),
        text=" ".join(rng.sample(others, rng.randint(0, 2)) * rng.randint(1, 2)) + f" {salt}",
        quotes=quotes,
        mentions=mentions,
        high_topics=[(t, round(rng.random(), 3)) for t in rng.sample(TERMS, rng.randint(0, 2))],
    )


def reference(items: list[GraphItem]) -> tuple[bytes, bytes, bytes]:
    g = build_graph(items, SETTINGS)
    return to_json(g), to_graphml(g), canonjson.dumps_lines(related_lists(g)).encode()


def related_of(items: list[GraphItem]) -> dict[tuple[str, str], float]:
    """The items' RELATED_TO edges under SETTINGS, computed over every item."""
    feats = {node_id("content", it.content_id): features(it) for it in items}
    return related_edges(feats, SETTINGS.min_shared_entities, SETTINGS.max_related)


def assembled(items: list[GraphItem], root: Path) -> tuple[bytes, bytes, bytes, PartStore]:
    related = related_of(items)
    with PartStore(root) as store:
        gp = graph_parts(items, SETTINGS, related, store)
        assert related == {}  # emptied as its pairs became links (not held beside them)
        out = (b"".join(iter_json(gp, batch=7)), b"".join(iter_graphml(gp, batch=5)),
               b"".join(related_jsonl(gp, batch=3)))  # fmt: skip
    return (*out, store)


@pytest.mark.parametrize("seed", range(4))
def test_parts_give_the_bytes_of_the_whole_graph(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    items = [random_item(rng, i) for i in range(25)]
    want = reference(items)
    rng.shuffle(items)  # parts are taken in node order whatever order the items come in
    *got, store = assembled(items, tmp_path)
    assert tuple(got) == want
    assert store.built == len(items) and store.rejected == 0
    *again, store = assembled(items, tmp_path)  # every part from the file now
    assert tuple(again) == want
    assert store.built == 0 and store.rejected == 0


def test_empty_and_single_item(tmp_path: Path) -> None:
    *got, _ = assembled([], tmp_path)
    assert tuple(got) == reference([])
    lone = [GraphItem(content_id="a" * 16, title="Alone", path="library/x")]
    *got, _ = assembled(lone, tmp_path)
    assert tuple(got) == reference(lone)


def test_content_ids_that_need_escaping_are_slugged_first(tmp_path: Path) -> None:
    # The edges between items are written from templates that escape nothing: their ends are
    # node IDs, which have no character either format escapes.
    rng = random.Random(11)
    odd = ['a&b <c> "d"', "é ü", "x\ty", "plain"]
    items = [replace(random_item(rng, i), content_id=cid, mentions=[("Lisbon", "place", 1),
             ("HiveSense", "org", 1)], text=f"Title number {(i + 1) % 4}")
             for i, cid in enumerate(odd)]  # fmt: skip
    *got, _ = assembled(items, tmp_path)
    assert tuple(got) == reference(items)
    assert b'"type": "CITES"' in got[0] and b'"type": "RELATED_TO",\n      "weight": 1.0' in got[0]


def test_change_add_remove_equal_a_build_from_scratch(tmp_path: Path) -> None:
    rng = random.Random(99)
    items = [random_item(rng, i) for i in range(30)]
    assembled(items, tmp_path)
    for round_ in range(15):
        what = round_ % 3
        if what == 0:  # one item changed
            j = rng.randrange(len(items))
            items[j] = random_item(rng, int(items[j].content_id, 16), salt=round_)
        elif what == 1:  # one added
            items.append(random_item(rng, 100 + round_))
        else:  # one removed
            items.pop(rng.randrange(len(items)))
        *got, store = assembled(items, tmp_path)
        assert tuple(got) == reference(items), (round_, what)
        assert store.rejected == 0
        # Only the changed or added item's part is made: the work follows the change.
        assert store.built == [1, 1, 0][what] if what else store.built <= 1
        # A removed item's part went with it (the file written whole); a changed or added
        # one's was appended, its node's last record, the file never twice what is used.
        recs = records((tmp_path / PARTS).read_bytes())
        assert {h[0].decode() for h, _ in recs} == {node_id("content", it.content_id)
                                                    for it in items}  # fmt: skip
        if what == 2:
            assert len(recs) == len(items)
        last = {h[0]: len(b"\t".join(h)) + 1 + len(pl) for h, pl in recs}
        assert (tmp_path / PARTS).stat().st_size <= 2 * sum(last.values())


def test_a_title_change_reaches_the_neighbours_lines(tmp_path: Path) -> None:
    # Titles order related.jsonl rows and label nothing else: a retitled item changes its
    # neighbours' lines, whose parts are not rebuilt.
    rng = random.Random(5)
    items = [random_item(rng, i) for i in range(20)]
    assembled(items, tmp_path)
    items[3] = replace(items[3], title="A brand new title")
    *got, store = assembled(items, tmp_path)
    assert tuple(got) == reference(items) and store.built == 1


def test_topic_scores_that_all_move_remake_no_part(tmp_path: Path) -> None:
    # An item added to the library moves every TF-IDF score (the IDF's N), so every item's
    # edges to topics change: they are written each run, and no part is made again.
    rng = random.Random(8)
    items = [random_item(rng, i) for i in range(20)]
    assembled(items, tmp_path)
    moved = [replace(it, high_topics=[(t, round(w * 0.97 + 0.001, 6)) for t, w in it.high_topics])
             for it in items]  # fmt: skip
    assert moved != items
    *got, store = assembled(moved, tmp_path)
    assert tuple(got) == reference(moved)
    assert store.built == 0 and store.rejected == 0
    # Terms gained and lost, one term twice (build_graph adds the weights of one node's
    # edges), terms that are slugged and one whose node ID has letters outside ASCII.
    odd = ["pollen <b>", "ünï wax", 'a&b "c"', "wax"]
    changed = [replace(it, high_topics=[(odd[i % 4], 0.25), (odd[(i + 1) % 4], 0.5),
               (odd[i % 4], 0.125)][: i % 4]) for i, it in enumerate(moved)]  # fmt: skip
    *got, store = assembled(changed, tmp_path)
    assert tuple(got) == reference(changed)
    assert store.built == 0 and store.rejected == 0
    assert b'"target": "topic:' in got[0] and b'"weight": 0.375' in got[0]


def records(raw: bytes) -> list[tuple[list[bytes], bytes]]:
    """The parts file's records: (header fields, payload)."""
    out, pos = [], 0
    while pos < len(raw):
        nl = raw.index(b"\n", pos)
        head = raw[pos:nl].split(b"\t")
        end = nl + 1 + int(head[3])
        out.append((head, raw[nl + 1 : end]))
        pos = end
    return out


def record(head: list[bytes], payload: bytes, *, forge: bool = True) -> bytes:
    """A record with ``head``'s node and key; with ``forge``, a digest and size that match."""
    if forge:
        head = [head[0], head[1], hashlib.sha256(payload).hexdigest().encode(),
                str(len(payload)).encode()]  # fmt: skip
    return b"\t".join(head) + b"\n" + payload


DAMAGE = {  # what is done to the 5th of 12 records → (rejected, parts rebuilt)
    "flip": (1, 1),  # a byte of the payload changed: its digest no longer matches
    "wrong-node": (1, 1),  # another item's part under this item's node and key
    "wrong-shape": (1, 1),  # a consistent digest over a payload of the wrong shape
    "wrong-sizes": (1, 1),  # …over blob sizes that do not add up
    "wrong-edge-count": (1, 1),  # …over an edge count that is not one
    "truncate": (1, 8),  # the file ends inside it: it and those after it are rebuilt
    "junk": (1, 8),  # its header line is not one: the file cannot be framed from there
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_or_forged_part_is_rebuilt_not_used(tmp_path: Path, damage: str) -> None:
    rng = random.Random(7)
    items = [random_item(rng, i) for i in range(12)]
    want = reference(items)
    assembled(items, tmp_path)
    path = tmp_path / PARTS
    raw = path.read_bytes()
    recs = records(raw)
    assert len(recs) == 12
    blobs = [record(h, pl, forge=False) for h, pl in recs]
    assert b"".join(blobs) == raw
    head, payload = recs[4]
    if damage == "flip":
        assert b"Title number" in payload
        blobs[4] = record(head, payload.replace(b"Title number", b"Title numbex", 1), forge=False)
    elif damage == "wrong-node":
        blobs[4] = record(head[:2] + recs[5][0][2:], recs[5][1], forge=False)
    elif damage == "wrong-shape":
        blobs[4] = record(head, b'{"n": 1}\n')
    elif damage == "wrong-sizes":
        first, rest = payload.split(b"\n", 1)
        blobs[4] = record(head, first.replace(b'"z":[', b'"z":[1,', 1) + b"\n" + rest)
    elif damage == "wrong-edge-count":
        first, rest = payload.split(b"\n", 1)
        assert re.search(rb'"x":[0-9]+', first)
        blobs[4] = record(head, re.sub(rb'"x":[0-9]+', b'"x":-1', first) + b"\n" + rest)
    elif damage == "truncate":
        blobs[4:] = [blobs[4][: len(blobs[4]) // 2]]
    else:
        blobs[4] = b"not a part at all\n" + payload
    assert b"".join(blobs) != raw
    path.write_bytes(b"".join(blobs))
    *got, store = assembled(items, tmp_path)
    assert tuple(got) == want
    assert (store.rejected, store.built) == DAMAGE[damage]
    *got, store = assembled(items, tmp_path)  # repaired in the file
    assert tuple(got) == want and store.built == 0 and store.rejected == 0
    assert path.read_bytes() == raw


def test_full_rebuilds_every_part(tmp_path: Path) -> None:
    rng = random.Random(3)
    items = [random_item(rng, i) for i in range(8)]
    assembled(items, tmp_path)
    feats = {node_id("content", it.content_id): features(it) for it in items}
    with PartStore(tmp_path, full=True) as store:
        gp = graph_parts(items, SETTINGS, related_edges(feats, 2, 3), store)
        assert store.built == len(items)
        assert b"".join(iter_json(gp)) == reference(items)[0]


def big_items(n: int) -> list[GraphItem]:
    rng = random.Random(21)
    # A long path: text that only the item's part holds (its Content node, in both files).
    return [replace(random_item(rng, i), path=f"library/notes/{i}/" + "padding/" * 1200)
            for i in range(n)]  # fmt: skip


def test_parts_read_back_leave_their_text_in_the_file(tmp_path: Path) -> None:
    # The parts file is never read whole: a part read back holds where its text is, read as
    # the files are written out (peak Python memory well under the file's size).
    import tracemalloc

    items = big_items(300)
    want = reference(items)
    assembled(items, tmp_path)
    size = (tmp_path / PARTS).stat().st_size
    assert size > 5_000_000
    related = related_of(items)
    tracemalloc.start()
    try:
        with PartStore(tmp_path) as store:
            gp = graph_parts(items, SETTINGS, related, store)
            assert all(isinstance(p.json_edges, FileSpan) for p in gp.parts)
            _, peak = tracemalloc.get_traced_memory()
            got = b"".join(iter_graphml(gp, batch=64))
    finally:
        tracemalloc.stop()
    assert got == want[1] and store.built == 0
    assert peak < size // 3, (peak, size)


def test_parts_are_read_from_the_file_as_it_was_opened(tmp_path: Path) -> None:
    items = big_items(20)
    want = reference(items)
    assembled(items, tmp_path)
    path = tmp_path / PARTS
    related = related_of(items)
    with PartStore(tmp_path) as store:
        gp = graph_parts(items, SETTINGS, related, store)
        # Another run replaces the file (atomically) meanwhile: this one reads what it opened.
        other = path.with_name("other")
        other.write_bytes(b"junk\n" * 100)
        other.replace(path)
        assert b"".join(iter_json(gp)) == want[0]
    # Once closed, a part's text can no longer be read (never another file's bytes).
    with pytest.raises(ValueError):
        b"".join(iter_json(gp))


def test_a_parts_file_cut_short_while_open_is_an_error_naming_it(tmp_path: Path) -> None:
    items = big_items(20)
    assembled(items, tmp_path)
    path = tmp_path / PARTS
    related = related_of(items)
    with PartStore(tmp_path) as store:
        gp = graph_parts(items, SETTINGS, related, store)
        with path.open("r+b") as fh:  # cut in place (not how arkai writes it)
            fh.truncate(path.stat().st_size // 3)
        with pytest.raises(OSError, match=r"graph-parts\.bin"):
            b"".join(iter_graphml(gp))


def test_the_item_caches_pruning_leaves_the_parts_file(tmp_path: Path) -> None:
    # The parts file sits in the item cache's folder; the index stage prunes that folder of
    # the entries of items that left before the graph step runs.
    from arkai.adapters.itemcache import ItemCache

    rng = random.Random(1)
    items = [random_item(rng, i) for i in range(3)]
    assembled(items, tmp_path)
    ItemCache(tmp_path).put(items[0].content_id, "k", "main", {"x": 1})
    # A folder not named as the entries' shards are (what another cache keeps) stays whole.
    other = ItemCache(tmp_path).folder / "kept-by-another-step"
    other.mkdir()
    (other / "data.bin").write_bytes(b"x")
    assert ItemCache(tmp_path).prune(set()) == 1
    assert (other / "data.bin").read_bytes() == b"x"
    *_, store = assembled(items, tmp_path)
    assert store.built == 0 and store.rejected == 0


def test_links_are_each_sources_sorted_edges() -> None:
    """Every RELATED_TO pair (from its smaller node) and CITES edge (a count of 0 is none),
    held as arrays (issue 17): per source its edges sorted by target, type, weight."""
    from arkai.search.graphparts import Links

    related = [("content:b", "content:c", 0.1234567), ("content:a", "content:c", 0.5),
               ("content:a", "content:b", 0.25)]  # fmt: skip
    cites = {"content:a": {"content:c": 2, "content:b": 0}, "content:c": {"content:a": 1}}
    links = Links(iter(related), cites)
    assert links.get("content:a") == [
        ("content:b", "RELATED_TO", 0.25),
        ("content:c", "CITES", 2.0),
        ("content:c", "RELATED_TO", 0.5),
    ]
    assert links.get("content:b") == [("content:c", "RELATED_TO", 0.123457)]
    assert links.get("content:c") == [("content:a", "CITES", 1.0)]
    assert links.get("content:x") == [] and links.get("content:d") == []
    assert len(links) == 5
    assert [e[:2] for e in links.edges()] == [
        ("content:a", "content:b"), ("content:a", "content:c"), ("content:a", "content:c"),
        ("content:b", "content:c"), ("content:c", "content:a"),
    ]  # fmt: skip
    assert len(Links(iter([]), {})) == 0 and Links(iter([]), {}).get("content:a") == []


def table_of(pairs: dict[tuple[str, str], float], names: list[str] | None = None) -> Any:
    """``pairs`` as graphcache keeps them: a PairTable over ``names`` (default: the pairs')."""
    from array import array

    from arkai.search.graph import PairTable

    names = sorted({n for pair in pairs for n in pair}) if names is None else names
    place = {n: i for i, n in enumerate(names)}
    return PairTable.of(
        names,
        array("i", [place[a] for a, _ in pairs]),
        array("i", [place[b] for _, b in pairs]),
        array("d", list(pairs.values())),
    )


@pytest.mark.parametrize("seed", range(6))
def test_links_of_a_pair_table_are_the_links_of_its_pairs(seed: int) -> None:
    """Links made from a PairTable (its arrays renumbered, no Python work per pair) are the
    Links of the same pairs given one at a time: the same node IDs, edges and weights —
    with names in the table that are in no pair, CITES on a related pair, to a node that is
    no item and with a count of 0, weights that round at the sixth digit, and nothing."""
    from array import array

    from arkai.search.graph import PairTable
    from arkai.search.graphparts import Links

    rng = random.Random(seed)
    names = sorted({f"content:{rng.randrange(10**6):06d}" for _ in range(rng.choice([0, 1, 40]))})
    pairs: dict[tuple[str, str], float] = {}
    for _ in range(rng.randrange(0, 300) if len(names) > 1 else 0):
        x, y = sorted(rng.sample(names, 2))
        pairs[(x, y)] = rng.choice([rng.random(), 0.1234565, 0.5, 1 / 3, 2.675e-06, 0.0])
    table = table_of(pairs, names)
    cites: dict[str, dict[str, int]] = {}
    for a, b in list(pairs)[:5] + [(n, "content:zzz-no-item") for n in names[:3]]:
        cites.setdefault(a, {})[b] = rng.choice([0, 1, 3])
    for given in (table, PairTable.of([], array("i"), array("i"), array("d"))):
        as_table = Links(given, cites if given is table else {})
        one_by_one = Links(iter(list(given.pairs())), cites if given is table else {})
        a_names, *a_rest = as_table.arrays()
        b_names, *b_rest = one_by_one.arrays()
        assert a_names == b_names and len(as_table) == len(one_by_one)
        for x, y in zip(a_rest, b_rest, strict=True):
            assert np.asarray(x).dtype == np.asarray(y).dtype and np.array_equal(x, y)
        assert list(as_table.edges()) == list(one_by_one.edges())


def test_pairs_as_a_table_give_the_same_files(tmp_path: Path) -> None:
    """graph_parts given the RELATED_TO pairs as graphcache keeps them (a PairTable) writes
    the bytes it writes from a dict of them."""

    rng = random.Random(11)
    items = [random_item(rng, i) for i in range(30)]
    related = related_of(items)
    table = table_of(related)
    assert table == related
    with PartStore(tmp_path) as store:
        gp = graph_parts(items, SETTINGS, table, store)
        got = (b"".join(iter_json(gp, batch=7)), b"".join(iter_graphml(gp, batch=5)),
               b"".join(related_jsonl(gp, batch=3)))  # fmt: skip
    assert got == reference(items)


def _records(path: Path) -> list[tuple[list[bytes], int, int]]:
    """Each record of the parts file: its header fields, where its payload starts, its size."""
    data, out, pos = path.read_bytes(), [], 0
    while pos < len(data):
        end = data.index(b"\n", pos)
        fields = data[pos:end].split(b"\t")
        out.append((fields, end + 1, int(fields[3])))
        pos = end + 1 + int(fields[3])
    return out


def test_parts_without_their_text_give_the_counts_and_related_lines(tmp_path: Path) -> None:
    """Read without their text (the exports not wanted), the parts come from their payload's
    own header line — checked by its digest in the record's line — and give the same
    ``related.jsonl``, node and edge counts; asked for exports, such a graph refuses. A record
    of the first layout (no such digest) is read whole and written back with it; a damaged
    payload header is caught either way (the part made again), while damaged text is not
    read at all."""
    rng = random.Random(3)
    items = [random_item(rng, i) for i in range(20)]
    whole_json, _, whole_related, _ = assembled(items, tmp_path)
    g = build_graph(items, SETTINGS)
    path = tmp_path / PARTS

    def headless() -> tuple[bytes, int, int, PartStore]:
        with PartStore(tmp_path) as store:
            gp = graph_parts(items, SETTINGS, related_of(items), store, text=False)
            with pytest.raises(ValueError, match="no export"):
                b"".join(iter_json(gp))
            with pytest.raises(ValueError, match="no export"):
                b"".join(iter_graphml(gp))
            return b"".join(related_jsonl(gp, batch=4)), gp.nodes, gp.edges, store

    related, nodes, edges, store = headless()
    assert (related, nodes, edges) == (whole_related, len(g.nodes), len(g.edges))
    assert store.built == store.rejected == 0
    assert all(len(f) == 6 for f, _, _ in _records(path))

    # The first layout: four fields. Read whole (so a damaged text is caught), written back
    # with the payload header's digest.
    data = path.read_bytes()
    for fields, _, _ in _records(path):
        data = data.replace(b"\t".join(fields) + b"\n", b"\t".join(fields[:4]) + b"\n", 1)
    path.write_bytes(data)
    assert all(len(f) == 4 for f, _, _ in _records(path))
    related, nodes, edges, store = headless()
    assert (related, nodes, edges, store.built) == (whole_related, len(g.nodes), len(g.edges), 0)
    assert all(len(f) == 6 for f, _, _ in _records(path))

    # A byte of one part's text changed: not read without the text; with it, caught.
    fields, start, size = _records(path)[4]
    damaged = bytearray(path.read_bytes())
    damaged[start + size - 2] ^= 1
    path.write_bytes(bytes(damaged))
    related, _, _, store = headless()
    assert related == whole_related and store.rejected == 0
    *got, store = assembled(items, tmp_path)
    assert got[0] == whole_json and store.rejected == 1 and store.built == 1

    # A byte of one part's payload header changed: its line's digest fails, then the
    # payload's: the part is made again.
    fields, start, _ = _records(path)[7]
    damaged = bytearray(path.read_bytes())
    damaged[start + 3] ^= 1
    path.write_bytes(bytes(damaged))
    related, _, _, store = headless()
    assert related == whole_related and store.rejected == 1 and store.built == 1
    # The header digest alone forged (the payload intact): read whole, its line made right.
    fields, start, size = _records(path)[2]
    forged = b"\t".join([*fields[:4], b"0" * 64, fields[5]]) + b"\n"
    path.write_bytes(path.read_bytes().replace(b"\t".join(fields) + b"\n", forged, 1))
    related, _, _, store = headless()
    assert related == whole_related and store.rejected == 0 and store.built == 0
    assert _records(path)[2][0] == fields


def test_parts_looked_up_by_what_they_are_made_from(tmp_path: Path) -> None:
    """An item with ``made_from`` (the index stage's record key: what its quotes and mentions
    are made from) has its part looked up by that digest, not by its quotes and mentions: the
    same bytes as without it; a new digest, title or tag makes the part again, the same digest
    keeps it."""
    rng = random.Random(21)
    plain = [random_item(rng, i) for i in range(12)]
    items = [replace(it, made_from=f"sha256:{i:064x}") for i, it in enumerate(plain)]
    *got, store = assembled(items, tmp_path)
    assert tuple(got) == reference(plain) and store.built == len(items)
    *_, store = assembled(items, tmp_path)
    assert store.built == 0
    # Another digest (the item's files changed): its part is made again.
    items[2] = replace(items[2], made_from="sha256:" + "e" * 64, mentions=[("Zoë", "person", 1)])
    *got, store = assembled(items, tmp_path)
    assert store.built == 1 and tuple(got) == reference([replace(i, made_from=None) for i in items])
    items[5] = replace(items[5], title="Retitled")  # not in the record: in the key
    *_, store = assembled(items, tmp_path)
    assert store.built == 1
    # The same digest is the caller's word that the quotes and mentions are the same: kept.
    items[7] = replace(items[7], mentions=[("Lisbon", "place", 9)])
    *_, store = assembled(items, tmp_path)
    assert store.built == 0


def test_the_parts_file_holds_the_records_a_build_from_scratch_writes(tmp_path: Path) -> None:
    """After each change the last record of each node is the record a build from scratch
    writes, byte for byte: appended for a change or an addition, the file written whole —
    the unchanged records copied as runs of bytes — for a removal or records of the first
    layout (then the same file as from scratch), and once records no node uses would outweigh
    the used ones."""
    rng = random.Random(17)
    items = [random_item(rng, i) for i in range(30)]
    assembled(items, tmp_path)
    scratch = tmp_path / "scratch"
    path = tmp_path / PARTS
    wholes = 0
    for round_ in range(12):
        j = rng.randrange(len(items))
        kind = ["change", "add", "remove", "first layout"][round_ % 4]
        if kind == "change":
            items[j] = random_item(rng, int(items[j].content_id, 16), salt=round_)
        elif kind == "add":
            items.append(random_item(rng, 200 + round_))
        elif kind == "remove":
            items.pop(j)
        else:  # some records of the first layout (four fields), and one part changed
            data = path.read_bytes()
            for fields, _, _ in _records(path)[::3]:
                data = data.replace(b"\t".join(fields) + b"\n", b"\t".join(fields[:4]) + b"\n")
            path.write_bytes(data)
            items[j] = random_item(rng, int(items[j].content_id, 16), salt=round_)
        before = path.stat().st_ino
        assembled(items, tmp_path)
        scratch.mkdir(exist_ok=True)
        (scratch / PARTS).unlink(missing_ok=True)
        assembled(items, scratch)
        want = (scratch / PARTS).read_bytes()
        last = {h[0]: record(h, pl, forge=False) for h, pl in records(path.read_bytes())}
        assert b"".join(last[k] for k in sorted(last)) == want, (round_, kind)
        whole = path.stat().st_ino != before
        assert whole == (kind in ("remove", "first layout")), (round_, kind)
        if whole:
            wholes += 1
            assert path.read_bytes() == want
    assert wholes == 6
    # Changed parts appended until the records no node uses would outweigh the used ones.
    used = path.stat().st_size
    for round_ in range(200):
        k = round_ % len(items)
        items[k] = random_item(rng, int(items[k].content_id, 16), salt=100 + round_)
        before = path.stat().st_ino
        assembled(items, tmp_path)
        if path.stat().st_ino != before:
            break
        assert path.stat().st_size <= 2 * used * 1.5
    else:
        raise AssertionError("never written whole")
    assert round_ > 1 and len(records(path.read_bytes())) == len(items)


@pytest.mark.parametrize("cut", [1, 40, -1])
def test_an_append_cut_short_leaves_the_parts_before_it(tmp_path: Path, cut: int) -> None:
    """A run killed while appending leaves a torn last record: the next run reads the
    records before it (the changed item's earlier part, under its old key, is not taken),
    makes that part again and writes the file whole."""
    rng = random.Random(23)
    items = [random_item(rng, i) for i in range(10)]
    assembled(items, tmp_path)
    path = tmp_path / PARTS
    size = path.stat().st_size
    items[3] = random_item(rng, 3, salt=1)
    assembled(items, tmp_path)
    grown = path.read_bytes()
    assert len(grown) > size  # appended
    path.write_bytes(grown[: size + cut] if cut > 0 else grown[:cut])
    *got, store = assembled(items, tmp_path)
    assert tuple(got) == reference(items)
    assert (store.rejected, store.built) == (1, 1)
    assert len(records(path.read_bytes())) == len(items)  # written whole


def test_an_append_only_goes_to_the_file_that_was_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process replaced or grew the file since it was read: nothing is appended to it
    (it is written whole from what this run holds); a failed write is cut back."""
    from arkai.adapters.fs import append_to_loaded

    path = tmp_path / "f"
    path.write_bytes(b"abc")
    with path.open("rb") as fh:
        assert append_to_loaded(path, fh.fileno(), 3, b"de") and path.read_bytes() == b"abcde"
        assert not append_to_loaded(path, fh.fileno(), 3, b"x")  # grown since: not the size
        other = tmp_path / "g"
        other.write_bytes(b"abcde")
        other.replace(path)  # replaced: another inode
        assert not append_to_loaded(path, fh.fileno(), 5, b"x") and path.read_bytes() == b"abcde"
    assert not append_to_loaded(tmp_path / "missing", 0, 0, b"x")
    real, calls = os.write, []

    def half(fd: int, data: bytes | memoryview) -> int:  # two bytes, then a full disk
        calls.append(fd)
        if len(calls) > 1:
            raise OSError(28, "No space left on device")
        return real(fd, bytes(data)[:2])

    with path.open("rb") as fh:
        monkeypatch.setattr(os, "write", half)
        with pytest.raises(OSError, match="No space"):
            append_to_loaded(path, fh.fileno(), 5, b"123456")
        monkeypatch.undo()
    assert path.read_bytes() == b"abcde"  # cut back to its size


def _related(items: list[GraphItem], root: Path) -> tuple[str, bytes]:
    """``related.jsonl``'s key and bytes for ``items`` (a fresh parts store at ``root``)."""
    from arkai.search.graphparts import related_inputs

    with PartStore(root, full=True) as store:
        gp = graph_parts(items, SETTINGS, related_of(items), store, text=False)
        made = related_inputs(gp)
        return made.key(), b"".join(made.lines(batch=3))


@pytest.mark.parametrize("seed", range(6))
def test_related_key_names_everything_related_jsonl_is_made_from(tmp_path: Path, seed: int) -> None:
    """The index stage writes ``related.jsonl`` again only when its key changed: the same
    items give the same key and bytes (whatever their order or store), and any change that
    changes a line changes the key — a title (the order of ties), an item's mentions (its
    RELATED_TO edges), a citation, an item added or removed. A change the lines do not see
    (an entity no other item shares) may keep the key."""
    rng = random.Random(seed)
    items = [random_item(rng, i) for i in range(30)]
    key, data = _related(items, tmp_path / "a")
    assert data == reference(items)[2]  # the bytes build_graph's related_lists give
    shuffled = items[:]
    rng.shuffle(shuffled)
    assert _related(shuffled, tmp_path / "b") == (key, data)
    variants: list[list[GraphItem]] = []
    for n in range(12):
        i = rng.randrange(len(items))
        it = items[i]
        change = n % 6
        if change == 0:
            new = replace(it, title=f"Title number {rng.randrange(40)}")
        elif change == 1:
            names = rng.sample(NAMES, rng.randint(0, 5))
            new = replace(it, mentions=[(x, "person", rng.randint(1, 4)) for x in names])
        elif change == 2:
            target = node_id("content", items[rng.randrange(len(items))].content_id)
            new = replace(it, cites={**(it.cites or {}), target: rng.randint(1, 3)})
        elif change == 3:
            new = replace(it, mentions=[*it.mentions, (f"only here {n}", "org", 1)])
        elif change == 4:
            variants.append(items[:i] + items[i + 1 :])
            continue
        else:
            variants.append([*items, random_item(rng, 100 + n)])
            continue
        variants.append([*items[:i], new, *items[i + 1 :]])
    lines_changed = 0
    for k, variant in enumerate(variants):
        other_key, other = _related(variant, tmp_path / f"v{k}")
        assert other == reference(variant)[2]
        if other != data:
            lines_changed += 1
            assert other_key != key, k
        titles = {it.content_id: it.title for it in variant}
        if titles != {it.content_id: it.title for it in items}:
            assert other_key != key, k  # every title is an input (ties are ordered by it)
    assert lines_changed >= 3  # the variants do move related lists


def test_related_key_covers_the_code_that_makes_the_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Other code, other lines: the key digests the source of the modules that make them
    (``graphparts.RELATED_CODE``, read where the import system found them)."""
    import importlib.util

    from arkai.search import graph, graphparts

    assert "arkai.search.graph" in graphparts.RELATED_CODE
    items = [random_item(random.Random(7), i) for i in range(8)]
    key, _ = _related(items, tmp_path / "a")
    fake = tmp_path / "graph.py"
    fake.write_bytes(Path(graph.__file__).read_bytes())
    spec = importlib.util.spec_from_file_location("arkai.search.graph", fake)
    monkeypatch.setattr(graph, "__spec__", spec)
    assert _related(items, tmp_path / "b")[0] == key  # the same source where it is read
    fake.write_bytes(fake.read_bytes() + b"\n# another line\n")
    assert _related(items, tmp_path / "c")[0] != key


def test_related_key_changes_with_each_of_its_inputs(tmp_path: Path) -> None:
    """Each field of RelatedInputs is in its key: an edge's end, type or weight, an item's
    title or content ID, the items' order."""
    from arkai.search.graphparts import related_inputs

    items = [random_item(random.Random(3), i) for i in range(30)]
    with PartStore(tmp_path, full=True) as store:
        made = related_inputs(graph_parts(items, SETTINGS, related_of(items), store, text=False))
    assert len(made.src) >= 2
    key = made.key()
    first = made.nodes[0]
    changed = [
        replace(made, src=made.src[::-1].copy()),
        replace(made, dst=(made.dst + 1) % len(made.nodes)),
        replace(made, kind=(1 - made.kind).astype(made.kind.dtype)),
        replace(made, weight=made.weight + 0.5),
        replace(made, titles={**made.titles, first: made.titles[first] + "!"}),
        replace(made, ids={**made.ids, first: "f" * 16}),
        replace(made, nodes=made.nodes[::-1]),
    ]
    assert all(c.key() != key for c in changed)
    assert replace(made).key() == key
