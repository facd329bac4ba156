"""RELATED_TO edges between items, kept up to date incrementally in one table
(docs/index-format.md, "Incremental builds" and "The graph at scale").

**What is kept.** Each item keeps its best ``cap`` RELATED_TO neighbours (weight descending,
then node ID; ``cap`` 0: all of them), and the graph's RELATED_TO edges are the union of those
lists (:func:`arkai.search.graph.related_edges`). An item's row of the ``related`` table
(:class:`arkai.adapters.itemtable.ItemTable`, ``.arkai/index-cache/related.tsv``) holds its
kept list, keyed by a digest of its :class:`~arkai.search.graph.Features` (entity and
high-topic node IDs), the graph settings and the cap.

**Which lists are recomputed.** Call *changed* (C) the items whose entry is missing, damaged or
made from other features or settings, *gone* the items that an entry names but that are no
longer there, and *unchanged* (U) the rest. A changed item's list is computed from the
inverted index (:class:`~arkai.search.graph.RelatedIndex`) with all of its neighbours (when
any item is unchanged; else its best suffice), so each unchanged neighbour Y learns B(Y): the
changed items that are its neighbours now, with their weights. An unchanged Y whose list names
no changed or gone item and has no B(Y) keeps its list as it is; otherwise:

- if ``cap`` is 0 or Y's list is shorter than ``cap``, or every changed item in it is still
  a neighbour with a weight no lower than the listed one, its new list is the best ``cap`` of
  (its list less the changed and gone items) ∪ B(Y);
- else (a listed neighbour left or its weight fell, and the list was full) Y's list is
  recomputed from the inverted index.

**Why that is the computation over every item.** A weight is a function of the two items'
features, so Y's neighbours among U are what they were when its list was written, with the
same weights. Its list was then the best ``cap`` of all its neighbours; every neighbour in U
that is not in it ranked below all of it. Shorter than ``cap`` (or no cap), the list held all
of its neighbours, so the neighbours now are its U part plus B(Y). Full, with no listed item
having left or fallen, every listed item ranks now at least as high as it did, so each
neighbour in U outside the list still ranks below ``cap`` items of (list ∪ B(Y)), and cannot
be among the best ``cap``. What is left — a full list that lost an item or saw one fall —
may need a neighbour from below the cut, which only the index knows: recomputed. The
table is written whole, atomically, once every list is made (:func:`update_related` keeps
the rows; the caller saves them), so a run that stops leaves the last run's lists, each right
for the features they were made from. The rows of items that left are dropped when the
table is saved (only the rows kept by this run are written), so an item that comes back is
changed. Tested against the computation over every item with random rounds of changes,
additions, removals and damaged rows.

**The union kept.** The lists' union (the pairs) is kept beside the table, under the digest of
the table's file and every item's key (:func:`_union_key`): when nothing changed, no row is
read (``update_related``'s ``union``).

**Cost.** A one-item change: that item's candidates, the lists it enters (a merge each) and
the few full lists it leaves or falls in (recomputed): about ``2 × cap`` lists on average,
since the lists hold items × ``cap`` entries. Reading the rows is linear in items × ``cap``,
like the graph files themselves, but one file (10,000 entry files cost ≈ 1 s to open).
"""

from __future__ import annotations

import hashlib
import json
from array import array
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from arkai.adapters.fs import atomic_write_bytes
from arkai.adapters.itemcache import CACHE_DIR
from arkai.adapters.itemtable import ItemTable
from arkai.core import canonjson
from arkai.search.graph import Features, PairTable, RelatedIndex

PART = "related"
VERSION = 2
UNION = CACHE_DIR / "related-union.bin"
"""Every item's list as one table of pairs, kept with what it was made from (:func:`_union_key`)."""
UNION_VERSION = 1


def related_table(root: Path) -> ItemTable:
    """The table of every item's kept list (``.arkai/index-cache/related.tsv``)."""
    return ItemTable(root, PART, f"related-{VERSION}")


Neighbours = list[tuple[str, float]]


@dataclass(frozen=True, slots=True)
class RelatedUpdate:
    edges: PairTable
    """``(smaller node ID, larger node ID)`` → weight, every RELATED_TO between items."""
    changed: int
    """Changed items: their lists were computed (and their entries written)."""
    merged: int = 0
    """Unchanged items whose list took in or lost changed items by a merge (entry written)."""
    recomputed: int = 0
    """Unchanged items whose list was computed again from the index (entry written)."""


def _key(f: Features, min_shared_entities: int, cap: int) -> str:
    doc = [VERSION, min_shared_entities, cap, sorted(f.entities), sorted(f.topics)]
    return "sha256:" + hashlib.sha256(canonjson.dumps_line({"f": doc}).encode()).hexdigest()


def _best(rows: Neighbours, cap: int) -> Neighbours:
    rows = sorted(rows, key=lambda r: (-r[1], r[0]))
    return rows[:cap] if cap > 0 else rows


def update_related(
    feats: Mapping[str, Features],
    content_ids: Mapping[str, str],
    table: ItemTable,
    min_shared_entities: int,
    cap: int = 0,
    *,
    full: bool = False,
    union: Path | None = None,
) -> RelatedUpdate:
    """The RELATED_TO edges between the items of ``feats`` (content node ID → features;
    ``content_ids`` maps each to its content ID, the table's name for it) when each keeps its
    best ``cap`` neighbours (0: all), from the table where it holds them and recomputed where
    not (module docstring). Every item's row is kept in ``table`` (the caller saves it).

    With ``union`` (a file), the table is saved here and the union of the lists kept there
    with what it was made from: the table's file and every item's key. When every item's row
    is the table's under its key and the table's file is the one the kept union was made from,
    that union is the edges — no row is read (≈ 0.35 s at 10,000 items)."""
    keys = {n: _key(f, min_shared_entities, cap) for n, f in feats.items()}
    if union is not None:
        got = None
        if not full and all(table.retain(content_ids[n], keys[n]) for n in sorted(feats)):
            got = _read_union(union, _union_key(keys, content_ids, table, min_shared_entities,
                                                cap))  # fmt: skip
        if got is not None:
            return RelatedUpdate(got, 0)
        done = _update(feats, content_ids, table, keys, min_shared_entities, cap, full)
        table.save(prune=True)
        _write_union(union, _union_key(keys, content_ids, table, min_shared_entities, cap),
                     done.edges)  # fmt: skip
        return done
    return _update(feats, content_ids, table, keys, min_shared_entities, cap, full)


def _update(
    feats: Mapping[str, Features], content_ids: Mapping[str, str], table: ItemTable,
    keys: Mapping[str, str], min_shared_entities: int, cap: int, full: bool,
) -> RelatedUpdate:  # fmt: skip
    """:func:`update_related` with each item's key (:func:`_key`) given."""
    stored: dict[str, _Kept] = {}
    changed: list[str] = []
    names = {n: n for n in feats}  # one string per node ID, not one per mention of it
    for n in sorted(feats):
        row = None if full else table.by_key(content_ids[n], keys[n])
        entry = _parse(row.body, names) if row is not None else None
        if row is None or entry is None:
            changed.append(n)
        else:
            stored[n] = _kept(entry)
            table.keep(content_ids[n], None, keys[n], row.body)  # those that change: again below
    if not changed and all(o in stored for others, _ in stored.values() for o in others):
        return RelatedUpdate(_union(stored), 0)

    index = RelatedIndex(feats, min_shared_entities)
    fresh: dict[str, Neighbours] = {}
    entering: dict[str, dict[str, float]] = {}  # B(Y) of the unchanged items
    for x in changed:
        # All of its neighbours when unchanged items may take it in; else its best suffice.
        rows = index.neighbours(x, 0 if stored else cap)
        fresh[x] = rows[:cap] if cap > 0 else rows
        for y, w in rows:
            if y in stored:
                entering.setdefault(y, {})[x] = w
    updates: dict[str, Neighbours] = {}
    recompute: list[str] = []
    for y, kept in stored.items():
        b = entering.get(y, {})
        if not b and all(o in stored for o in kept[0]):
            continue
        rows = _rows(kept)
        out = [(o, w) for o, w in rows if o not in stored]  # changed or gone
        if cap > 0 and len(rows) >= cap and any(o not in b or b[o] < w for o, w in out):
            recompute.append(y)
            continue
        merged = _best([(o, w) for o, w in rows if o in stored] + list(b.items()), cap)
        if merged != rows:
            updates[y] = merged
    n_merged = len(updates)
    for y in recompute:
        updates[y] = index.neighbours(y, cap)
    for n in sorted(updates):
        _put(table, content_ids[n], keys[n], updates[n])
        stored[n] = _kept(updates[n])
    for n in changed:
        _put(table, content_ids[n], keys[n], fresh[n])
        stored[n] = _kept(fresh[n])
    return RelatedUpdate(_union(stored), len(changed), n_merged, len(recompute))


#: An item's kept list as held while the lists are updated: its neighbours (node ID strings
#: shared with every other mention of them) and their weights, in order — ≈ 16 bytes a
#: neighbour, where a list of (ID, weight) tuples was ≈ 90 (every item's list is held: at
#: 10,000 items ≈ 380,000 neighbours, 33 MB; issue 17).
_Kept = tuple[tuple[str, ...], "array[float]"]


def _kept(rows: Neighbours) -> _Kept:
    return tuple(o for o, _ in rows), array("d", (w for _, w in rows))


def _rows(kept: _Kept) -> Neighbours:
    return list(zip(kept[0], kept[1].tolist(), strict=True))


def _union(lists: dict[str, _Kept]) -> PairTable:
    """The RELATED_TO pairs of every item's list (where two lists give a pair, the weight of
    the one taken last), ``lists`` emptied as they are taken (every item's list and the
    pairs made from them are not held together)."""
    names = sorted(set(lists).union(*(others for others, _ in lists.values())))
    place = {n: i for i, n in enumerate(names)}
    first, second, weights = array("i"), array("i"), array("d")
    while lists:
        a, (others, ws) = lists.popitem()
        i = place[a]
        for b in others:
            j = place[b]
            first.append(min(i, j))
            second.append(max(i, j))
        weights.extend(ws)
    return PairTable.of(names, first, second, weights)


def _put(table: ItemTable, content_id: str, key: str, rows: Neighbours) -> None:
    body = canonjson.dumps_compact({"related": [[o, w] for o, w in rows]})
    table.keep(content_id, None, key, body.encode("utf-8"))


def _parse(body: bytes, names: Mapping[str, str]) -> Neighbours | None:
    """The neighbours of a row's body (None when it is not a list of them)."""
    try:
        data: Any = json.loads(body)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    rows = data.get("related")
    if not isinstance(rows, list):
        return None
    out: Neighbours = []
    for r in rows:
        if not (
            isinstance(r, list)
            and len(r) == 2
            and isinstance(r[0], str)
            and isinstance(r[1], (int, float))
        ):
            return None
        out.append((names.get(r[0], r[0]), float(r[1])))
    return out


def _union_key(
    keys: Mapping[str, str], content_ids: Mapping[str, str], table: ItemTable,
    min_shared_entities: int, cap: int,
) -> str | None:  # fmt: skip
    """What the union of the lists is a function of: the table's file (its rows) and each
    item's node, content ID and features key; None when the table has no file."""
    held = table.digest()
    if held is None:
        return None
    h = hashlib.sha256(b"related-union\0%d\0%d\0%d\0" % (VERSION, min_shared_entities, cap))
    h.update(held.encode("ascii"))
    for n in sorted(keys):
        h.update(f"\0{n}\0{content_ids[n]}\0{keys[n]}".encode("utf-8", "surrogatepass"))
    return "sha256:" + h.hexdigest()


def _write_union(path: Path, key: str | None, edges: PairTable) -> None:
    """``edges`` kept under ``key``: a header line (the key, sizes and the SHA-256 of the
    rest), the node IDs as a JSON line, then the pairs' ends and weights as arrays."""
    if key is None:
        path.unlink(missing_ok=True)
        return
    names, a, b, w = edges.arrays()
    body = b"".join((json.dumps(list(names), ensure_ascii=False).encode("utf-8", "surrogatepass")
                     + b"\n", np.ascontiguousarray(a, "<i4").tobytes(),
                     np.ascontiguousarray(b, "<i4").tobytes(),
                     np.ascontiguousarray(w, "<f8").tobytes()))  # fmt: skip
    head = {"digest": "sha256:" + hashlib.sha256(body).hexdigest(), "key": key,
            "pairs": len(a), "version": UNION_VERSION}  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    # Derived, rebuilt when lost: no fsync (a torn file fails its digest).
    atomic_write_bytes(path, canonjson.dumps_line(head).encode("utf-8") + body, fsync=False)


def _read_union(path: Path, key: str | None) -> PairTable | None:
    """The pairs kept under ``key``; None when there are none to trust (another key, another
    version, a digest or shape that does not hold)."""
    if key is None:
        return None
    try:
        raw = path.read_bytes()
        end = raw.index(b"\n")
        head = json.loads(raw[:end])
        if not (isinstance(head, dict) and head.get("version") == UNION_VERSION
                and head.get("key") == key):  # fmt: skip
            return None
        body = memoryview(raw)[end + 1 :]
        if head.get("digest") != "sha256:" + hashlib.sha256(body).hexdigest():
            return None
        stop = raw.index(b"\n", end + 1)
        names = json.loads(raw[end + 1 : stop])
        m = head["pairs"]
        at = stop + 1
        if type(m) is not int or m < 0 or len(raw) - at != m * 16:
            return None
        a = np.frombuffer(raw, "<i4", m, at).astype(np.int32)
        b = np.frombuffer(raw, "<i4", m, at + 4 * m).astype(np.int32)
        w = np.frombuffer(raw, "<f8", m, at + 8 * m).astype(np.float64)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    n = len(names) if isinstance(names, list) else -1
    if n < 0 or not all(isinstance(x, str) for x in names) or names != sorted(names):
        return None
    if m and not (int(a.min()) >= 0 and int(b.max()) < n and bool((a < b).all())):
        return None
    return PairTable(names, a, b, w)
