"""The graph's counts and ``related.jsonl`` without the exports (arkai.search.graphparts
``counted_parts``): only the parts of items whose part changed, came or went are looked at,
and the result is what every part read gives — over rounds of random changes, and with the
kept sums damaged, forged, stale or missing."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from arkai.search.graph import GraphItem, node_id
from arkai.search.graphparts import (
    PartStore,
    PartSums,
    counted_parts,
    graph_parts,
    related_inputs_of,
    related_jsonl,
)
from tests.core.test_graphparts import SETTINGS, TERMS, random_item, related_of


def cited(rng: random.Random, items: list[GraphItem]) -> list[GraphItem]:
    """Each item with CITES counts: to a few other items (0 is none) and to a node no item has."""
    nodes = [node_id("content", it.content_id) for it in items]
    out = []
    for it in items:
        cites = {n: rng.choice([0, 1, 2]) for n in rng.sample(nodes, min(2, len(nodes)))}
        if rng.random() < 0.2:
            cites["content:not-an-item"] = 1
        out.append(replace(it, cites=cites))
    return out


def whole(items: list[GraphItem], root: Path) -> tuple[int, int, bytes]:
    """The counts and related.jsonl with every part read (a store of its own)."""
    with PartStore(root) as store:
        gp = graph_parts(items, SETTINGS, related_of(items), store, text=False)
        return gp.nodes, gp.edges, b"".join(related_jsonl(gp))


class Looked:
    """The parts a store was asked for."""

    def __init__(self, store: PartStore) -> None:
        self.nodes: list[str] = []
        real = store.get

        def get(node: str, key: str, *, text: bool = True) -> Any:
            self.nodes.append(node)
            return real(node, key, text=text)

        store.get = get  # type: ignore[method-assign]


def counted(items: list[GraphItem], root: Path, *, full: bool = False) -> tuple[Any, Looked]:
    with PartStore(root) as store:
        looked = Looked(store)
        got = counted_parts(items, SETTINGS, related_of(items), store, None,
                            root / "graph-sums.json", full=full)  # fmt: skip
    return got, looked


def result(got: Any) -> tuple[int, int, bytes]:
    return got.nodes, got.edges, b"".join(related_inputs_of(got.links, got.titles, got.ids).lines())


@pytest.mark.parametrize("seed", range(3))
def test_rounds_of_changes_look_at_the_changed_parts_only(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    items = cited(rng, [random_item(rng, i) for i in range(30)])
    got, looked = counted(items, tmp_path / "kept")
    assert result(got) == whole(items, tmp_path / "w0")
    assert len(looked.nodes) == len(items)  # no sums yet: every part
    for round_ in range(18):
        what = round_ % 6
        j = rng.randrange(len(items))
        if what == 0:  # an item's part changed (its quotes, mentions, tags…)
            items[j] = cited(rng, [random_item(rng, int(items[j].content_id, 16), salt=round_)])[0]
        elif what == 1:  # one added
            items.append(cited(rng, [random_item(rng, 200 + round_)])[0])
        elif what == 2:  # one removed
            items.pop(j)
        elif what == 3:  # only its topics moved: no part looked at
            items[j] = replace(items[j], high_topics=[(t, round(rng.random(), 3))
                                                      for t in rng.sample(TERMS, 2)])  # fmt: skip
        elif what == 4:  # only the CITES
            items = cited(rng, items)
        else:  # a title: in the part's key
            items[j] = replace(items[j], title=f"Retitled {round_}")
        got, looked = counted(items, tmp_path / "kept")
        assert result(got) == whole(items, tmp_path / f"w{round_ + 1}"), (round_, what)
        # A changed part: its old one and the new (made); added: the new; removed: the old.
        assert len(looked.nodes) == [2, 1, 1, 0, 0, 2][what], (round_, what, looked.nodes)


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-5] ^= 1
    path.write_bytes(bytes(data))


def _version(path: Path) -> None:
    path.write_bytes(path.read_bytes().replace(b'"version":1', b'"version":99', 1))


def _forged_shape(path: Path) -> None:
    sums = PartSums.read(path)
    assert sums is not None
    bad = PartSums(sums.keys, sums.edges, {**sums.shared, "entity:x": 0})
    path.write_bytes(bad.dump())


def _cut(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:40])


DAMAGES = [_flip, _version, _forged_shape, _cut, Path.unlink]


@pytest.mark.parametrize(
    "damage", DAMAGES, ids=["flipped", "other-version", "zero-count", "cut", "missing"]
)
def test_sums_not_to_be_trusted_are_made_again_from_every_part(tmp_path: Path, damage: Any) -> None:
    rng = random.Random(5)
    items = cited(rng, [random_item(rng, i) for i in range(20)])
    counted(items, tmp_path / "kept")
    damage(tmp_path / "kept" / "graph-sums.json")
    items[3] = cited(rng, [random_item(rng, 3, salt=1)])[0]
    got, looked = counted(items, tmp_path / "kept")
    assert result(got) == whole(items, tmp_path / "w")
    assert len(looked.nodes) == len(items)
    assert PartSums.read(tmp_path / "kept" / "graph-sums.json") is not None  # written again


def test_sums_naming_a_part_the_store_lost_are_made_again(tmp_path: Path) -> None:
    """The sums count a changed item's old part that the parts file no longer holds (the
    file removed, or a run that saved the parts and stopped before the sums): every part is
    read again."""
    rng = random.Random(8)
    items = cited(rng, [random_item(rng, i) for i in range(20)])
    counted(items, tmp_path / "kept")
    kept_sums = (tmp_path / "kept" / "graph-sums.json").read_bytes()
    items[4] = cited(rng, [random_item(rng, 4, salt=2)])[0]
    counted(items, tmp_path / "kept")  # the store holds the new part now
    (tmp_path / "kept" / "graph-sums.json").write_bytes(kept_sums)  # the sums the old one
    got, looked = counted(items, tmp_path / "kept")
    assert result(got) == whole(items, tmp_path / "w")
    assert len(looked.nodes) == 1 + len(items)  # the old part asked for, then every part


def test_full_reads_every_part_and_items_need_their_cites(tmp_path: Path) -> None:
    rng = random.Random(2)
    items = cited(rng, [random_item(rng, i) for i in range(10)])
    counted(items, tmp_path / "kept")
    got, looked = counted(items, tmp_path / "kept", full=True)
    assert result(got) == whole(items, tmp_path / "w") and len(looked.nodes) == len(items)
    sums = (tmp_path / "kept" / "graph-sums.json").read_bytes()
    with pytest.raises(ValueError, match="CITES"):
        counted([replace(items[0], cites=None)], tmp_path / "kept")
    assert (tmp_path / "kept" / "graph-sums.json").read_bytes() == sums  # nothing written
