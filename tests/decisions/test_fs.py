"""The one atomic writer and the one careful reader of repo files (``adapters/fs.py``)."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from arkai.adapters.fs import atomic_write, atomic_write_bytes, read_repo_file, write_if_changed
from arkai.core.titles import folder_name, truncate_utf8
from arkai.errors import UnsafeFileError
from tests.conftest import ROOT


def test_atomic_write_replaces_and_leaves_no_temp_on_error(tmp_path: Path) -> None:
    path = tmp_path / "a" / "f.json"
    atomic_write_bytes(path, b"one")
    assert path.read_bytes() == b"one"

    def boom(fh: object) -> None:
        raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError):
        atomic_write(path, boom)
    assert path.read_bytes() == b"one"
    assert sorted(p.name for p in path.parent.iterdir()) == ["f.json"]
    assert write_if_changed(path, b"one") is False
    assert write_if_changed(path, b"two", fsync=False) is True and path.read_bytes() == b"two"


def test_printable_path_escapes_only_bytes_that_are_not_utf8() -> None:
    from arkai.adapters.fs import printable_path

    assert printable_path("talks/ünï cödé 🐝.md") == "talks/ünï cödé 🐝.md"
    assert printable_path(os.fsdecode(b"talks/caf\xe9.md")) == "talks/caf\\xe9.md"
    assert printable_path("new\nline") == "new\nline"  # (a line break is the caller's to show)


def test_write_if_changed_compares_block_by_block(tmp_path: Path) -> None:
    """The file is compared with the data a block at a time: a difference in any block, at
    the first or last byte, is a difference; a file that grew after its size was read is not
    the data."""
    from arkai.adapters.fs import holds_bytes

    data = bytes(range(256)) * 40  # 10,240 bytes: ten blocks of 1,024 and a part
    path = tmp_path / "f.bin"
    path.write_bytes(data)
    assert holds_bytes(path, data, block=1024)
    assert holds_bytes(path, data, block=len(data)) and holds_bytes(path, data, block=7)
    for at in (0, 1023, 1024, 5000, len(data) - 1):
        other = bytearray(data)
        other[at] ^= 1
        assert not holds_bytes(path, bytes(other), block=1024), at
    assert not holds_bytes(path, data[:-1], block=1024)
    assert not holds_bytes(path, data + b"x", block=1024)
    assert not holds_bytes(tmp_path / "missing", b"", block=1024)
    assert write_if_changed(path, data) is False
    other = data[:-1] + b"\x00"
    assert write_if_changed(path, other) is True and path.read_bytes() == other


def test_write_if_changed_replaces_a_symlink_instead_of_writing_through_it(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"keep")
    link = tmp_path / "f.txt"
    link.symlink_to(outside)
    assert write_if_changed(link, b"keep") is True
    assert outside.read_bytes() == b"keep" and not link.is_symlink()


def test_write_chunks_if_changed_keeps_an_identical_file(tmp_path: Path) -> None:
    from arkai.adapters.fs import write_chunks_if_changed

    path = tmp_path / "g.json"
    assert write_chunks_if_changed(path, iter([b"ab", b"", b"c"])) is True
    inode = path.stat().st_ino
    # The same bytes in other pieces: the file (its inode, so DVC's state) is left alone.
    assert write_chunks_if_changed(path, iter([b"a", b"bc"])) is False
    assert path.stat().st_ino == inode and path.read_bytes() == b"abc"
    assert write_chunks_if_changed(path, iter([b"abd"]), fsync=False) is True
    assert path.read_bytes() == b"abd"

    def failing() -> Iterator[bytes]:
        yield b"partial"
        raise RuntimeError("generator failed")

    with pytest.raises(RuntimeError):
        write_chunks_if_changed(path, failing())
    assert path.read_bytes() == b"abd" and [p.name for p in tmp_path.iterdir()] == ["g.json"]
    # A symbolic link is replaced, not written through (as write_if_changed does).
    outside = tmp_path / "outside"
    outside.write_bytes(b"x")
    path.unlink()
    path.symlink_to(outside)
    assert write_chunks_if_changed(path, iter([b"x"])) is True
    assert not path.is_symlink() and outside.read_bytes() == b"x"


def test_one_atomic_writer_in_the_source() -> None:
    """Every file write in src/ goes through fs.atomic_write: nothing else makes a temp file,
    opens a descriptor for writing, or writes a whole file in place."""
    offenders = []
    for path in sorted((ROOT / "src" / "arkai").rglob("*.py")):
        if path.name == "fs.py" and path.parent.name == "adapters":
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"tempfile\.mkstemp|\.write_(bytes|text)\(|os\.fdopen", line):
                offenders.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert offenders == []


def _repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "library" / "notes").mkdir(parents=True)
    return root


def test_reads_regular_files_only(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    good = root / "library" / "notes" / "a.md"
    good.write_bytes(b"hello")
    assert read_repo_file(good, root) == b"hello"
    assert read_repo_file(root / "library" / "missing", root, missing_ok=True) is None
    with pytest.raises(FileNotFoundError):
        read_repo_file(root / "library" / "missing", root)


@pytest.mark.parametrize("target", ["/etc/passwd", "/proc/self/environ", "relative"])
def test_refuses_symlinks(tmp_path: Path, target: str) -> None:
    root = _repo(tmp_path)
    (root / "library" / "notes" / "real.md").write_text("x")
    link = root / "library" / "notes" / "t.md"
    link.symlink_to("real.md" if target == "relative" else target)
    with pytest.raises(UnsafeFileError, match=re.escape(str(link)) + ".*symbolic link"):
        read_repo_file(link, root)


def test_refuses_a_symlinked_folder_on_the_way(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "transcript.md").write_text("secret")
    (root / "library" / "notes" / "item").symlink_to(outside)
    path = root / "library" / "notes" / "item" / "transcript.md"
    with pytest.raises(UnsafeFileError, match="symbolic link"):
        read_repo_file(path, root)
    with pytest.raises(UnsafeFileError, match="outside the repo"):
        read_repo_file(outside / "transcript.md", root)


def test_the_way_to_a_file_is_checked_folder_by_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every folder between the repo and the file is looked at (a link or a file on the way
    is refused, a missing one left to the open); a path outside the repo, one that leaves it
    through '..', or one beside it whose name merely starts like the repo's is refused; a
    relative repo path is checked as the absolute one."""
    root = _repo(tmp_path)
    deep = root / "library" / "notes" / "a" / "b"
    deep.mkdir(parents=True)
    (deep / "c.md").write_text("deep")
    assert read_repo_file(deep / "c.md", root) == b"deep"
    assert read_repo_file(root / "library" / "gone" / "x.md", root, missing_ok=True) is None
    plain = root / "library" / "notes" / "plain"
    plain.write_text("a file")
    with pytest.raises(UnsafeFileError, match=re.escape(f"inside {plain}, which is a file, not")):
        read_repo_file(root / "library" / "notes" / "plain" / "x.md", root)
    (root / "library" / "notes" / "a" / "hop").symlink_to(deep)
    with pytest.raises(UnsafeFileError, match="symbolic link"):
        read_repo_file(root / "library" / "notes" / "a" / "hop" / "c.md", root)
    with pytest.raises(UnsafeFileError, match="leaves the repo"):
        read_repo_file(root / "library" / ".." / ".." / "x.md", root)
    twin = tmp_path / (root.name + "-twin")
    twin.mkdir()
    (twin / "x.md").write_text("beside")
    with pytest.raises(UnsafeFileError, match="outside the repo"):
        read_repo_file(twin / "x.md", root)
    monkeypatch.chdir(tmp_path)
    rel = Path(root.name)
    assert read_repo_file(rel / "library" / "notes" / "a" / "b" / "c.md", rel) == b"deep"
    with pytest.raises(UnsafeFileError, match="symbolic link"):
        read_repo_file(rel / "library" / "notes" / "a" / "hop" / "c.md", rel)
    with pytest.raises(UnsafeFileError, match="leaves the repo"):
        read_repo_file(rel / "library" / ".." / "library" / "notes" / "a" / "b" / "c.md", rel)
    with pytest.raises(UnsafeFileError, match="outside the repo"):
        read_repo_file(rel / "library" / "notes" / "a" / "b" / "c.md", root)  # one relative


def test_refuses_a_fifo_without_blocking(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    fifo = root / "library" / "notes" / "pipe.md"
    os.mkfifo(fifo)
    # No writer ever opens the FIFO: a blocking open or read would hang this test.
    with pytest.raises(UnsafeFileError, match="FIFO"):
        read_repo_file(fifo, root)
    with pytest.raises(UnsafeFileError, match="directory"):
        read_repo_file(root / "library" / "notes", root)


def test_refuses_a_device(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    link = root / "library" / "notes" / "null.md"
    link.symlink_to("/dev/null")
    with pytest.raises(UnsafeFileError):
        read_repo_file(link, root)
    # /dev itself as a "repo": a device file is refused by kind, not only as a link.
    with pytest.raises(UnsafeFileError, match="device"):
        read_repo_file(Path("/dev/null"), Path("/dev"))


@pytest.mark.parametrize(
    "title",
    ["日本語のとても長いタイトル" * 20, "🐝" * 130, "Ünïcödé " * 40, "é" * 300, "a" * 400],
)
def test_folder_names_are_capped_in_bytes(title: str) -> None:
    name = folder_name(title, "abcd1234")
    assert len(name.encode("utf-8")) <= 200
    assert name.endswith(" (abcd1234)")
    name.encode("utf-8").decode("utf-8")  # whole code points only
    assert name.startswith(title.strip()[:3])


def test_truncate_never_splits_a_code_point() -> None:
    text = "aé日🐝"
    for n in range(12):
        cut = truncate_utf8(text, n)
        assert len(cut.encode()) <= n and text.startswith(cut)


def test_scaffold_gitignore_hides_add_scratch_folders(tmp_path: Path) -> None:
    from arkai.ops.init import init_repo

    repo = tmp_path / "kr"
    init_repo(repo, git=True)
    scratch = repo / "library" / "notes" / ".adding-999999-abc"
    scratch.mkdir(parents=True)
    (scratch / "transcript.md").write_text("half written")
    out = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=repo, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert ".adding-" not in out


def test_rows_in_a_file_read_back_by_number(tmp_path: Path) -> None:
    """A RowFile reads exactly the rows asked for (a number, a slice, any array of numbers,
    repeats and order kept) and refuses what it does not hold."""
    import numpy as np

    from arkai.adapters.fs import RowFile, read_rows

    rows = np.arange(70 * 3, dtype=np.float32).reshape(70, 3)
    f = RowFile.written(tmp_path, [rows[:7], rows[7:8], rows[8:]], 70, 3)
    assert f.shape == (70, 3) and len(f) == 70 and f.ndim == 2
    assert f[5].tolist() == rows[5].tolist() and f[-1].tolist() == rows[69].tolist()
    assert f[10:13].tolist() == rows[10:13].tolist() and f[60:99].shape == (10, 3)
    assert f[5:5].shape == (0, 3) and f[np.array([], dtype=np.int64)].shape == (0, 3)
    pick = np.array([69, 3, 3, 4, 5, 40, 0])
    assert f[pick].tolist() == rows[pick].tolist()
    assert f[np.array([[1, 2], [68, 1]])].tolist() == rows[[[1, 2], [68, 1]]].tolist()
    for bad in (70, -71, np.array([0, 70]), np.array([-1]), slice(0, 9, 2), np.array([True])):
        with pytest.raises(IndexError):
            f[bad]
    assert not list(tmp_path.iterdir())  # no name in the folder, ever
    with pytest.raises(ValueError, match="69 rows written, 70 expected"):
        RowFile.written(tmp_path, [rows[:69]], 70, 3)
    with pytest.raises(ValueError, match="not rows of 4"):
        RowFile.written(tmp_path, [rows], 70, 4)
    assert not list(tmp_path.iterdir())
    assert RowFile.written(tmp_path, [], 0, 3)[:].shape == (0, 3)
    short = tmp_path / "short"
    short.write_bytes(rows[:4].tobytes())
    fd = os.open(short, os.O_RDONLY)
    try:
        assert read_rows(fd, 0, 3, [3, 1]).tolist() == rows[[3, 1]].tolist()
        assert read_rows(fd, 12, 3, [0]).tolist() == rows[[1]].tolist()  # after a header
        with pytest.raises(OSError, match="ends before row 4"):
            read_rows(fd, 0, 3, [2, 4])
    finally:
        os.close(fd)


def test_rows_are_read_without_preadv_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where ``os.preadv`` is missing (macOS before 11) the rows are read with ``os.pread``."""
    import numpy as np

    from arkai.adapters.fs import RowFile

    rows = np.arange(40 * 3, dtype=np.float32).reshape(40, 3)
    f = RowFile.written(tmp_path, [rows], 40, 3)
    monkeypatch.delattr(os, "preadv")
    assert f[np.array([39, 0, 5, 6, 7])].tolist() == rows[[39, 0, 5, 6, 7]].tolist()
