"""Chat exports as ZIP archives, read in memory only (nothing is ever extracted to disk).

The whole archive is refused when any member name is unsafe (absolute, a drive letter, a ``..``
component, a NUL) — a well-formed export never has one, so such an archive is not trusted at all.
Only the members that hold conversations are read (see ``detect.is_chat_member``); each must
declare an uncompressed size within the limit, and reading stops at the limit whatever the
declared size says (a ZIP bomb is refused, not inflated).
"""

from __future__ import annotations

import io
import re
import zipfile
import zlib
from pathlib import Path

from arkai.errors import ResourceLimitError, SourceFormatError
from arkai.sources.chats.detect import HEAD_BYTES, detect_zip_names, is_chat_member

MAX_MEMBERS = 200_000
_DRIVE = re.compile(r"^[A-Za-z]:")
_READ_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError)


def unsafe_member(member: str) -> str | None:
    """Why ``member`` is not a safe relative path, or None when it is."""
    path = member.replace("\\", "/")
    if "\x00" in path:
        return "contains a NUL character"
    if path.startswith("/"):
        return "is an absolute path"
    if _DRIVE.match(path):
        return "starts with a drive letter"
    if any(part == ".." for part in path.split("/")):
        return "climbs out of the archive ('..')"
    return None


def _open(name: str, data: bytes) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise SourceFormatError(f"{name}: not a readable ZIP archive ({exc})") from None


def read_chat_members(name: str, data: bytes, *, max_bytes: int) -> list[tuple[str, bytes]]:
    """(member name, bytes) of every conversation file in the ZIP ``data``, in archive order.

    Raises SourceFormatError for a broken archive, an unsafe member name or no conversation
    file, ResourceLimitError when a member (or all of them together) exceeds ``max_bytes``.
    """
    with _open(name, data) as zf:
        infos = zf.infolist()
        if len(infos) > MAX_MEMBERS:
            raise ResourceLimitError(
                f"{name}: ZIP archive lists {len(infos)} members, over the {MAX_MEMBERS} limit"
            )
        for info in infos:
            why = unsafe_member(info.filename)
            if why is not None:
                raise SourceFormatError(
                    f"{name}: ZIP member {info.filename!r} {why}; refusing the archive",
                    hint="a genuine chat export never has such names",
                )
        wanted = [i for i in infos if not i.is_dir() and is_chat_member(i.filename)]
        if not wanted:
            raise SourceFormatError(
                f"{name}: ZIP archive holds no conversations.json (ChatGPT, Claude) "
                "and no Gemini activity JSON (Takeout/My Activity/Gemini Apps/*.json)"
            )
        out: list[tuple[str, bytes]] = []
        total = 0
        for info in wanted:
            declared = info.file_size
            if declared > max_bytes or total + declared > max_bytes:
                raise ResourceLimitError(
                    f"{name}: ZIP member {info.filename!r} declares {declared / 1e6:.1f} MB "
                    f"uncompressed, over the {max_bytes / 1e6:.0f} MB limit; not inflated",
                    hint="raise add.max_file_mb in params.yaml if this is intended",
                )
            if info.flag_bits & 0x1:
                raise SourceFormatError(f"{name}: ZIP member {info.filename!r} is encrypted")
            try:
                with zf.open(info) as fh:
                    blob = fh.read(max_bytes - total + 1)
            except _READ_ERRORS as exc:
                raise SourceFormatError(
                    f"{name}: ZIP member {info.filename!r} cannot be read ({exc})"
                ) from None
            total += len(blob)
            if total > max_bytes:
                raise ResourceLimitError(
                    f"{name}: ZIP member {info.filename!r} inflates past the "
                    f"{max_bytes / 1e6:.0f} MB limit; refused"
                )
            out.append((info.filename, blob))
        return out


def detect_zip_file(path: Path) -> str | None:
    """Platform of a ZIP export on disk from its central directory (None when not one).
    Reads at most the first 64 KiB of one member; never raises."""
    try:
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()[:MAX_MEMBERS]
            by_name = {i.filename: i for i in infos}

            def head_of(member: str) -> bytes:
                try:
                    with zf.open(by_name[member]) as fh:
                        return fh.read(HEAD_BYTES)
                except (*_READ_ERRORS, KeyError, OSError):
                    return b""

            return detect_zip_names([i.filename for i in infos], head_of)
    except (*_READ_ERRORS, OSError, ValueError):
        return None
