"""Filesystem primitives: the one atomic writer, and the one careful reader of repo files.

Every file arkai writes goes through :func:`atomic_write` (temp file in the same folder, then
``os.replace``), so a crash leaves the old file or the new one, never a torn one. Every file
arkai reads from the knowledge repo (library items, extraction outputs, patterns, ``params.yaml``
and the files it names, ``review.yaml``) goes through :func:`read_repo_file`, which opens only
regular files whose every path component below the repo root is a real folder — no symbolic
links, FIFOs, devices or sockets — and never blocks on a FIFO.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import hashlib
import os
import re
import stat
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import yaml

from arkai.errors import (
    InvalidInputError,
    LibraryError,
    ResourceLimitError,
    SourceFormatError,
    UnsafeFileError,
)


def printable_path(path: str) -> str:
    """``path`` as messages and logs show it: a name's bytes that are not UTF-8 (held by Python
    as lone surrogates, which no UTF-8 file or terminal takes) escaped as ``\\xff``; the same
    string when it has none."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


#: Unnamed temporary files of a stage's run (rows, spilled entries) go here, under the
#: repository's root: on the repository's disk, not a RAM-backed ``/tmp``.
TEMP_DIR = Path(".arkai") / "tmp"


def atomic_write(
    path: Path,
    write: Callable[[BinaryIO], object],
    *,
    fsync: bool = True,
    mode: int = 0o644,
    unless: Callable[[Path], bool] | None = None,
    rename_to: Callable[[], Path] | None = None,
) -> bool:
    """Create or replace ``path`` with what ``write`` writes to a binary file object.

    The data goes to a temp file beside ``path`` (same filesystem), is flushed (and fsynced
    unless ``fsync=False``, for derived data), then renamed over ``path``. On any error the temp
    file is removed and ``path`` is left as it was; so it is when ``unless`` returns True for
    the flushed temp file. Returns whether ``path`` was replaced.

    ``rename_to``: the file's name is decided once its bytes are written (a part named by its
    digest): the temp file is made beside ``path`` and renamed to what this returns.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    # Named with this process's ID and where that ID means this process (writer_tag): one a
    # killed process left is found (sweep_temp).
    fd, tmp = tempfile.mkstemp(
        prefix=f".{path.name[:40]}.{os.getpid()}.{writer_tag()}-", suffix=".tmp", dir=path.parent
    )
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            if unless is not None and unless(Path(tmp)):
                os.unlink(tmp)
                return False
            if fsync:
                os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path if rename_to is None else rename_to())
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return True


#: A temp file of :func:`atomic_write`: ``.<name>.<writer's process ID>.<its tag>-<random>.tmp``
#: (:func:`writer_tag`; ``mkstemp``'s eight random characters). Files of earlier versions have
#: no tag: :func:`sweep_temp` takes those only where asked (``untagged``), in folders only
#: arkai writes — a file a person named ``.backup.2024-draft1.tmp`` is not one.
_TEMP = re.compile(r"\..+\.([0-9]+)(?:\.([0-9a-f]{8}))?-[a-z0-9_]{8}\.tmp")

#: A temp file whose writer ran on another machine or in another process namespace (another
#: tag: its process ID says nothing here) is removed once it has been left this long.
FOREIGN_TEMP_AGE_S = 24 * 3600


@functools.cache
def writer_tag() -> str:
    """Eight hex digits naming where this process's ID is its own: this boot of this machine
    (``boot_id``, which containers share with their host), this process namespace (two
    containers, or a container and its host, writing one bind-mounted repository number
    their processes apart) and the host name. A temp file with another tag is never judged by
    the process IDs here (:func:`sweep_temp`)."""
    parts = [os.uname().nodename]
    with contextlib.suppress(OSError):
        parts.append(Path("/proc/sys/kernel/random/boot_id").read_text("ascii").strip())
    with contextlib.suppress(OSError):
        parts.append(str(os.stat("/proc/self/ns/pid").st_ino))
    return hashlib.sha256("\0".join(parts).encode("utf-8", "replace")).hexdigest()[:8]


def sweep_temp(entry: os.DirEntry[str], *, untagged: bool = False) -> bool:
    """Remove ``entry`` when it is a temp file of :func:`atomic_write` whose writer no longer
    runs: a process killed while writing leaves its temp file, which nothing else removes —
    DVC and the manifests pass over ``.*.tmp``, and git lists one beside an item's file as a
    new file of the library. A file whose writer's process ID is in use here (the writer, or a
    process given its ID since) is left; one written elsewhere (another tag) is left until it
    has not been written for :data:`FOREIGN_TEMP_AGE_S`; one without a tag (an earlier
    version's) only with ``untagged``. Links and folders are never removed. Returns whether
    it was."""
    found = _TEMP.fullmatch(entry.name)
    if found is None or not entry.is_file(follow_symlinks=False):
        return False
    tag = found[2]
    if tag is None and not untagged:
        return False
    if tag is not None and tag != writer_tag():
        try:
            age = time.time() - entry.stat(follow_symlinks=False).st_mtime
        except OSError:
            return False
        if age < FOREIGN_TEMP_AGE_S:
            return False
    elif _running(int(found[1])):
        return False
    try:
        os.unlink(entry.path)
    except FileNotFoundError:
        return False
    return True


def sweep_temps(folder: Path, *, recursive: bool = False) -> int:
    """:func:`sweep_temp` over ``folder`` (and the folders under it, with ``recursive``;
    links not followed): the index stage's folders, whose files no manifest walk lists (the
    index stage's ``topics.json`` temp file is 29 MB at 10,000 items) and which only arkai
    writes (so an earlier version's untagged temp files go too). Returns how many files were
    removed."""
    removed = 0
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return 0
    for entry in entries:
        if recursive and entry.is_dir(follow_symlinks=False):
            removed += sweep_temps(Path(entry.path), recursive=True)
        elif sweep_temp(entry, untagged=True):
            removed += 1
    return removed


def _running(pid: int) -> bool:
    """Whether a process with this ID exists (one not reaped yet included)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # (another user's, or not a process ID: left alone)
    return True


def read_rows(fd: int, offset: int, width: int, rows: Any) -> Any:
    """Rows ``rows`` (numbers in any order, repeats allowed) of a file of little-endian float32
    rows of ``width`` values that start at byte ``offset``, read with ``os.preadv`` straight
    into the array returned, one read per run of consecutive numbers: the process holds the
    rows asked for and nothing else (a memory-mapped file maps a whole folio, up to megabytes,
    for every row touched at random; issue 17). OSError when the file is shorter."""
    import numpy as np

    idx = np.asarray(rows, dtype=np.int64).reshape(-1)
    if not idx.size:
        return np.empty((0, width), dtype=np.float32)
    if int(idx.min()) < 0:
        raise IndexError("a negative row number")
    uniq, inverse = np.unique(idx, return_inverse=True)
    got = np.empty((len(uniq), width), dtype="<f4")
    size = width * 4
    cuts = (np.flatnonzero(np.diff(uniq) != 1) + 1).tolist()
    for a, b in zip([0, *cuts], [*cuts, len(uniq)], strict=True):
        view = got[a:b].reshape(-1).data.cast("B")
        if not read_into(fd, view, offset + int(uniq[a]) * size):
            raise OSError(errno.EIO, f"a file of rows ends before row {int(uniq[b - 1])}")
    return got if len(uniq) == len(idx) and bool((uniq == idx).all()) else got[inverse]


def byte_view(arr: Any) -> memoryview:
    """The bytes of a C-contiguous array, without a copy (an empty array's: none; a
    memoryview of zero items cannot be cast)."""
    return arr.reshape(-1).data.cast("B") if arr.size else memoryview(b"")


def read_array(fd: int, shape: Any, dtype: Any, offset: int, what: str) -> Any:
    """A new array of ``shape`` and ``dtype`` holding the file's bytes from ``offset``
    (:func:`read_into`); OSError naming ``what`` when the file ends first (it was cut short
    since it was opened)."""
    import numpy as np

    arr = np.empty(shape, dtype=dtype)
    if not read_into(fd, byte_view(arr), offset):
        raise OSError(errno.EIO, f"{what}: the file ends before byte {offset + arr.nbytes}")
    return arr


def read_into(fd: int, into: memoryview, offset: int) -> bool:
    """Fill ``into`` with the file's bytes from ``offset`` (``pread``: the file position is
    not used); False when the file ends first."""
    done = 0
    while done < len(into):
        n = _read_at(fd, into[done:], offset + done)
        if n <= 0:
            return False
        done += n
    return True


def _read_at(fd: int, into: memoryview, offset: int) -> int:
    """``os.preadv`` into ``into`` (macOS before 11 has only ``os.pread``: then a copy)."""
    if hasattr(os, "preadv"):
        return os.preadv(fd, [into], offset)
    data = os.pread(fd, len(into), offset)
    into[: len(data)] = data
    return len(data)


class ReadRows:
    """Float32 rows read on demand: ``rows[i]`` (one row), ``rows[a:b]`` and ``rows[array of
    numbers]`` return arrays read for the call (:meth:`_read`), so a process holds only what
    it asked for, never every row."""

    ndim = 2
    shape: tuple[int, int]

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, key: Any) -> Any:
        import numpy as np

        count = self.shape[0]
        if isinstance(key, int | np.integer):
            i = int(key) + count if int(key) < 0 else int(key)
            if not 0 <= i < count:
                raise IndexError(f"row {int(key)} of {count}")
            return self._read(np.array([i], dtype=np.int64))[0]
        if isinstance(key, slice):
            start, stop, step = key.indices(count)
            if step != 1:
                raise IndexError("a slice of rows with a step")
            return self._read(np.arange(start, max(start, stop)))
        idx = np.asarray(key)
        if idx.dtype.kind not in "iu":
            raise IndexError(f"rows by {idx.dtype} index")
        if idx.size and (int(idx.max()) >= count or int(idx.min()) < 0):
            raise IndexError(f"rows {int(idx.min())}–{int(idx.max())} of {count}")
        return self._read(idx.reshape(-1)).reshape((*idx.shape, self.shape[1]))

    def _read(self, idx: Any) -> Any:
        """The rows of ``idx`` (a 1-D array of row numbers, each in range), in its order."""
        raise NotImplementedError


class Reindexed(ReadRows):
    """The rows of another source in the order of ``at`` (its row numbers), read from it when
    indexed: ``take`` reads the rows of an array of its numbers (in that order, repeats kept).
    Nothing is copied or held but the numbers: the beliefs' vectors from the statements', the
    statements' in episode order from the vector store (issue 17: copied, ≈ 120 MB a run at
    10,000 items)."""

    def __init__(self, take: Callable[[Any], Any], at: Any, width: int) -> None:
        import numpy as np

        self._take, self._at = take, np.asarray(at, dtype=np.int64).reshape(-1)
        self.shape = (len(self._at), width)

    def _read(self, idx: Any) -> Any:
        import numpy as np

        if not len(idx):
            return np.zeros((0, self.shape[1]), dtype=np.float32)
        return np.asarray(self._take(self._at[idx]), dtype=np.float32)


class RowFile(ReadRows):
    """Float32 rows of ``width`` values in an unnamed temporary file, read on demand with
    :func:`read_rows` (:class:`ReadRows`). Made by :meth:`written`."""

    def __init__(self, fh: BinaryIO, count: int, width: int) -> None:
        self._fh = fh
        self.shape = (count, width)

    @classmethod
    def written(cls, folder: Path, blocks: Iterable[Any], count: int, width: int) -> RowFile:
        """The rows of ``blocks`` (arrays of ``width`` columns, in order) in a file in
        ``folder`` that no other process sees and that goes with the object. ValueError when
        the blocks do not hold exactly ``count`` rows."""
        import numpy as np

        folder.mkdir(parents=True, exist_ok=True)
        fh = tempfile.TemporaryFile(dir=folder)  # noqa: SIM115 (kept open by the object)
        try:
            got = 0
            for block in blocks:
                arr = np.ascontiguousarray(block, dtype="<f4")
                if arr.ndim != 2 or arr.shape[1] != width:
                    raise ValueError(f"a block of shape {arr.shape}, not rows of {width}")
                fh.write(arr.reshape(-1).data.cast("B"))
                got += len(arr)
            if got != count:
                raise ValueError(f"{got} rows written, {count} expected")
            fh.flush()
        except BaseException:
            fh.close()
            raise
        return cls(fh, count, width)

    def _read(self, idx: Any) -> Any:
        return read_rows(self._fh.fileno(), 0, self.shape[1], idx)


def atomic_write_bytes(path: Path, data: bytes, *, fsync: bool = True) -> None:
    """Write ``data`` to ``path`` atomically (see :func:`atomic_write`)."""
    atomic_write(path, lambda fh: fh.write(data), fsync=fsync)


def atomic_write_text(path: Path, text: str, *, fsync: bool = True) -> None:
    """UTF-8 text with ``\\n`` line ends, written atomically."""
    atomic_write_bytes(path, text.encode("utf-8"), fsync=fsync)


def fed(chunks: Iterable[bytes], digest: Any) -> Iterator[bytes]:
    """``chunks``, each fed to ``digest`` (a hashlib object) as it passes: the digest of what
    :func:`write_chunks_if_changed` wrote (or found there already) without reading it back."""
    for chunk in chunks:
        digest.update(chunk)
        yield chunk


def write_chunks_if_changed(
    path: Path, chunks: Iterable[bytes | memoryview], *, fsync: bool = True
) -> bool:
    """:func:`write_if_changed` for data made in pieces, never held whole: they are written
    to the temp file, which is dropped when ``path`` already holds exactly its bytes."""

    def write(fh: BinaryIO) -> None:
        for chunk in chunks:
            fh.write(chunk)

    return atomic_write(path, write, fsync=fsync, unless=lambda tmp: same_bytes(tmp, path))


def same_bytes(a: Path, b: Path, block: int = 1 << 20) -> bool:
    """Whether ``b`` is a regular file (not followed through a link) of exactly ``a``'s bytes,
    compared a block at a time."""
    try:
        if not stat.S_ISREG(os.lstat(b).st_mode) or a.stat().st_size != b.stat().st_size:
            return False
        with a.open("rb") as fa, b.open("rb") as fb:
            while True:
                x, y = fa.read(block), fb.read(block)
                if x != y:
                    return False
                if not x:
                    return True
    except OSError:
        return False


def write_if_changed(path: Path, data: bytes, *, fsync: bool = True) -> bool:
    """Atomically write ``data`` unless ``path`` already holds exactly it (keeps mtime stable).

    Returns True when the file was written.
    """
    if holds_bytes(path, data):
        return False
    atomic_write_bytes(path, data, fsync=fsync)
    return True


def holds_bytes(path: Path, data: bytes, block: int = 1 << 20) -> bool:
    """Whether ``path`` is a regular file (not followed through a link) of exactly ``data``;
    compared a block at a time (the file is never a second copy of ``data`` in memory)."""
    try:
        st = os.lstat(path)
        if not (stat.S_ISREG(st.st_mode) and st.st_size == len(data)):
            return False
        view = memoryview(data)
        with path.open("rb") as fh:
            for start in range(0, len(data), block):
                if fh.read(block) != view[start : start + block]:
                    return False
            return fh.read(1) == b""
    except OSError:
        return False


def append_to_loaded(path: Path, loaded: int, size: int, data: bytes) -> bool:
    """Append ``data`` to ``path`` when it is still the file open as ``loaded`` (a descriptor:
    the same device and inode) and still ``size`` bytes long, checked and written under an
    exclusive ``flock`` — another process appending the same way finds the file grown, never
    writes between this check and this write; False, having written nothing, otherwise
    (replaced or grown since it was read: the caller writes it whole). A write that fails part
    way (a full disk) is cut back to ``size`` before the error is raised; a process killed
    mid-write can still leave a torn tail, which the formats that append detect."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        mine, there = os.fstat(loaded), os.fstat(fd)
        if (mine.st_dev, mine.st_ino) != (there.st_dev, there.st_ino) or there.st_size != size:
            return False
        _write_all(fd, data, size)
    finally:
        os.close(fd)
    return True


def _write_all(fd: int, data: bytes, start: int, *, fsync: bool = False) -> None:
    """Write all of ``data`` to ``fd`` (opened to append; ``start`` bytes long), fsynced when
    asked; on any failure (a full disk, an interrupt) the file is cut back to ``start`` and
    the error raised: one record whole or none of it."""
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if fsync:
            os.fsync(fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, start)
        raise


def append_bytes(path: Path, data: bytes, *, fsync: bool = True) -> None:
    """Append ``data`` to ``path`` (created if missing) as one write, all or nothing.

    The file is opened ``O_APPEND`` (never through a symbolic link), so concurrent appenders
    never interleave inside one record on a local filesystem; if the write fails part-way (disk
    full), the file is cut back to its old length, so a crash or an error never leaves a torn
    record behind — the append-only counterpart of :func:`atomic_write`.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0), 0o644)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK):
            raise _refuse(path, "a symbolic link") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _refuse(path, _kind(st.st_mode))
        _write_all(fd, data, st.st_size, fsync=fsync)
    finally:
        os.close(fd)


# -- reading files inside the knowledge repo ------------------------------------------------


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device file"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _refuse(path: Path, what: str) -> UnsafeFileError:
    return UnsafeFileError(
        f"{path}: is {what}; arkai reads only regular files inside the repo",
        hint="replace it with a regular file (copy the content in) or remove it",
    )


def check_inside(path: Path, root: Path) -> None:
    """Refuse ``path`` unless it lies under ``root`` through real folders only.

    Each folder between ``root`` and ``path`` is checked with ``lstat``: a symbolic link or a
    non-folder on the way raises :class:`UnsafeFileError`. Missing components are not an error
    here (the caller's open reports them).
    """
    # On the paths' strings (every stage checks each item's files: pathlib's objects cost
    # more than the lstat calls); a Path's string is already normalised (no "//", no ".").
    top, full = os.fspath(root), os.fspath(path)
    if full == top:
        return
    if not os.path.isabs(top) and not os.path.isabs(full):
        # Both relative: as the same paths under the working folder (joined, not normalised,
        # so a '..' stays to be refused below).
        here = Path.cwd()
        top, full = os.fspath(here / top), os.fspath(here / full)
    prefix = top if top.endswith(os.sep) else top + os.sep
    if not full.startswith(prefix):
        raise UnsafeFileError(f"{path}: lies outside the repo {root}; not read")
    parts = full[len(prefix) :].split(os.sep)
    if ".." in parts:
        raise UnsafeFileError(f"{path}: leaves the repo through '..'; not read")
    cur = prefix[:-1] if len(prefix) > 1 else prefix
    for part in parts[:-1]:
        cur = cur + os.sep + part if cur != os.sep else os.sep + part
        try:
            st = os.lstat(cur)
        except FileNotFoundError:
            return
        if not stat.S_ISDIR(st.st_mode):
            what = "a file, not a folder" if stat.S_ISREG(st.st_mode) else _kind(st.st_mode)
            raise _refuse(path, f"inside {Path(cur)}, which is {what}")


def read_repo_file(path: Path, root: Path, *, missing_ok: bool = False) -> bytes | None:
    """The bytes of a regular file inside the repo ``root``; ``None`` for a missing file when
    ``missing_ok`` (else :class:`FileNotFoundError`).

    Refuses (with :class:`UnsafeFileError` naming the file) symbolic links — the file itself or
    any folder on its way below ``root`` —, FIFOs, devices, sockets and folders. The file is
    checked with ``lstat`` before it is opened, then opened with ``O_NOFOLLOW | O_NONBLOCK`` and
    checked again, so a swapped-in link or FIFO is refused too and no read ever blocks.
    """
    try:
        fh = open_repo_file(path, root)
    except FileNotFoundError:
        if missing_ok:
            return None
        raise
    with fh:
        return fh.read()


def open_repo_file(path: Path, root: Path) -> BinaryIO:
    """:func:`read_repo_file`'s checks, the file left open for reading (binary; the caller
    closes it): for a file read a line or a block at a time rather than whole. A missing file
    is :class:`FileNotFoundError`."""
    check_inside(path, root)
    st = os.lstat(path)
    if not stat.S_ISREG(st.st_mode):
        raise _refuse(path, _kind(st.st_mode))
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK):
            raise _refuse(path, "a symbolic link") from None
        raise
    fh = os.fdopen(fd, "rb")
    try:
        now = os.fstat(fh.fileno())
        if not stat.S_ISREG(now.st_mode) or (now.st_ino, now.st_dev) != (st.st_ino, st.st_dev):
            raise _refuse(path, _kind(now.st_mode))
    except BaseException:
        fh.close()
        raise
    return fh


def read_repo_text(path: Path, root: Path, *, missing_ok: bool = False) -> str | None:
    """:func:`read_repo_file` decoded as UTF-8 (a leading BOM dropped); a decoding error is an
    :class:`InvalidInputError` naming the file."""
    data = read_repo_file(path, root, missing_ok=missing_ok)
    if data is None:
        return None
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(
            f"{path}: not valid UTF-8 ({exc.reason} at byte {exc.start})"
        ) from None


def parse_yaml(data: bytes, path: Path) -> Any:
    """The YAML document in ``data`` (read from ``path``); bytes that are not UTF-8 YAML are a
    :class:`LibraryError` naming the file, on one line."""
    try:
        return yaml.safe_load(data.decode("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise LibraryError(f"{path}: not valid YAML ({' '.join(str(exc).split())})") from None


def read_input_file(path: Path, *, max_bytes: int) -> bytes:
    """Read a file the user named, refusing what cannot be a source.

    Raises :class:`InvalidInputError` for a missing path, a directory, a symlink or a special
    file, :class:`ResourceLimitError` above ``max_bytes`` (checked before reading), and
    :class:`SourceFormatError` for an empty file. Every message starts with the path.
    """
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise InvalidInputError(f"{path}: no such file") from None
    except OSError as exc:
        raise InvalidInputError(f"{path}: cannot be read ({exc.strerror})") from None
    if stat.S_ISLNK(st.st_mode):
        raise InvalidInputError(
            f"{path}: is a symbolic link; arkai reads only regular files",
            hint="pass the link's target instead",
        )
    if stat.S_ISDIR(st.st_mode):
        raise InvalidInputError(f"{path}: is a directory, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise InvalidInputError(f"{path}: is not a regular file")
    if st.st_size > max_bytes:
        raise ResourceLimitError(
            f"{path}: file is {st.st_size / 1e6:.1f} MB, over the {max_bytes / 1e6:.0f} MB limit",
            hint="raise add.max_file_mb in params.yaml if this is intended",
        )
    if st.st_size == 0:
        raise SourceFormatError(f"{path}: file is empty")
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InvalidInputError(f"{path}: cannot be read ({exc.strerror})") from None
