"""The shard step reading only what can differ (ops/shards.py ``update_shards``): after any
sequence of edits it leaves the files :func:`build_shards` leaves from the same shards, and it
falls back to reading every item whenever its record cannot be trusted."""

from __future__ import annotations

import hashlib
import json
import random
import shutil
from collections.abc import Collection, Iterable
from dataclasses import replace
from pathlib import Path

import pytest

from arkai.adapters.shards import (
    RECORD,
    encode_shard,
    read_manifest,
    read_record,
    read_shard,
    shards_dir,
)
from arkai.model.shard import CondensedChunk
from arkai.ops.shards import ShardSummary, build_shards, update_shards

LIMIT = 2000  # tokens: a handful of chunks per shard


def rec(item: str, chunk: int, date: str | None, words: int = 40, tag: str = "") -> CondensedChunk:
    summary = " ".join(f"{item}-{chunk}-w{i}{tag}" for i in range(words))
    return CondensedChunk(item=item, chunk=chunk, transcript=f"library/x/{item}/transcript.md",
                          start=0, end=10, tokens=400, condensed_tokens=100, summary=summary,
                          date=date)  # fmt: skip


class Library:
    """Items' chunks with a key per item (a digest of its chunks, as the index stage's item key
    digests the item's condensed.json), counting what ``chunks_of`` is asked for."""

    def __init__(self, items: dict[str, list[CondensedChunk]]) -> None:
        self.items = items
        self.asked: list[str] = []

    def keys(self) -> dict[str, str]:
        return {
            i: hashlib.sha256(json.dumps([c.to_dict() for c in cs]).encode()).hexdigest()
            for i, cs in self.items.items()
        }

    def chunks_of(self, ids: Collection[str]) -> Iterable[CondensedChunk]:
        self.asked += list(ids)
        return [c for i in ids for c in self.items[i]]

    def every(self) -> list[CondensedChunk]:
        return [c for cs in self.items.values() for c in cs]


def files(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(shards_dir(root).iterdir())}


def quick(root: Path, lib: Library, limit: int = LIMIT) -> ShardSummary:
    lib.asked = []
    return update_shards(root, lib.keys(), lib.chunks_of, shard_tokens=limit)


def same_as_full(
    quick_root: Path, full_root: Path, lib: Library, limit: int = LIMIT
) -> ShardSummary:
    """Run both from the same shards; they must leave the same files and say the same."""
    shutil.rmtree(shards_dir(full_root), ignore_errors=True)
    if shards_dir(quick_root).is_dir():
        shutil.copytree(shards_dir(quick_root), shards_dir(full_root))
    s_full = build_shards(full_root, lib.every(), shard_tokens=limit)
    s_quick = quick(quick_root, lib, limit)
    assert files(quick_root) == files(full_root)
    for field in ("shards", "chunks", "tokens", "written", "kept", "removed", "rebuilt_from"):
        assert getattr(s_quick, field) == getattr(s_full, field), field
    return s_quick


def start(n: int, rng: random.Random) -> Library:
    items: dict[str, list[CondensedChunk]] = {}
    for i in range(n):
        date = None if i % 9 == 0 else f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        items[f"item{i:03d}"] = [
            rec(f"item{i:03d}", c, date) for c in range(1, rng.randint(1, 3) + 1)
        ]
    return Library(items)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_edits_give_what_a_build_from_every_item_gives(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    lib = start(40, rng)
    a, b = tmp_path / "quick", tmp_path / "full"
    s = same_as_full(a, b, lib)
    assert s.items_read == 40  # no record yet: every item read
    fresh = 0
    for step in range(25):
        edited: set[str] = set()
        for _ in range(rng.choice([0, 1, 1, 2, 3])):
            what = rng.random()
            ids = sorted(lib.items)
            if what < 0.4 and ids:  # an item's chunks change (text, number of chunks)
                i = rng.choice(ids)
                n = rng.randint(1, 3)
                lib.items[i] = [
                    rec(i, c, lib.items[i][0].date, tag=f"s{step}") for c in range(1, n + 1)
                ]
            elif what < 0.6 and ids:  # removed
                i = rng.choice(ids)
                del lib.items[i]
            elif what < 0.7 and ids:  # only its date changes
                i = rng.choice(ids)
                lib.items[i] = [replace(c, date="2019-05-05") for c in lib.items[i]]
            else:  # added, dated anywhere
                i = f"new{fresh:03d}"
                fresh += 1
                d = f"20{rng.randint(18, 26)}-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}"
                lib.items[i] = [rec(i, c, d) for c in range(1, rng.randint(1, 3) + 1)]
            edited.add(i)
        s = same_as_full(a, b, lib)
        # Only the edited items still present were read.
        assert set(lib.asked) == edited & set(lib.items), step
        assert s.items_read == len(set(lib.asked))
        record = read_record(a)
        assert record is not None and record.keys == lib.keys()


def test_an_item_whose_key_changed_but_not_its_chunks_moves_nothing(tmp_path: Path) -> None:
    lib = start(30, random.Random(7))
    quick(tmp_path, lib)
    before = files(tmp_path)
    keys = lib.keys()
    keys["item005"] = "another key"  # e.g. its review changed: the index key covers more files
    s = update_shards(tmp_path, keys, lib.chunks_of, shard_tokens=LIMIT)
    assert files(tmp_path) == before and s.written == [] and s.rebuilt_from is None
    assert s.items_read == 1


def _damage_record(root: Path) -> None:
    path = root / RECORD
    path.write_bytes(path.read_bytes().replace(b'"format":1', b'"format":1 '))


def _edit_manifest(root: Path) -> None:
    path = shards_dir(root) / "manifest.json"
    doc = json.loads(path.read_text())
    doc["shards"][0]["last_date"] = "2099-01-01"
    path.write_text(json.dumps(doc, indent=2) + "\n")


def _tear_shard(root: Path) -> None:
    (shards_dir(root) / "shard-002.jsonl").write_text("{torn\n")


def _delete_shard(root: Path) -> None:
    (shards_dir(root) / "shard-003.jsonl").unlink()


def _edit_shard_line(root: Path) -> None:
    path = shards_dir(root) / "shard-001.jsonl"
    path.write_bytes(path.read_bytes().replace(b"-w1", b"-W1", 1))


@pytest.mark.parametrize(
    "attack", [_damage_record, _edit_manifest, _tear_shard, _delete_shard, _edit_shard_line]
)
def test_what_cannot_be_trusted_makes_it_read_every_item(tmp_path: Path, attack: object) -> None:
    lib = start(30, random.Random(11))
    a, b = tmp_path / "quick", tmp_path / "full"
    quick(a, lib)
    m = read_manifest(a)
    assert m is not None and len(m.shards) >= 4
    assert callable(attack)
    attack(a)
    lib.items["item004"] = [rec("item004", 1, "2025-03-03", tag="edited")]
    s = same_as_full(a, b, lib)
    assert s.items_read == len(lib.items) and sorted(lib.asked) == sorted(lib.items)
    # ... and the next edit is quick again.
    lib.items["item006"] = [rec("item006", 1, "2025-03-04", tag="edited")]
    s = same_as_full(a, b, lib)
    assert lib.asked == ["item006"]


def test_a_record_left_by_an_interrupted_build_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lib = start(30, random.Random(5))
    quick(tmp_path, lib)
    lib.items["item003"] = [rec("item003", 1, "2025-01-02", tag="x")]
    import arkai.ops.shards as shards

    def boom(*args: object, **kwargs: object) -> bool:
        raise KeyboardInterrupt

    monkeypatch.setattr(shards, "stage_shard_text", boom)
    with pytest.raises(KeyboardInterrupt):
        quick(tmp_path, lib)
    assert not (tmp_path / RECORD).exists()
    monkeypatch.undo()
    s = quick(tmp_path, lib)
    assert s.items_read == len(lib.items)


def test_a_new_shard_size_reshards_and_keeps_the_record_going(tmp_path: Path) -> None:
    lib = start(30, random.Random(3))
    a, b = tmp_path / "quick", tmp_path / "full"
    same_as_full(a, b, lib)
    s = same_as_full(a, b, lib, limit=LIMIT * 2)
    assert s.resharded is not None and s.items_read == len(lib.items)
    lib.items["item010"] = [rec("item010", 1, None, tag="y")]
    s = same_as_full(a, b, lib, limit=LIMIT * 2)
    assert s.items_read == 1


def test_real_chunks_written_again_from_their_lines_keep_their_bytes(tmp_path: Path) -> None:
    """A shard written again without an edited item keeps its other chunks as their lines'
    objects (not made records and back): with the bundled library's condensed chunks
    (messages, resolved findings) every shard is the bytes its records give."""
    from tests.conftest import ROOT

    items: dict[str, list[CondensedChunk]] = {}
    for path in sorted((ROOT / "condensed").rglob("condensed.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        items[doc["content_id"]] = [CondensedChunk.from_dict(c) for c in doc["chunks"]]
    chunks = [c for cs in items.values() for c in cs]
    assert len(chunks) > 5 and any(f.resolution for c in chunks for f in c.findings)
    lib = Library(items)
    a, b = tmp_path / "quick", tmp_path / "full"
    same_as_full(a, b, lib, limit=6000)
    m = read_manifest(a)
    assert m is not None and len(m.shards) >= 2 and len(m.shards[0].items) >= 2
    first = m.shards[0].items[0]
    head = items[first][0]
    items[first] = [replace(head, summary=head.summary + " Edited."), *items[first][1:]]
    s = same_as_full(a, b, lib, limit=6000)
    assert s.rebuilt_from == "shard-001.jsonl" and lib.asked == [first]
    assert "shard-001.jsonl" in s.written and len(s.written) >= 2
    for name, data in files(a).items():
        if name.startswith("shard-"):
            assert encode_shard(read_shard(a, name)).encode() == data, name


def test_an_edit_to_the_oldest_item_writes_its_shard_and_the_newest_only(tmp_path: Path) -> None:
    """An edit to the oldest item of a library of 80-odd shards writes the shard that held it
    and the newest one; no other shard is read or written (an edit costs what it touches,
    not the shards after it), the build's memory is a few shards', and the files are those
    a build from every item makes."""
    import tracemalloc

    import arkai.ops.shards as shards

    limit = 20_000  # tokens: ≈ 80 KB a shard
    items = {f"item{i:04d}": [rec(f"item{i:04d}", c, f"2025-01-{1 + i % 28:02d}", words=150)
                              for c in (1, 2)] for i in range(3000)}  # fmt: skip
    lib = Library(items)
    a, b = tmp_path / "quick", tmp_path / "full"
    same_as_full(a, b, lib, limit)
    total = sum(len(data) for data in files(a).values())
    m = read_manifest(a)
    assert m is not None and len(m.shards) >= 80 and total > 10_000_000
    first = m.shards[0].items[0]
    lib.items[first] = [rec(first, 1, items[first][0].date, words=150, tag="edited")]
    before = files(a)
    keys = lib.keys()
    read: list[str] = []
    real = shards.read_shard_objects

    def counting(root: Path, file: str) -> list[dict[str, object]]:
        read.append(file)
        return real(root, file)

    shards.read_shard_objects = counting  # type: ignore[assignment]
    # The same update twice (on a copy first), the lower peak kept: the interpreter's table of
    # interned strings grows by doubling when a run happens to fill it (≈ 3.7 MB at once in a
    # test process that interned many strings before), which two runs in a row cannot both do.
    twin = tmp_path / "twin"
    shutil.copytree(a, twin)
    peaks = []
    try:
        for root in (twin, a):
            tracemalloc.start()
            try:
                s = update_shards(root, keys, lib.chunks_of, shard_tokens=limit)
                peaks.append(tracemalloc.get_traced_memory()[1])
            finally:
                tracemalloc.stop()
    finally:
        shards.read_shard_objects = real
    peak = min(peaks)
    newest = m.shards[-1].file
    assert s.rebuilt_from == m.shards[0].file
    assert set(s.written) <= {m.shards[0].file, newest, f"shard-{len(m.shards) + 1:03d}.jsonl"}
    assert set(read) <= {m.shards[0].file, newest}
    assert all(files(a)[f] == before[f] for f in before if f not in s.written and "shard-" in f)
    assert peak < total / 5, (peak, total)
    # ... and the files are those a build from every item makes.
    shutil.rmtree(shards_dir(b))
    shards_dir(b).mkdir(parents=True)
    for name, data in before.items():
        (shards_dir(b) / name).write_bytes(data)
    build_shards(b, lib.every(), shard_tokens=limit)
    assert files(a) == files(b)


def test_a_build_stopped_while_staging_leaves_the_old_shards(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stopped after some new shards were made: every old shard file is as it was (none is
    replaced before all are made), nothing staged is left, and the next build completes."""
    import arkai.ops.shards as shards
    from arkai.adapters.shards import STAGING_DIR

    lib = start(60, random.Random(11))
    a, b = tmp_path / "quick", tmp_path / "full"
    same_as_full(a, b, lib)
    # Two old shards' items edited: both shards and the newest are written again.
    m = read_manifest(a)
    assert m is not None and len(m.shards) >= 4
    for info in m.shards[:2]:
        item = info.items[-1]
        lib.items[item] = [rec(item, 1, lib.items[item][0].date, tag="edited")]
    before = files(a)
    real, made = shards.stage_shard_text, []

    def stop_at_third(root: Path, file: str, text: str) -> bool:
        if len(made) == 2:
            raise KeyboardInterrupt
        made.append(file)
        return real(root, file, text)

    monkeypatch.setattr(shards, "stage_shard_text", stop_at_third)
    with pytest.raises(KeyboardInterrupt):
        quick(a, lib)
    assert len(made) == 2 and files(a) == before
    assert not (a / STAGING_DIR).exists()
    monkeypatch.undo()
    same_as_full(a, b, lib)


def test_what_a_killed_build_left_staged_is_dropped(tmp_path: Path) -> None:
    """A build killed outright leaves its staged files; the next build neither uses them nor
    leaves them behind."""
    from arkai.adapters.shards import STAGING_DIR

    lib = start(30, random.Random(12))
    a, b = tmp_path / "quick", tmp_path / "full"
    same_as_full(a, b, lib)
    staged = a / STAGING_DIR
    staged.mkdir(parents=True)
    for name in files(a):
        (staged / name).write_bytes(b"left by a killed build\n")
    lib.items["item004"] = [rec("item004", 1, "2025-03-03", tag="edited")]
    same_as_full(a, b, lib)
    assert not staged.exists()


@pytest.mark.parametrize("read_back", [1000, 1])
def test_a_first_build_reads_one_item_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, read_back: int
) -> None:
    """A first build (no shards yet) leaves build_shards' files and summary while asking for
    one item's chunks at a time — never the library's at once (issue 17: they were all held,
    1.38 GB at 20,000 items) — each item once while the read-back holds the library, again
    as it is packed when it does not; with items whose chunks are far apart in time and a
    read-back of one item, still the same."""
    import arkai.ops.shards as shards

    monkeypatch.setattr(shards, "_READ_BACK", read_back)
    rng = random.Random(5)
    lib = start(70, rng)
    # Two items whose chunks are months apart, between the others'.
    lib.items["item900"] = [rec("item900", 1, "2025-01-02"), rec("item900", 2, "2025-11-30")]
    lib.items["item901"] = [rec("item901", 1, "2025-02-03"), rec("item901", 2, None)]
    a, b = tmp_path / "quick", tmp_path / "full"
    sizes: list[int] = []

    def one_by_one(ids: Collection[str]) -> Iterable[CondensedChunk]:
        sizes.append(len(ids))
        return lib.chunks_of(ids)

    lib.asked = []
    got = update_shards(a, lib.keys(), one_by_one, shard_tokens=LIMIT)
    want = build_shards(b, lib.every(), shard_tokens=LIMIT)
    assert files(a) == files(b) and len(files(a)) > 5
    for field in ("shards", "chunks", "tokens", "written", "kept", "removed"):
        assert getattr(got, field) == getattr(want, field), field
    assert set(sizes) == {1}
    times = {i: lib.asked.count(i) for i in lib.items}
    if read_back >= len(lib.items):
        assert set(times.values()) == {1}
    else:  # read for its digest, then again as packed (the last one read is still held)
        assert times["item900"] >= 3 and min(times.values()) >= 1
        assert sum(n >= 2 for n in times.values()) >= len(times) - 1
    # The record is written: the next run reads only what changed.
    assert quick(a, lib).items_read == 0


def test_a_first_build_refuses_chunks_that_change_while_it_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An item whose chunks are not the same the second time they are read (a read-back of
    one item: it is read again as it is packed): refused by name, no shard written."""
    import arkai.ops.shards as shards
    from arkai.errors import LibraryError

    monkeypatch.setattr(shards, "_READ_BACK", 1)

    lib = start(12, random.Random(2))
    reads: dict[str, int] = {}

    def changing(ids: Collection[str]) -> Iterable[CondensedChunk]:
        out = []
        for i in ids:
            reads[i] = reads.get(i, 0) + 1
            out += lib.items[i] if reads[i] == 1 or i != "item003" else lib.items[i][:0]
        return out

    assert lib.items["item003"]
    with pytest.raises(LibraryError, match="item003: its condensed chunks changed"):
        update_shards(tmp_path, lib.keys(), changing, shard_tokens=LIMIT)
    assert not shards_dir(tmp_path).is_dir() or not list(shards_dir(tmp_path).glob("shard-*"))


@pytest.mark.parametrize("case", ["no record", "many new items"])
def test_kept_shards_are_compared_and_filled_one_item_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """Old shards kept but no record of the build that made them (a clone, `.arkai/` removed,
    `--full`), or a record and thousands of items added at once: the items are read one at a
    time and compared by digest with the shards' lines (they were all held, and the shards'
    chunks beside them: 709 MB for the step at 10,000 items; issue 17), the new ones read
    again as they are packed; the files and summary are build_shards'."""
    import arkai.ops.shards as shards

    monkeypatch.setattr(shards, "_READ_BACK", 2)
    rng = random.Random(8)
    lib = start(30, rng)
    a, b = tmp_path / "quick", tmp_path / "full"
    same_as_full(a, b, lib)
    if case == "no record":
        (a / RECORD).unlink()
        lib.items["item004"] = [rec("item004", 1, "2025-03-03", tag="edited")]
        del lib.items["item007"]
    else:
        for i in range(100, 160):
            date = f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
            lib.items[f"item{i}"] = [rec(f"item{i}", c, date) for c in (1, 2)]
    sizes: list[int] = []
    real = lib.chunks_of

    def one_by_one(ids: Collection[str]) -> Iterable[CondensedChunk]:
        sizes.append(len(ids))
        return real(ids)

    monkeypatch.setattr(lib, "chunks_of", one_by_one)
    s = same_as_full(a, b, lib)
    assert set(sizes) == {1}
    new = [i for i in lib.items if i.startswith("item1")]
    if case == "no record":
        assert s.items_read == len(lib.items) and s.rebuilt_from is not None
        m = read_manifest(a)
        assert m is not None and all("item007" not in i.items for i in m.shards)
    else:
        assert s.items_read == len(new) == 60 and s.rebuilt_from is None
        assert all(lib.asked.count(i) == 2 for i in new[:-2])  # digested, then packed
    assert quick(a, lib).items_read == 0
