"""Shards are append-only: only the newest changes when items arrive (ops/shards.py)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from arkai.adapters import events
from arkai.adapters.shards import read_manifest, read_shard, shards_dir
from arkai.model.shard import CondensedChunk
from arkai.ops.shards import build_shards


def rec(item: str, chunk: int, date: str, words: int = 60) -> CondensedChunk:
    summary = " ".join(f"{item}-{chunk}-w{i}" for i in range(words))
    return CondensedChunk(item=item, chunk=chunk, transcript=f"library/x/{item}/transcript.md",
                          start=0, end=10, tokens=400, condensed_tokens=100, summary=summary,
                          date=date)  # fmt: skip


def hashes(root: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(shards_dir(root).glob("shard-*.jsonl"))}  # fmt: skip


def library(n: int) -> list[CondensedChunk]:
    return [rec(f"item{i:02d}", c, f"2025-{1 + i % 12:02d}-10") for i in range(n) for c in (1, 2)]


LIMIT = 2000  # tokens: a handful of chunks per shard


def test_first_build_is_chronological_with_manifest(tmp_path: Path) -> None:
    records = library(12)
    s = build_shards(tmp_path, reversed(records), shard_tokens=LIMIT)
    m = read_manifest(tmp_path)
    assert m is not None and s.shards == len(m.shards) > 2
    placed = [c for info in m.shards for c in read_shard(tmp_path, info.file)]
    assert [(c.date, c.item, c.chunk) for c in placed] == sorted((c.date, c.item, c.chunk)
                                                                for c in records)  # fmt: skip
    assert [c.number for c in placed] == list(range(1, len(records) + 1))
    for info in m.shards:
        data = (shards_dir(tmp_path) / info.file).read_bytes()
        assert info.digest == "sha256:" + hashlib.sha256(data).hexdigest()
        assert info.tokens <= LIMIT and info.chunks == len(data.splitlines())
        chunks = list(read_shard(tmp_path, info.file))
        assert info.first_date == min(c.date for c in chunks if c.date)
        assert info.last_date == max(c.date for c in chunks if c.date)
        assert all(c.shard == info.id for c in chunks)
        assert set(info.items) == {c.item for c in chunks}
    first = placed[0]
    assert first.chunk_id == "shard-001:chunk-1"
    assert first.message_id(3) == "shard-001:chunk-1:msg-3"


def test_new_items_change_only_the_newest_shard_even_when_older(tmp_path: Path) -> None:
    records = library(12)
    build_shards(tmp_path, records, shard_tokens=LIMIT)
    before = hashes(tmp_path)
    newest = sorted(before)[-1]
    # A new item dated before everything else: appended to the newest shard, not inserted.
    old_news = [rec("zz-old", 1, "2020-01-01"), rec("zz-old", 2, "2020-01-01")]
    s = build_shards(tmp_path, records + old_news, shard_tokens=LIMIT)
    after = hashes(tmp_path)
    unchanged = {f for f in before if after.get(f) == before[f]}
    assert unchanged == set(before) - {newest}  # every older shard byte-identical
    assert s.rebuilt_from is None and s.resharded is None
    m = read_manifest(tmp_path)
    assert m is not None
    last = [c for info in m.shards[-2:] for c in read_shard(tmp_path, info.file)]
    assert [c.item for c in last][-2:] == ["zz-old", "zz-old"]
    assert any(info.first_date == "2020-01-01" for info in m.shards[-2:])
    # Nothing new: nothing is written at all.
    again = build_shards(tmp_path, records + old_news, shard_tokens=LIMIT)
    assert again.written == [] and hashes(tmp_path) == after


def test_changing_shard_tokens_reshards_everything_and_says_so(tmp_path: Path) -> None:
    records = library(12)
    build_shards(tmp_path, records, shard_tokens=LIMIT)
    with events.run(tmp_path, "condense") as log:
        s = build_shards(tmp_path, records, shard_tokens=LIMIT * 2, log=log)
    assert s.resharded is not None and "2000 to 4000" in s.resharded
    m = read_manifest(tmp_path)
    assert m is not None and m.shard_tokens == LIMIT * 2
    assert set(hashes(tmp_path)) == {i.file for i in m.shards}  # surplus old files removed
    logged = [json.loads(line) for p in (tmp_path / ".arkai" / "runs").rglob("events.jsonl")
              for line in p.read_text().splitlines()]  # fmt: skip
    assert any(e["type"] == "ShardsResharded" and e["shard_tokens"] == LIMIT * 2 for e in logged)


def numbered(root: Path) -> dict[tuple[str, int], tuple[str | None, int | None]]:
    """Every placed chunk's (shard, number) by (item, chunk)."""
    m = read_manifest(root)
    assert m is not None
    return {(c.item, c.chunk): (c.shard, c.number)
            for info in m.shards for c in read_shard(root, info.file)}  # fmt: skip


def test_a_removed_or_changed_item_leaves_its_shards_and_keeps_every_other_id(
    tmp_path: Path,
) -> None:
    """A removed item is taken out of the shards holding it (written again with their other
    chunks, numbers kept); every other shard stays byte-identical. A changed item's new
    chunks go to the newest shard with numbers never given before: a chunk keeps its ID
    while it exists, and no ID is given to another chunk."""
    records = library(12)
    build_shards(tmp_path, records, shard_tokens=LIMIT)
    m = read_manifest(tmp_path)
    assert m is not None and len(m.shards) >= 4 and m.next_number == len(records) + 1
    before, ids = hashes(tmp_path), numbered(tmp_path)
    victim = m.shards[2].items[0]
    holding = {i.file for i in m.shards if victim in i.items}
    s = build_shards(tmp_path, [r for r in records if r.item != victim], shard_tokens=LIMIT)
    after = hashes(tmp_path)
    assert s.rebuilt_from == min(holding) and set(s.written) == holding - set(s.removed)
    assert all(after[f] == before[f] for f in before if f not in holding)
    left = numbered(tmp_path)
    assert set(left) == {k for k in ids if k[0] != victim}
    assert all(left[k] == ids[k] for k in left)  # no other chunk moved or was renumbered
    # Changed: its new chunks appended after every number given (the removed ones unused).
    changed = [r for r in records if r.item != victim]
    edited = changed[0].item
    changed = [rec(edited, 1, "2025-01-10", words=30)] + [r for r in changed if r.item != edited]
    s = build_shards(tmp_path, changed, shard_tokens=LIMIT)
    now = numbered(tmp_path)
    assert now[(edited, 1)][1] == len(records) + 1 and (edited, 2) not in now
    assert all(now[k] == left[k] for k in now if k[0] != edited)
    m2 = read_manifest(tmp_path)
    assert m2 is not None and m2.next_number == len(records) + 2
    assert now[(edited, 1)][0] == m2.shards[-1].id  # in the newest shard
    # The same records again: nothing is written.
    again = build_shards(tmp_path, changed, shard_tokens=LIMIT)
    assert again.written == [] and again.removed == [] and numbered(tmp_path) == now


def test_a_damaged_shard_is_dropped_and_its_items_placed_again(tmp_path: Path) -> None:
    """A shard whose bytes no longer match the manifest cannot be read: it is dropped, and
    every item it listed is taken out of the other shards and appended to the newest, with
    new numbers; the shards holding none of them stay byte-identical."""
    records = library(12)
    build_shards(tmp_path, records, shard_tokens=LIMIT)
    m = read_manifest(tmp_path)
    assert m is not None
    before, ids = hashes(tmp_path), numbered(tmp_path)
    (shards_dir(tmp_path) / "shard-002.jsonl").write_text("{torn\n")
    s = build_shards(tmp_path, records, shard_tokens=LIMIT)
    lost = set(m.shards[1].items)
    assert "shard-002.jsonl" in s.removed
    after = hashes(tmp_path)
    assert all(after[i.file] == before[i.file] for i in m.shards[:-1]
               if not lost.intersection(i.items))  # fmt: skip
    now = numbered(tmp_path)
    assert set(now) == set(ids)  # every chunk placed once
    assert all(now[k] == ids[k] for k in now if k[0] not in lost)
    assert min(now[k][1] or 0 for k in now if k[0] in lost) > len(records)


def test_a_manifest_from_before_next_number_goes_on_counting(tmp_path: Path) -> None:
    """A manifest written before ``next_number`` was kept (chunks numbered 1, 2, …) is carried
    on: a changed item's new chunks get the numbers after the last one, nothing else moves."""
    records = library(12)
    build_shards(tmp_path, records, shard_tokens=LIMIT)
    path = shards_dir(tmp_path) / "manifest.json"
    doc = json.loads(path.read_text())
    del doc["next_number"]
    path.write_text(json.dumps(doc, indent=2) + "\n")
    ids = numbered(tmp_path)
    edited = records[0].item
    changed = [rec(edited, 1, "2025-01-10", words=30)] + [r for r in records if r.item != edited]
    build_shards(tmp_path, changed, shard_tokens=LIMIT)
    now = numbered(tmp_path)
    assert now[(edited, 1)][1] == len(records) + 1
    assert all(now[k] == ids[k] for k in now if k[0] != edited)
    m = read_manifest(tmp_path)
    assert m is not None and m.next_number == len(records) + 2


def test_a_manifest_naming_shards_otherwise_rebuilds_them_all(tmp_path: Path) -> None:
    """Shard IDs edited by hand in the manifest (not ``shard-NNN`` ascending, or an ID and a
    file that disagree) are not built on: every shard is made again, numbered from 1 — a
    removed item leaves no hole, as it would with the manifest as written."""
    records = library(12)
    build_shards(tmp_path, records, shard_tokens=LIMIT)
    path = shards_dir(tmp_path) / "manifest.json"
    good = path.read_text()
    victim = records[4].item
    left = [r for r in records if r.item != victim]
    for edit in ({}, {"id": "shard-9"}, {"id": "shard-x", "file": "shard-x.jsonl"},
                 {"file": "shard-001.jsonl"}):  # fmt: skip
        build_shards(tmp_path, records, shard_tokens=LIMIT)
        path.write_text(good)
        doc = json.loads(good)
        doc["shards"][1].update(edit)
        path.write_text(json.dumps(doc, indent=2) + "\n")
        build_shards(tmp_path, left, shard_tokens=LIMIT)
        m = read_manifest(tmp_path)
        assert m is not None
        numbers = [c.number for i in m.shards for c in read_shard(tmp_path, i.file)]
        if edit:  # made again: 1, 2, … with no hole
            assert numbers == list(range(1, len(left) + 1)), edit
        else:  # built on: the removed item's numbers stay unused
            assert len(numbers) == len(left) and numbers != list(range(1, len(left) + 1))
