"""Which platform wrote a chat export, told from its first bytes (routing) or its parsed JSON.

``detect_chat_export`` never parses the whole file: it looks for the keys that only one platform
writes in the first 64 KiB (``"mapping"``/``"current_node"`` → ChatGPT, ``"chat_messages"`` →
Claude, ``"safeHtmlItem"`` or a ``"header"``/``"products"`` naming Gemini → Gemini; the earliest
key wins). For a ZIP it reads the member names from the local file headers inside those bytes
and sniffs the first bytes of a ``conversations.json`` member; ``detect_zip_names`` does the same
from a full member list (the central directory).
"""

from __future__ import annotations

import re
import struct
import zlib
from collections.abc import Callable, Iterable
from typing import Any

HEAD_BYTES = 65536
ZIP_MAGIC = b"PK\x03\x04"
EMPTY_ZIP_MAGIC = b"PK\x05\x06"

_SNIFF: tuple[tuple[re.Pattern[bytes], str], ...] = (
    (re.compile(rb'"(?:mapping|current_node)"\s*:'), "chatgpt"),
    (re.compile(rb'"chat_messages"\s*:'), "claude"),
    (re.compile(rb'"safeHtmlItem"\s*:'), "gemini"),
    (re.compile(rb'"(?:header|products)"\s*:\s*\[?\s*"[^"\\]{0,80}(?:Gemini|Bard)'), "gemini"),
)
_LOCAL_HEADER = struct.Struct("<4sHHHHHIIIHH")


def detect_chat_export(name: str, head: bytes) -> str | None:
    """``"chatgpt"``, ``"claude"`` or ``"gemini"`` when ``head`` (a file's first bytes) looks like
    that platform's export (JSON or ZIP), else None. ``name`` is only used for ZIP member hints."""
    if head.startswith(ZIP_MAGIC):
        members = _local_members(head)
        return detect_zip_names([m[0] for m in members], lambda n: dict(members).get(n, b""))
    return sniff_json(head)


def sniff_json(head: bytes) -> str | None:
    """Platform of a JSON document from its first bytes, or None."""
    start = head[:HEAD_BYTES].removeprefix(b"\xef\xbb\xbf").lstrip()
    if not start.startswith((b"[", b"{")):
        return None
    best: tuple[int, str] | None = None
    for pattern, platform in _SNIFF:
        found = pattern.search(start)
        if found and (best is None or found.start() < best[0]):
            best = (found.start(), platform)
    return best[1] if best else None


def detect_value(value: Any) -> str | None:
    """Platform of parsed export JSON (a list of conversations or one object), or None."""
    objs = value if isinstance(value, list) else [value]
    for obj in objs:
        if not isinstance(obj, dict):
            continue
        if "mapping" in obj or "current_node" in obj:
            return "chatgpt"
        if "chat_messages" in obj:
            return "claude"
        if "safeHtmlItem" in obj or ("header" in obj and ("time" in obj or "title" in obj)):
            return "gemini"
    return None


def is_chat_member(member: str) -> bool:
    """A ZIP member worth reading: ``conversations.json`` anywhere, or a ``.json`` in a folder
    named after Gemini/Bard (Takeout: ``Takeout/My Activity/Gemini Apps/MyActivity.json``)."""
    path = member.replace("\\", "/")
    if path.endswith("/"):
        return False
    folder, _, base = path.rpartition("/")
    if base.lower() == "conversations.json":
        return True
    return base.lower().endswith(".json") and bool(re.search(r"gemini|bard", folder, re.I))


def detect_zip_names(names: Iterable[str], head_of: Callable[[str], bytes]) -> str | None:
    """Platform of a ZIP export from its member names; ``head_of(name)`` gives a member's first
    bytes (b"" when unknown). A ``conversations.json`` that cannot be sniffed counts as ChatGPT
    unless a sibling names Claude (``users.json``/``projects.json``)."""
    listed = list(names)
    bases = {n.replace("\\", "/").rpartition("/")[2].lower() for n in listed}
    for member in listed:
        if not is_chat_member(member):
            continue
        if member.replace("\\", "/").rpartition("/")[2].lower() != "conversations.json":
            return "gemini"
        sniffed = sniff_json(head_of(member))
        if sniffed:
            return sniffed
        return "claude" if {"users.json", "projects.json"} & bases else "chatgpt"
    return None


def _local_members(head: bytes) -> list[tuple[str, bytes]]:
    """(name, first bytes of data) of the ZIP local file headers that lie inside ``head``."""
    out: list[tuple[str, bytes]] = []
    pos = 0
    while pos + _LOCAL_HEADER.size <= len(head) and head[pos : pos + 4] == ZIP_MAGIC:
        fields = _LOCAL_HEADER.unpack_from(head, pos)
        flags, method, csize, nlen, xlen = fields[2], fields[3], fields[7], fields[9], fields[10]
        raw_name = head[pos + 30 : pos + 30 + nlen]
        name = raw_name.decode("utf-8" if flags & 0x800 else "cp437", "replace")
        start = pos + 30 + nlen + xlen
        data = head[start : start + csize] if csize else head[start:]
        out.append((name, _inflate_head(method, data)))
        if csize in (0, 0xFFFFFFFF):
            break  # sizes in a trailing data descriptor / ZIP64: cannot walk further
        pos = start + csize
    return out


def _inflate_head(method: int, data: bytes) -> bytes:
    if method == 0:
        return data[:HEAD_BYTES]
    if method == 8:
        try:
            return zlib.decompressobj(-15).decompress(data, HEAD_BYTES)
        except zlib.error:
            return b""
    return b""
