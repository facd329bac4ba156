"""The per-item table of a whole-library pass (``arkai.adapters.itemtable``): a row is used only
for the files it was made from; a damaged row or table is ignored, never trusted."""

from __future__ import annotations

from pathlib import Path

import pytest

from arkai.adapters import itemtable
from arkai.adapters.itemtable import ItemTable, stat_digest


@pytest.fixture
def files(tmp_path: Path) -> list[Path]:
    out = [tmp_path / "a.txt", tmp_path / "b.txt", tmp_path / "missing.txt"]
    out[0].write_text("one")
    out[1].write_text("two")
    return out


def test_a_row_is_found_by_its_stat_or_its_key_and_survives_a_reload(
    tmp_path: Path, files: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(itemtable, "SETTLED_NS", -(10**12))
    st = stat_digest(files)
    assert st is not None
    table = ItemTable(tmp_path, "t", "v1")
    table.keep("item1", st, "sha256:k1", b'{"x":1}')
    assert table.save(prune=True) and not table.save(prune=True)  # unchanged: not rewritten
    again = ItemTable(tmp_path, "t", "v1")
    row = again.by_stat("item1", st[0])
    assert row is not None and row.body == b'{"x":1}' and row.key == "sha256:k1"
    again.keep("item1", st, row.key, row.body)
    assert not again.save(prune=True)  # a pass that changed nothing writes nothing
    assert again.by_key("item1", "sha256:k1") == row and again.by_key("item1", "sha256:k2") is None
    files[0].write_text("uno")  # a write changes the stat digest
    assert again.by_stat("item1", stat_digest(files)[0]) is None  # type: ignore[index]
    assert ItemTable(tmp_path, "t", "v2").rows == {}  # another version: nothing used


def test_racy_files_are_hashed_next_time(tmp_path: Path, files: list[Path]) -> None:
    table = ItemTable(tmp_path, "t", "v1")
    st = stat_digest(files)
    table.keep("item1", st, "sha256:k1", b"{}")
    table.save(prune=True)
    again = ItemTable(tmp_path, "t", "v1")
    assert again.by_stat("item1", st[0] if st else None) is None  # written just now
    assert again.by_key("item1", "sha256:k1") is not None


def test_damaged_rows_are_rejected_and_the_others_kept(tmp_path: Path) -> None:
    table = ItemTable(tmp_path, "t", "v1")
    for n in range(3):
        table.keep(f"item{n}", None, f"sha256:k{n}", b'{"n":%d}' % n)
    table.keep("bad\tid", None, "sha256:k", b"{}")  # not representable: not recorded
    table.save(prune=True)
    lines = table.path.read_bytes().split(b"\n")
    lines[2] = lines[2].replace(b'"n":1', b'"n":7')
    table.path.write_bytes(b"\n".join(lines))
    again = ItemTable(tmp_path, "t", "v1")
    assert sorted(again.rows) == ["item0", "item2"] and again.rejected == 1
    again.keep("item3", None, "sha256:k3", b"{}")
    again.save(prune=False)  # a partial pass keeps the rows it did not touch
    assert sorted(ItemTable(tmp_path, "t", "v1").rows) == ["item0", "item2", "item3"]


def test_a_link_is_not_trusted_by_its_stat(tmp_path: Path, files: list[Path]) -> None:
    link = tmp_path / "link.txt"
    link.symlink_to(files[0])
    assert stat_digest([files[0], link]) is None


def test_a_loaded_table_holds_no_bodies(tmp_path: Path) -> None:
    """Loading, asking for every row, keeping it unchanged and writing the table again holds
    one row's body at a time, not the table (the index stage's rankings: 48 MB of bodies at
    10,000 items); a row kept unchanged is copied from the file into the new one."""
    import tracemalloc

    table = ItemTable(tmp_path, "t", "v1")
    bodies = {f"item{n:04d}": b'{"text":"%s"}' % (b"x%d " % n * 4000) for n in range(400)}
    for cid, body in bodies.items():
        table.keep(cid, None, f"sha256:{cid}", body)
    table.save(prune=True)
    before = table.path.read_bytes()
    total = sum(len(b) for b in bodies.values())
    tracemalloc.start()
    try:
        again = ItemTable(tmp_path, "t", "v1")
        for cid, body in bodies.items():
            row = again.by_key(cid, f"sha256:{cid}")
            assert row is not None and row.body == body
            again.keep(cid, None, row.key, row.body)
        again.keep("item0000", None, "sha256:item0000", b'{"text":"new"}')
        assert again.save(prune=True)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < total // 10, (peak, total)
    after = table.path.read_bytes()
    assert after != before and after.split(b"\n")[2:] == before.split(b"\n")[2:]
    # The table reads its rows from the file it wrote.
    assert again.by_key("item0000", "sha256:item0000") == itemtable.Row(
        None, "sha256:item0000", b'{"text":"new"}'
    )
    got = again.by_key("item0399", "sha256:item0399")
    assert got is not None and got.body == bodies["item0399"]


def test_a_row_changed_in_the_file_after_loading_is_not_used(tmp_path: Path) -> None:
    """The file edited in place after the table was loaded (the rows' bodies are read from
    it when asked for): the row's digest is checked again, so it is rejected, not used, and
    a later save leaves it out rather than copying it."""
    table = ItemTable(tmp_path, "t", "v1")
    for n in range(3):
        table.keep(f"item{n}", None, f"sha256:k{n}", b'{"n":%d}' % n)
    table.save(prune=True)
    again = ItemTable(tmp_path, "t", "v1")
    data = again.path.read_bytes()
    with again.path.open("r+b") as fh:  # the same file, not a new one renamed over it
        fh.write(data.replace(b'"n":1', b'"n":7'))
    assert again.by_key("item1", "sha256:k1") is None and again.rejected == 1
    assert again.by_key("item2", "sha256:k2") is not None
    again.save(prune=False)
    assert sorted(ItemTable(tmp_path, "t", "v1").rows) == ["item0", "item2"]


def test_a_retained_row_is_kept_unread_under_its_key(tmp_path: Path) -> None:
    """``retain``: the loaded row stays in the table (its line copied, nothing rewritten when
    every row is retained or kept the same) when it was made under that key; under another
    key it is not, and a pruning save drops it."""
    table = ItemTable(tmp_path, "t", "v1")
    for n in range(3):
        table.keep(f"item{n}", None, f"sha256:k{n}", b'{"n":%d}' % n)
    table.save(prune=True)
    before = table.path.read_bytes()
    again = ItemTable(tmp_path, "t", "v1")
    assert again.retain("item0", "sha256:k0") and again.retain("item2", "sha256:k2")
    assert not again.retain("item1", "sha256:other") and not again.retain("item9", "sha256:k9")
    again.keep("item1", None, "sha256:k1", b'{"n":1}')
    assert not again.save(prune=True) and again.path.read_bytes() == before
    third = ItemTable(tmp_path, "t", "v1")
    assert third.retain("item0", "sha256:k0") and not third.retain("item1", "sha256:other")
    assert third.save(prune=True)
    last = ItemTable(tmp_path, "t", "v1")
    assert sorted(last.rows) == ["item0"] and last.by_key("item0", "sha256:k0") is not None
