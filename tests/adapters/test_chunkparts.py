"""index/chunks/: the chunk lines in parts named by their digest, and the listing that orders
them (arkai.adapters.chunkparts)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from arkai.adapters.chunkparts import (
    LISTING,
    PART_ITEMS,
    ChunkParts,
    Part,
    ends_part,
    write_listing,
    write_part,
)
from arkai.errors import LibraryError, UnsafeFileError

LINES = [f'{{"n":{i},"text":"line {i}"}}\n'.encode() for i in range(10)]


def build(folder: Path, cuts: list[list[bytes]]) -> ChunkParts:
    parts = [write_part(folder, lambda fh, ls=ls: fh.write(b"".join(ls))) for ls in cuts]
    write_listing(folder, parts)
    listing = ChunkParts.load(folder)
    assert listing is not None
    return listing


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return tmp_path / "index" / "chunks"


def test_parts_read_back_as_one_sequence(folder: Path) -> None:
    listing = build(folder, [LINES[:3], LINES[3:4], [], LINES[4:]])
    assert b"".join(listing.iter_lines()) == b"".join(LINES)
    assert sum(p.lines for p in listing.parts) == 10
    assert sum(p.size for p in listing.parts) == sum(map(len, LINES))
    # Each part is named by the SHA-256 of its bytes.
    for part in listing.parts:
        data = (folder / part.name).read_bytes()
        assert part.sha256 == "sha256:" + hashlib.sha256(data).hexdigest()
    # Positions across parts, in any order given, repeats and missing ones dropped.
    assert list(listing.lines_at({9, 0, 3, 4, 2, 42, -1})) == [
        (i, LINES[i]) for i in (0, 2, 3, 4, 9)
    ]
    # Byte offsets of the whole sequence, read back from the part that holds each.
    seventh = sum(map(len, LINES[:7]))
    assert list(listing.read_at([seventh, 0])) == [(seventh, LINES[7]), (0, LINES[0])]
    # The digest is the listing's: it names every part's content, in order.
    data = (folder / LISTING).read_bytes()
    assert listing.digest == "sha256:" + hashlib.sha256(data).hexdigest()
    other = build(folder.parent / "other", [LINES[:4], LINES[4:]])
    assert b"".join(other.iter_lines()) == b"".join(LINES) and other.digest != listing.digest


def test_writing_the_same_part_again_keeps_the_file(folder: Path) -> None:
    first = build(folder, [LINES[:5], LINES[5:]])
    stats = {p.name: os.stat(folder / p.name).st_ino for p in first.parts}
    again = build(folder, [LINES[:5], LINES[5:]])
    assert again == first
    assert {p.name: os.stat(folder / p.name).st_ino for p in again.parts} == stats
    # Only the listed files stay: parts of earlier runs and a stopped run's temp file go; a
    # folder (nothing the stage makes) is left alone.
    (folder / ".part.x.tmp").write_bytes(b"half")
    (folder / "kept-folder").mkdir()
    changed = build(folder, [LINES[:5], LINES[5:9]])
    names = {p.name for p in changed.parts}
    assert sorted(os.listdir(folder)) == sorted([*names, LISTING, "kept-folder"])
    assert first.parts[0].name in names and first.parts[1].name not in names


@pytest.mark.parametrize(
    ("listing", "error"),
    [
        (b"{", "not a chunk listing"),
        (b'{"parts":[],"version":9}', "version 9"),
        (b'{"parts":[{"lines":1,"name":"../../secret.jsonl","size":3}],"version":1}',
         "not a chunk part: '../../secret.jsonl'"),
        (b'{"parts":[{"lines":-1,"name":"' + b"a" * 64 + b'.jsonl","size":3}],"version":1}',
         "not a chunk part"),
        (b'{"parts":[{"name":"x"}],"version":1}', "not a chunk listing"),
        (b"\xff\xfe", "not a chunk listing"),
    ],
)  # fmt: skip
def test_a_listing_that_is_not_one_names_the_file(folder: Path, listing: bytes, error: str) -> None:
    folder.mkdir(parents=True)
    (folder / LISTING).write_bytes(listing)
    with pytest.raises(LibraryError, match=error) as exc:
        ChunkParts.load(folder)
    assert str(folder / LISTING) in str(exc.value)


def test_no_listing_is_none(folder: Path) -> None:
    assert ChunkParts.load(folder) is None


def test_a_part_edited_cut_or_gone_names_itself(folder: Path) -> None:
    listing = build(folder, [LINES[:5], LINES[5:]])
    first = folder / listing.parts[0].name
    # Edited to another size.
    first.write_bytes(first.read_bytes() + b"{}\n")
    with pytest.raises(LibraryError, match=f"{first}: .* bytes where {LISTING} lists"):
        list(listing.iter_lines())
    # The same size, a line fewer (two lines joined): the count is checked as it is read.
    data = b"".join(LINES[:5])
    first.write_bytes(data[:-1].replace(b"\n", b" ", 1) + b"\n")
    with pytest.raises(LibraryError, match="not the 5 lines"):
        list(listing.iter_lines())
    # A last line without its line end.
    first.write_bytes(data[:-1] + b" ")
    with pytest.raises(LibraryError, match="not the 5 lines"):
        list(listing.lines_at({4}))
    first.unlink()
    with pytest.raises(LibraryError, match=f"{first}: missing"):
        list(listing.lines_at({0}))
    # Only the parts that hold a wanted position are opened.
    assert list(listing.lines_at({7})) == [(7, LINES[7])]


def test_a_link_in_place_of_a_part_or_the_listing_is_refused(folder: Path, tmp_path: Path) -> None:
    listing = build(folder, [LINES[:5], LINES[5:]])
    outside = tmp_path / "outside.jsonl"
    part = folder / listing.parts[1].name
    outside.write_bytes(part.read_bytes())
    part.unlink()
    part.symlink_to(outside)
    with pytest.raises(UnsafeFileError, match="symbolic link"):
        list(listing.iter_lines())
    (tmp_path / "elsewhere.json").write_bytes((folder / LISTING).read_bytes())
    (folder / LISTING).unlink()
    (folder / LISTING).symlink_to(tmp_path / "elsewhere.json")
    with pytest.raises(UnsafeFileError):
        ChunkParts.load(folder)


def test_runs_end_by_the_content_id_alone() -> None:
    ids = [f"yt-{i:06d}" for i in range(20_000)]
    ends = [i for i in ids if ends_part(i)]
    assert ends == [i for i in ids if ends_part(i)]  # a function of the ID
    # About one item in PART_ITEMS ends a run (binomial: 312.5 ± 5 sd here).
    assert abs(len(ends) - len(ids) / PART_ITEMS) < 5 * (len(ids) / PART_ITEMS) ** 0.5


def test_part_counts_lines_of_memoryviews(folder: Path) -> None:
    data = b"".join(LINES[:3])
    part = write_part(folder, lambda fh: fh.write(memoryview(data)))
    assert part == Part(part.name, 3, len(data))
    assert json.loads((folder / part.name).read_bytes().splitlines()[2])["n"] == 2


def test_search_reads_the_new_parts_when_an_index_run_replaces_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An index run removes the old parts once its listing is written: a search reading the
    old listing meanwhile finds a listed part gone and reads the new listing's parts; a part
    gone with the listing unchanged is an error naming it."""
    from arkai.adapters.chunkparts import write_lines
    from arkai.ops import search

    def rows(word: str) -> list[bytes]:
        return [
            json.dumps({"key": f"sha256:{word}{i}", "content_id": "c1", "kind": "transcript",
                        "start_line": i, "end_line": i, "byte_range": [0, 1],
                        "text": f"{word} {i}", "timestamp": None}).encode() + b"\n"
            for i in (1, 2)
        ]  # fmt: skip

    index = tmp_path / "index"
    write_lines(index / "chunks", rows("old"))
    (index / "catalog.json").write_text(json.dumps({"version": 1, "items": []}))
    real = search._parse_chunks
    raced: list[str] = []

    def racing(parts: ChunkParts) -> object:
        if not raced:
            raced.append(parts.digest)
            write_lines(index / "chunks", rows("new"))  # the old part is removed
        return real(parts)

    monkeypatch.setattr(search, "_parse_chunks", racing)
    loaded = search.load_index(tmp_path)
    assert [c.text for c in loaded.chunks] == ["new 1", "new 2"] and len(raced) == 1
    listing = ChunkParts.load(index / "chunks")
    assert listing is not None
    (index / "chunks" / listing.parts[0].name).unlink()
    monkeypatch.setattr(search, "_CACHE", {})
    with pytest.raises(LibraryError, match=f"{listing.parts[0].name}: missing"):
        search.load_index(tmp_path)
