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


def test_a_removed_or_changed_item_rebuilds_from_its_first_shard(tmp_path: Path) -> None:
    records = library(12)
    build_shards(tmp_path, records, shard_tokens=LIMIT)
    m = read_manifest(tmp_path)
    assert m is not None and len(m.shards) >= 4
    before = hashes(tmp_path)
    victim = m.shards[2].items[0]
    s = build_shards(tmp_path, [r for r in records if r.item != victim], shard_tokens=LIMIT)
    after = hashes(tmp_path)
    assert s.rebuilt_from == m.shards[2].file
    assert all(after[i.file] == before[i.file] for i in m.shards[:2])
    m2 = read_manifest(tmp_path)
    assert m2 is not None
    left = [c for info in m2.shards for c in read_shard(tmp_path, info.file)]
    assert victim not in {c.item for c in left} and len(left) == len(records) - 2
    assert [c.number for c in left] == list(range(1, len(left) + 1))


def test_a_damaged_shard_is_rebuilt_from_there(tmp_path: Path) -> None:
    records = library(12)
    build_shards(tmp_path, records, shard_tokens=LIMIT)
    before = hashes(tmp_path)
    (shards_dir(tmp_path) / "shard-002.jsonl").write_text("{torn\n")
    s = build_shards(tmp_path, records, shard_tokens=LIMIT)
    assert s.rebuilt_from == "shard-002.jsonl"
    assert hashes(tmp_path) == before  # the same records give the same bytes again
