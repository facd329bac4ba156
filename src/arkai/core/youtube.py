"""YouTube video URLs: every form (``watch?v=``, ``youtu.be/``, ``shorts/``, ``embed/``,
``live/``, ``m.``/``music.`` hosts) → the 11-character video ID. Pure: no network."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

__all__ = ["video_id"]

_ID_RE = re.compile(r"[A-Za-z0-9_-]{11}")
_WATCH_HOSTS = frozenset(
    {
        "youtube.com",
        "www.youtube.com",
        "m.youtube.com",
        "music.youtube.com",
        "youtube-nocookie.com",
        "www.youtube-nocookie.com",
    }
)
_SHORT_HOSTS = frozenset({"youtu.be", "www.youtu.be"})
# Path forms /<kind>/<id>.
_PATH_KINDS = frozenset({"shorts", "embed", "live", "v", "e"})
# Eleven-character path words that are not video IDs (/embed/videoseries?list=…).
_NOT_IDS = frozenset({"videoseries", "live_stream"})


def video_id(url: str) -> str | None:
    """The 11-character video ID in any YouTube video URL form, or None for anything else."""
    text = url.strip()
    if not text or any(ch.isspace() for ch in text):
        return None
    if "://" not in text:
        text = "https:" + text if text.startswith("//") else "https://" + text
    try:
        parts = urlsplit(text)
        host = (parts.hostname or "").lower().rstrip(".")
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https"):
        return None
    segments = [s for s in parts.path.split("/") if s]
    candidate: str | None = None
    if host in _SHORT_HOSTS:
        candidate = segments[0] if len(segments) == 1 else None
    elif host in _WATCH_HOSTS:
        if len(segments) == 1 and segments[0].lower() == "watch":
            values = parse_qs(parts.query).get("v")
            candidate = values[0].strip() if values else None
        elif len(segments) == 2 and segments[0].lower() in _PATH_KINDS:
            candidate = segments[1]
    if candidate is None or candidate in _NOT_IDS or not _ID_RE.fullmatch(candidate):
        return None
    return candidate
