"""Folder-name safety for item titles (DESIGN §3).

Titles come from metadata a stranger wrote (video titles, file names, chat titles). The folder
name ``Title (source_id)`` must stay inside ``library/`` on every OS and be readable.
"""

from __future__ import annotations

import re
import unicodedata

MAX_TITLE_CHARS = 120
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


def folder_name(title: str, source_id: str) -> str:
    """``Title (source_id)`` with a sanitised title."""
    return f"{sanitize_title(title)} ({source_id})"
