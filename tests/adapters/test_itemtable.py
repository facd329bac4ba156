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
    10,000 items); a row kept unchanged stays where it is, the changed one is appended."""
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
    # The changed row appended as a batch of one: its first line, then the row.
    head, line, end = after[len(before) :].split(b"\n")
    assert after.startswith(before) and end == b"" and head.split(b"\t")[1:4] == [b"", b"+", b"1"]
    assert line.endswith(b'\titem0000\t-\tsha256:item0000\t{"text":"new"}')
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


def _table_rows(root: Path) -> dict[str, tuple[str, bytes]]:
    """What a fresh load of table ``t`` gives: each row's key and body."""
    table = ItemTable(root, "t", "v1")
    got = {}
    for cid, line in table.rows.items():
        row = table.by_key(cid, line.key)
        assert row is not None, cid
        got[cid] = (row.key, row.body)
    return got


def _save_all(root: Path, rows: dict[str, tuple[str, bytes]]) -> bytes:
    """The bytes of a table holding ``rows``, written whole in one save."""
    table = ItemTable(root, "t", "v1")
    for cid, (key, body) in rows.items():
        table.keep(cid, None, key, body)
    table.save(prune=True)
    return table.path.read_bytes()


def test_saves_append_and_a_load_gives_the_rows_of_the_last_save(tmp_path: Path) -> None:
    """Rounds of random changes, additions, removals and retained rows: each save appends a
    batch (the file only grows) until the lines no row uses would outweigh the others; then
    it is written whole, byte for byte the table written afresh with those rows. A load
    always gives the rows of the last save."""
    import random

    rng = random.Random(3)
    model = {f"item{n:03d}": (f"sha256:k{n}", b'{"n":%d}' % n) for n in range(60)}
    assert _save_all(tmp_path, model)
    appended = whole = 0
    for round_ in range(80):
        before = (tmp_path / itemtable.CACHE_DIR / "t.tsv").read_bytes()
        table = ItemTable(tmp_path, "t", "v1")
        for cid in rng.sample(sorted(model), rng.randint(0, 4)):
            model[cid] = (f"sha256:r{round_}{cid}", b'{"round":%d}' % round_)
        if round_ % 3 == 0:
            del model[rng.choice(sorted(model))]
        if round_ % 4 == 1:
            model[f"new{round_:03d}"] = ("sha256:new", b"[]")
        for cid, (key, body) in model.items():
            if rng.random() < 0.5 and table.retain(cid, key):
                continue
            table.keep(cid, None, key, body)
        table.save(prune=True)
        after = table.path.read_bytes()
        if after.startswith(before) and len(after) > len(before):
            appended += 1
            assert after[len(before) :].split(b"\t")[1:3] == [b"", b"+"]
        elif after != before:
            whole += 1
            assert after == _save_all(tmp_path / f"fresh{round_}", model)
        assert _table_rows(tmp_path) == model
        # The file stays within twice the rows' lines, plus the batch just appended.
        live = len(_save_all(tmp_path / f"live{round_}", model))
        assert len(after) <= 2 * live + len(after) - len(before)
    assert appended > 20 and whole > 0  # both ways taken


def test_a_torn_or_damaged_batch_undoes_its_save_and_every_later_one(tmp_path: Path) -> None:
    """A save cut short (its batch torn), a batch line changed and sealed again (its own
    digest right, the batch's wrong), a line removed or its count changed: the table is as
    the save before that batch left it — later batches unused too — and the next save writes
    the file whole."""
    states = []
    rows = {f"item{n}": (f"sha256:k{n}", b'{"n":%d}' % n) for n in range(20)}
    _save_all(tmp_path, rows)
    states.append(dict(rows))
    for step in range(3):
        table = ItemTable(tmp_path, "t", "v1")
        rows[f"item{step}"] = (f"sha256:s{step}", b'{"step":%d}' % step)
        rows.pop(f"item{10 + step}")
        for cid, (key, body) in rows.items():
            table.keep(cid, None, key, body)
        table.save(prune=True)
        states.append(dict(rows))
    path = tmp_path / itemtable.CACHE_DIR / "t.tsv"
    good = path.read_bytes()
    lines = good.split(b"\n")
    heads = [i for i, ln in enumerate(lines) if ln.split(b"\t")[1:3] == [b"", b"+"]]
    assert len(heads) == 3  # three batches after the base
    second = heads[1]

    def resealed(line: bytes) -> bytes:
        return itemtable.seal_row(line.split(b"\t", 1)[1].replace(b'"step":1', b'"step":9'))

    attacks = {
        "torn": good[: len(b"\n".join(lines[: second + 2])) - 5],
        "resealed": b"\n".join(
            [
                *lines[: second + 1],
                *(resealed(ln) for ln in lines[second + 1 : heads[2]]),
                *lines[heads[2] :],
            ]
        ),
        "removed": b"\n".join([*lines[: second + 1], *lines[second + 2 :]]),
        "count": b"\n".join(
            [
                *lines[:second],
                itemtable.seal_row(
                    lines[second].split(b"\t", 1)[1].replace(b"\t+\t2\t", b"\t+\t1\t")
                ),
                *lines[second + 1 :],
            ]
        ),
    }
    assert lines[second].split(b"\t")[3] == b"2"  # one change and one removal
    for name, data in attacks.items():
        path.write_bytes(data)
        table = ItemTable(tmp_path, "t", "v1")
        assert table.rejected >= 1, name
        assert _table_rows(tmp_path) == states[1], name
        for cid, (key, body) in states[3].items():
            table.keep(cid, None, key, body)
        assert table.save(prune=True)
        assert path.read_bytes() == _save_all(tmp_path / name, states[3]), name
        assert _table_rows(tmp_path) == states[3]


def test_a_file_grown_or_replaced_by_another_process_is_written_whole(tmp_path: Path) -> None:
    """A table loaded, then its file appended to (or replaced) by another table: a save
    appends nothing to a file it did not load; it writes its rows whole."""
    rows = {f"item{n}": (f"sha256:k{n}", b"{}") for n in range(10)}
    _save_all(tmp_path, rows)
    for how in ("grown", "replaced"):
        mine = ItemTable(tmp_path, "t", "v1")
        other = ItemTable(tmp_path, "t", "v1")
        other.keep("item0", None, "sha256:other", b'"other"')
        for cid, (key, _) in rows.items():
            if cid != "item0":
                other.retain(cid, key)
        other.save(prune=True)
        if how == "replaced":
            copy = tmp_path / "copy.tsv"
            copy.write_bytes(other.path.read_bytes())
            copy.replace(other.path)
        mine.keep("item1", None, f"sha256:{how}", how.encode())
        for cid, (key, _) in rows.items():
            if cid != "item1":
                mine.retain(cid, key)
        assert mine.save(prune=True)
        want = dict(rows) | {"item1": (f"sha256:{how}", how.encode())}
        assert _table_rows(tmp_path) == want
        assert mine.path.read_bytes() == _save_all(tmp_path / how, want)


@pytest.mark.parametrize("seed", range(5))
def test_a_line_read_for_its_place_is_checked_as_one_read_for_its_body(seed: int) -> None:
    """A load checks each line without copying its body out: the same lines accepted, with
    the same fields, as when the body is read — for sealed rows, batch heads and lines with
    any byte changed, cut or missing its fields."""
    import random

    from arkai.adapters.itemtable import _parse, seal_row

    rnd = random.Random(seed)
    bodies = [b"item\t-\tsha256:k\t{}", b"\tbatch\t3\t" + b"f" * 64, b"x\ts\tk\tbody\twith\ttabs",
              b"no tabs at all", b"a\tb\tc", "é\t-\tk\t✓".encode(), b"\xff\t-\tk\tv"]  # fmt: skip
    for _ in range(400):
        line = seal_row(rnd.choice(bodies))
        if rnd.random() < 0.5:
            at = rnd.randrange(len(line))
            line = line[:at] + bytes([rnd.randrange(256)]) + line[at + 1 :]
        if rnd.random() < 0.1:
            line = line[: rnd.randrange(len(line) + 1)]
        whole = _parse(line)
        placed = _parse(line + b"\n", len(line), body=False)
        if whole is None:
            assert placed is None
            continue
        assert placed is not None
        cid, row = whole
        want = row if cid == "" else type(row)(row.stat, row.key, b"")
        assert placed == (cid, want)


def _counting_scans(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Each full read of a table's file (``ItemTable._scan``), by table name."""
    scans: list[str] = []
    real = ItemTable._scan

    def scan(self: ItemTable) -> None:
        scans.append(self.path.stem)
        real(self)

    monkeypatch.setattr(ItemTable, "_scan", scan)
    return scans


def _places(table: ItemTable) -> tuple[object, ...]:
    return table.rows, table._file, table._size, table._live, table.rejected


def _read_whole(tmp_path: Path) -> ItemTable:
    (tmp_path / itemtable.CACHE_DIR / "t.idx").unlink(missing_ok=True)
    return ItemTable(tmp_path, "t", "v1")


def test_an_unchanged_table_is_loaded_from_its_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Saved whole, appended to (a row changed), a row dropped: each time the next load takes
    the rows' places from the index written beside the file (no line read) and holds what
    reading the whole file gives; the bodies read from there are checked as before."""
    scans = _counting_scans(monkeypatch)
    table = ItemTable(tmp_path, "t", "v1")
    for n in range(6):
        table.keep(f"item{n}", None, f"sha256:k{n}", b'{"n":%d}' % n)
    assert table.save(prune=True) and table._index_path.is_file()
    bodies = {f"item{n}": b'{"n":%d}' % n for n in range(6)}
    for step in ("saved whole", "a row changed", "a row dropped"):
        if step != "saved whole":
            edit = ItemTable(tmp_path, "t", "v1")
            size = edit.path.stat().st_size
            for cid in bodies:
                edit.retain(cid, "sha256:k" + cid[4:])
            if step == "a row changed":
                bodies["item2"] = b'{"n":"two"}'
                edit.keep("item2", None, "sha256:k2", bodies["item2"])
            else:
                del bodies["item4"]
                del edit.kept["item4"]
            assert edit.save(prune=True)
            # (a changed row is appended; the drop leaves more dead lines than live: whole)
            assert (edit.path.stat().st_size > size) == (step == "a row changed")
        scans.clear()
        loaded = ItemTable(tmp_path, "t", "v1")
        assert scans == [], step
        assert set(loaded.rows) == set(bodies)
        assert _places(loaded) == _places(_read_whole(tmp_path)) and scans == ["t"], step
        for cid, body in bodies.items():
            row = loaded.by_key(cid, "sha256:k" + cid[4:])
            assert row is not None and row.body == body, (step, cid)


@pytest.mark.parametrize(
    "change",
    ["appended by another", "edited in place", "replaced", "index torn", "index of another",
     "index past the end", "index of another version"],
)  # fmt: skip
def test_a_table_changed_since_its_index_is_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    """An index that is not of the file as it is now — the file appended to by a process
    that wrote no index, edited in place (its size kept), replaced; the index torn, of
    another format or version, or with a place past the end — is not taken: the file is read
    whole (a damaged line found as before), and the index written again from what was read."""
    scans = _counting_scans(monkeypatch)
    table = ItemTable(tmp_path, "t", "v1")
    for n in range(3):
        table.keep(f"item{n}", None, f"sha256:k{n}", b'{"n":%d}' % n)
    table.save(prune=True)
    index = table._index_path
    stale = index.read_bytes()
    rejected = 0
    if change == "appended by another":
        other = ItemTable(tmp_path, "t", "v1")
        other.keep("item9", None, "sha256:k9", b'{"n":9}')
        for n in range(3):
            other.retain(f"item{n}", f"sha256:k{n}")
        assert other.save(prune=True)
        index.write_bytes(stale)  # (as if it wrote none: the one there is of the file before)
    elif change == "edited in place":
        data = table.path.read_bytes()
        table.path.write_bytes(data.replace(b'"n":1', b'"n":7'))
        rejected = 1
    elif change == "replaced":
        tmp = table.path.with_name("t.new")
        tmp.write_bytes(table.path.read_bytes())
        tmp.replace(table.path)
    elif change == "index torn":
        index.write_bytes(stale[:40])
    elif change == "index of another":
        index.write_bytes(stale.replace(b'"format":1', b'"format":2'))
    elif change == "index past the end":
        index.write_bytes(stale.replace(b'"sha256:k2",', b'"sha256:k2",99999999', 1))
    elif change == "index of another version":
        index.write_bytes(stale.replace(b"v1", b"v0"))
    scans.clear()
    loaded = ItemTable(tmp_path, "t", "v1")
    assert scans == ["t"], change
    assert loaded.rejected == rejected
    want = {f"item{n}" for n in range(3)} - ({"item1"} if rejected else set())
    want |= {"item9"} if change == "appended by another" else set()
    assert set(loaded.rows) == want
    if not rejected:  # (a damaged file's index is removed: it is written whole at the save)
        scans.clear()
        assert _places(ItemTable(tmp_path, "t", "v1")) == _places(loaded) and scans == []
    else:
        assert not index.exists()
