"""The listings' memo of parsed ``metadata.json`` files (``layout._MetadataMemo``): a listing of
an unchanged library reads no metadata file, and anything else — an edited file, a link, a
damaged or forged-looking row, a hostile folder name, a memo that cannot be written — is read
as the walk always read it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from arkai.adapters import layout
from arkai.adapters.itemcache import CACHE_DIR
from arkai.adapters.layout import iter_items, load_items, scan_items

TABLE = CACHE_DIR / "metadata.tsv"


def _item(root: Path, rel: str, ident: str, title: str = "T") -> Path:
    folder = root / "library" / rel
    folder.mkdir(parents=True)
    meta = folder / "metadata.json"
    meta.write_text(json.dumps({"id": ident, "title": title}, indent=2), encoding="utf-8")
    (folder / "transcript.md").write_text("hello\n", encoding="utf-8")
    return meta


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The metadata files read (not taken from the memo)."""
    seen: list[Path] = []
    real = layout.load_metadata

    def counting(folder: Path, root: Path | None = None) -> dict[str, object]:
        seen.append(folder)
        return real(folder, root)

    monkeypatch.setattr(layout, "load_metadata", counting)
    # Files written in this test are "racy" for SETTLED_NS: treat them as settled.
    monkeypatch.setattr("arkai.adapters.itemtable.SETTLED_NS", -(10**12))
    return seen


def test_an_unchanged_library_is_listed_without_reading_its_metadata(
    tmp_path: Path, reads: list[Path]
) -> None:
    _item(tmp_path, "notes/A (1)", "1", "Alpha")
    _item(tmp_path, "notes/B (2)", "2", "Beta")
    first = [(i.id, i.title, i.path) for i in iter_items(tmp_path)]
    assert len(reads) == 2 and (tmp_path / TABLE).is_file()
    reads.clear()
    assert [(i.id, i.title, i.path) for i in iter_items(tmp_path)] == first
    items, problems = scan_items(tmp_path)
    assert [(i.id, i.title, i.path) for i in items] == first and problems == []
    assert reads == []
    # Each listing gets its own dict: a caller changing one changes no other listing's.
    items[0].metadata["title"] = "changed in memory"
    assert next(iter_items(tmp_path)).title == "Alpha"


def test_an_edited_file_is_read_again_even_with_its_size_and_mtime_kept(
    tmp_path: Path, reads: list[Path]
) -> None:
    meta = _item(tmp_path, "notes/A (1)", "1", "Alpha")
    list(iter_items(tmp_path))
    st = os.lstat(meta)
    meta.write_text(meta.read_text(encoding="utf-8").replace("Alpha", "Omega"), encoding="utf-8")
    os.utime(meta, ns=(st.st_atime_ns, st.st_mtime_ns))  # size and mtime as before
    reads.clear()
    assert [i.title for i in iter_items(tmp_path)] == ["Omega"]  # the ctime moved
    assert len(reads) == 1


def test_a_file_written_within_the_racy_window_is_never_taken_from_the_memo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _item(tmp_path, "notes/A (1)", "1")
    list(iter_items(tmp_path))  # the real SETTLED_NS: the file was written just now
    line = (tmp_path / TABLE).read_bytes().split(b"\n")[1]
    assert line.split(b"\t")[2] == b"-"  # no stat recorded: read and hashed again next time
    seen: list[Path] = []
    real = layout.load_metadata
    monkeypatch.setattr(layout, "load_metadata", lambda f, r=None: seen.append(f) or real(f, r))
    list(iter_items(tmp_path))
    assert len(seen) == 1


def test_a_link_in_place_of_a_remembered_file_is_refused(tmp_path: Path, reads: list[Path]) -> None:
    meta = _item(tmp_path, "notes/A (1)", "1")
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps({"id": "1", "title": "from outside"}), encoding="utf-8")
    list(iter_items(tmp_path))
    meta.unlink()
    os.symlink(outside, meta)
    items, problems = scan_items(tmp_path)
    assert items == [] and len(problems) == 1
    assert "symbolic link" in problems[0].error and str(meta) in problems[0].error
    assert list(iter_items(tmp_path)) == []


def test_damaged_rows_and_a_table_of_another_version_are_not_used(
    tmp_path: Path, reads: list[Path]
) -> None:
    _item(tmp_path, "notes/A (1)", "1", "Alpha")
    _item(tmp_path, "notes/B (2)", "2", "Beta")
    list(iter_items(tmp_path))
    table = tmp_path / TABLE
    head, a, b, end = table.read_bytes().split(b"\n")
    # Row A's body edited (its digest no longer matches), row B's sealed digest cut short.
    table.write_bytes(b"\n".join([head, a.replace(b"Alpha", b"Forged"), b[:-3], end]))
    reads.clear()
    assert [i.title for i in iter_items(tmp_path)] == ["Alpha", "Beta"]
    assert len(reads) == 2
    rows = table.read_bytes().split(b"\n")[1:]
    other = json.dumps({"format": 1, "version": "0"}, sort_keys=True).encode()
    table.write_bytes(b"\n".join([other, *rows]))
    reads.clear()
    assert [i.title for i in iter_items(tmp_path)] == ["Alpha", "Beta"]
    assert len(reads) == 2
    table.write_bytes(b"\xff\xfe not a table at all")
    assert [i.title for i in iter_items(tmp_path)] == ["Alpha", "Beta"]


def test_a_row_whose_body_is_not_metadata_is_read_from_the_file(
    tmp_path: Path, reads: list[Path]
) -> None:
    from arkai.adapters.itemtable import seal_row

    _item(tmp_path, "notes/A (1)", "1", "Alpha")
    list(iter_items(tmp_path))
    table = tmp_path / TABLE
    head, row, end = table.read_bytes().split(b"\n")
    name, st, key, _ = row.split(b"\t", 1)[1].split(b"\t", 3)
    table.write_bytes(b"\n".join([head, seal_row(b"\t".join([name, st, key, b"[1, 2]"])), end]))
    reads.clear()
    assert [i.title for i in iter_items(tmp_path)] == ["Alpha"] and len(reads) == 1


def test_hostile_folder_names_are_listed_and_kept_in_no_row(
    tmp_path: Path, reads: list[Path]
) -> None:
    _item(tmp_path, "notes/tab\there", "1")
    _item(tmp_path, "notes/line\nbreak", "2")
    raw = os.fsencode(tmp_path / "library" / "notes") + b"/bad \xff name"
    os.mkdir(raw)
    with open(raw + b"/metadata.json", "wb") as fh:
        fh.write(b'{"id": "3"}')
    for _ in range(2):
        reads.clear()
        assert sorted(i.id for i in iter_items(tmp_path)) == ["1", "2", "3"]
        assert len(reads) == 3  # none of them remembered, nothing broken
    table = tmp_path / TABLE
    assert not table.exists() or table.read_bytes().count(b"\n") == 1  # no row


def test_a_memo_that_cannot_be_written_leaves_the_listing_as_it_was(
    tmp_path: Path, reads: list[Path]
) -> None:
    _item(tmp_path, "notes/A (1)", "1")
    (tmp_path / ".arkai").write_text("a file where the cache folder goes", encoding="utf-8")
    for _ in range(2):
        assert [i.id for i in iter_items(tmp_path)] == ["1"]
        assert [i.id for i in scan_items(tmp_path)[0]] == ["1"]
        assert [i.id for i in load_items(tmp_path, ["notes/A (1)"])[0]] == ["1"]


def test_a_listing_stopped_early_keeps_the_whole_memo(tmp_path: Path, reads: list[Path]) -> None:
    for n in range(3):
        _item(tmp_path, f"notes/{n}", str(n))
    list(iter_items(tmp_path))
    assert next(iter_items(tmp_path)).id == "0"  # get_item stops at its match
    assert load_items(tmp_path, ["notes/1"])[0][0].id == "1"  # a part of the library
    reads.clear()
    assert [i.id for i in iter_items(tmp_path)] == ["0", "1", "2"] and reads == []


def test_removed_and_renamed_items_leave_the_memo(tmp_path: Path, reads: list[Path]) -> None:
    _item(tmp_path, "notes/A (1)", "1")
    _item(tmp_path, "notes/B (2)", "2")
    list(iter_items(tmp_path))
    (tmp_path / "library/notes/A (1)").rename(tmp_path / "library/notes/Z (1)")
    reads.clear()
    assert [i.path.name for i in iter_items(tmp_path)] == ["B (2)", "Z (1)"]
    assert reads == [tmp_path / "library/notes/Z (1)"]
    rows = (tmp_path / TABLE).read_bytes().split(b"\n")[1:-1]
    assert sorted(r.split(b"\t")[1] for r in rows) == [b"notes/B (2)", b"notes/Z (1)"]


def test_the_walk_sorts_folders_as_paths_not_as_strings(tmp_path: Path) -> None:
    # "t-x" < "t/…" as strings, but the folder "t" comes before "t-x" as paths.
    _item(tmp_path, "t-x/A", "1")
    _item(tmp_path, "t/B", "2")
    _item(tmp_path, "t/B c", "3")
    order = [i.id for i in iter_items(tmp_path)]
    assert order == ["2", "3", "1"]
    assert order == [i.id for i in sorted(iter_items(tmp_path), key=lambda i: i.path)]


def test_an_item_folder_holds_no_other_item(tmp_path: Path) -> None:
    _item(tmp_path, "notes/A", "1")
    _item(tmp_path, "notes/A/inner", "2")  # inside an item: not an item
    folder = tmp_path / "library/notes/D"
    (folder / "metadata.json").mkdir(parents=True)  # an entry of another kind still counts
    items, problems = scan_items(tmp_path)
    assert [i.id for i in items] == ["1"]
    assert [p.path for p in problems] == [folder / "metadata.json"]
