"""Folder-name safety for item titles (DESIGN §3).

Titles come from metadata a stranger wrote (video titles, file names, chat titles). The folder
name ``Title (source_id)`` must stay inside ``library/`` on every OS and be readable.
"""

from __future__ import annotations

import re
import unicodedata

MAX_TITLE_CHARS = 120
#: Folder names are capped in UTF-8 bytes: file systems limit a name to 255 bytes (not
#: characters), and a 120-character CJK or emoji title is 360–480 bytes. The margin leaves room
#: for encrypted home folders (eCryptfs allows 143) only partly; 200 covers the common ones.
MAX_FOLDER_BYTES = 200
_FORBIDDEN = re.compile(r'[<>:"/\\|?*\x00-\x1f\x7f]')
_WS = re.compile(r"\s+")
_RESERVED = {
    "con", "prn", "aux", "nul",
    *(f"com{i}" for i in range(1, 10)),
    *(f"lpt{i}" for i in range(1, 10)),
}  # fmt: skip


def sanitize_title(title: str, *, max_chars: int = MAX_TITLE_CHARS) -> str:
    """A title safe to use as (part of) a folder name; ``Untitled`` when nothing is left.

    Removes path separators, ``..``, control and format characters, characters Windows forbids,
    leading/trailing dots and spaces; collapses whitespace; avoids reserved device names; caps the
    length at ``max_chars`` code points (cut at a word boundary when one is near).
    """
    text = unicodedata.normalize("NFC", title)
    text = "".join(" " if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") else c for c in text)
    text = _FORBIDDEN.sub(" ", text)
    text = text.replace("..", " ")
    text = _WS.sub(" ", text).strip(" .")
    if len(text) > max_chars:
        cut = text[:max_chars]
        space = cut.rfind(" ")
        text = (cut[:space] if space > max_chars * 2 // 3 else cut).rstrip(" .")
    if not text:
        return "Untitled"
    if text.split(".")[0].lower() in _RESERVED:
        text = f"_{text}"
    return text


def truncate_utf8(text: str, max_bytes: int) -> str:
    """The longest prefix of ``text`` whose UTF-8 encoding fits ``max_bytes``; never splits a
    code point."""
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    return data[: max(0, max_bytes)].decode("utf-8", errors="ignore")


def folder_name(title: str, source_id: str, *, max_bytes: int = MAX_FOLDER_BYTES) -> str:
    """``Title (source_id)`` with a sanitised title, at most ``max_bytes`` UTF-8 bytes in all
    (the title is shortened — at a word boundary when one is near — never the source ID)."""
    suffix = f" ({source_id})"
    budget = max_bytes - len(suffix.encode("utf-8"))
    clean = sanitize_title(title)
    if len(clean.encode("utf-8")) > budget:
        cut = truncate_utf8(clean, budget)
        space = cut.rfind(" ")
        cut = (cut[:space] if space > len(cut) * 2 // 3 else cut).rstrip(" .")
        clean = cut or "Untitled"
    return f"{clean}{suffix}"
