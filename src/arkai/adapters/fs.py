"""Filesystem primitives: atomic writes and careful reads of user-given files."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from arkai.errors import InvalidInputError, ResourceLimitError, SourceFormatError


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temp file in the same folder and ``os.replace``.

    A crash leaves either the old file or the new one, never a torn one.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:40]}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    """UTF-8 text with ``\\n`` line ends, written atomically."""
    atomic_write_bytes(path, text.encode("utf-8"))


def write_if_changed(path: Path, data: bytes) -> bool:
    """Atomically write ``data`` unless ``path`` already holds exactly it (keeps mtime stable).

    Returns True when the file was written.
    """
    try:
        if path.is_file() and path.stat().st_size == len(data) and path.read_bytes() == data:
            return False
    except OSError:
        pass
    atomic_write_bytes(path, data)
    return True


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
