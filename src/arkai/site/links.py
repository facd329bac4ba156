"""Where pages live in the build folder, the URLs MkDocs gives them, and links between them.

Pages are written as raw HTML (see :mod:`arkai.core.escape`), which MkDocs does not rewrite,
so links are computed here the way MkDocs would: ``a/b.md`` is served at ``a/b/`` with
``use_directory_urls`` (the default) and at ``a/b.html`` without it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from arkai.core.escape import safe_url, slugify
from arkai.core.youtube import video_id

HOME = "index.md"
LIBRARY = "library/index.md"
LIBRARY_DATES = "library/dates.md"
TAGS = "tags/index.md"
ENTITIES = "entities/index.md"
TOPICS = "topics/index.md"
VALIDATION = "validation.md"
BELIEFS = "beliefs.md"

_SAFE_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_MEDIA_EXT = (".mp3", ".m4a", ".mp4", ".ogg", ".oga", ".opus", ".wav", ".webm", ".aac", ".flac")


def page_id(content_id: str) -> str:
    """The file-name part for an item's pages: its content ID when that is a safe token."""
    return content_id if _SAFE_ID.match(content_id) else slugify(content_id)


def item_page(content_id: str) -> str:
    return f"items/{page_id(content_id)}.md"


#: The folder of the transcript pages.
TRANSCRIPTS = "transcripts/"


def transcript_page(content_id: str) -> str:
    return f"{TRANSCRIPTS}{page_id(content_id)}.md"


def is_transcript(src: str) -> bool:
    """Whether the page (its source path) is a transcript page."""
    return src.startswith(TRANSCRIPTS)


@lru_cache(maxsize=65536)
def tag_page(tag: str) -> str:
    return f"tags/{slugify(tag)}.md"


@lru_cache(maxsize=65536)
def entity_page(key: str) -> str:
    """The page of the entity whose key is ``<type>:<normalized name>``."""
    etype, _, name = key.partition(":")
    return f"entities/{slugify(f'{etype} {name}')}.md"


def entity_page_part(key: str, part: int) -> str:
    """Page ``part`` (2, 3, …) of an entity whose items do not fit on one page."""
    return entity_page(key) if part == 1 else f"{entity_page(key)[:-3]}/{part}.md"


@lru_cache(maxsize=65536)
def topic_page(term: str) -> str:
    return f"topics/{slugify(term)}.md"


def topic_page_part(term: str, part: int) -> str:
    """Page ``part`` (2, 3, …) of a topic whose items do not fit on one page."""
    return topic_page(term) if part == 1 else f"{topic_page(term)[:-3]}/{part}.md"


@lru_cache(maxsize=65536)
def type_anchor(content_type: str) -> str:
    """The id of a type's section on the library page."""
    return "t-" + slugify(content_type)


def anchor_id(value: str) -> str:
    """An HTML id / URL fragment built from an evidence ID (hex in practice)."""
    return value if _SAFE_ID.match(value) else slugify(value)


class Urls:
    """Site URLs of pages (``src`` paths relative to the docs folder, POSIX separators)."""

    def __init__(self, directory_urls: bool = True) -> None:
        self.directory_urls = directory_urls
        self._urls: dict[str, str] = {}
        self._prefix: dict[str, str] = {}

    def url(self, src: str) -> str:
        """The page's URL relative to the site root (``""`` for the home page)."""
        found = self._urls.get(src)
        if found is not None:
            return found
        stem = src[: -len(".md")] if src.endswith(".md") else src
        if not self.directory_urls:
            url = stem + ".html"
        elif stem == "index":
            url = ""
        elif stem.endswith("/index"):
            url = stem[: -len("index")]
        else:
            url = stem + "/"
        self._urls[src] = url
        return url

    def href(self, from_src: str, to_src: str, fragment: str = "") -> str:
        """A relative link from page ``from_src`` to page ``to_src`` (plus ``#fragment``):
        up to the site root, then down to the target (``../../transcripts/<id>/#E…``)."""
        prefix = self._prefix.get(from_src)
        if prefix is None:
            # The page's folder is as deep as its URL has slashes (``items/x/``: 2, and
            # ``items/x.html``: 1).
            prefix = self._prefix[from_src] = "../" * self.url(from_src).count("/")
        target = prefix + self.url(to_src)
        return (target or "./") + (f"#{fragment}" if fragment else "")


def _fragment_linker(url: str) -> Callable[[int], str]:
    return lambda s: f"{url}#t={s}"


def media_linker(metadata: Mapping[str, Any]) -> Callable[[int], str] | None:
    """``seconds → URL`` that opens the item's video or audio at that second, or None.

    YouTube: ``https://www.youtube.com/watch?v=<id>&t=<s>s``. A podcast's audio file
    (``audio_url``), a direct media URL or Vimeo: a ``#t=<s>`` media fragment. Only http(s)
    URLs are used; anything else gives no links.
    """
    url = safe_url(metadata.get("url"))
    vid = video_id(url) if url else None
    if vid is None and isinstance(metadata.get("video_id"), str) and url:
        vid = metadata["video_id"] if _SAFE_ID.match(metadata["video_id"]) else None
    if vid:
        base = f"https://www.youtube.com/watch?v={vid}&t="
        return lambda s: f"{base}{s}s"
    for candidate in (safe_url(metadata.get("audio_url")), url):
        if candidate is None:
            continue
        parts = urlsplit(candidate)
        host = (parts.hostname or "").lower()
        if candidate == url and not (
            parts.path.lower().endswith(_MEDIA_EXT) or host.endswith("vimeo.com")
        ):
            continue
        plain = urlunsplit((parts.scheme, parts.netloc, parts.path, parts.query, ""))
        return _fragment_linker(plain)
    return None
