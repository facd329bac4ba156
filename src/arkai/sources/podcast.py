"""Podcast feeds (RSS 2.0 / Atom): one item per chosen episode, from its published transcript.

The feed (a URL, or a local ``.rss``/``.xml``/``.atom`` file) is read with feedparser. Episode
transcripts are the Podcasting 2.0 ``<podcast:transcript url type language rel>`` elements.
feedparser 6 keeps only the attributes of an item's *last* such element (as
``entry["podcast_transcript"]``), so arkai reads them from the raw XML with ElementTree, item by
item (matched to feedparser's entries by GUID, else by position), and falls back to feedparser's
single one when the XML does not parse strictly.

Which episodes: ``AddOptions.select`` (``--episode``): 1-based numbers in feed order, GUIDs,
``latest`` (newest by date) or ``all``. Without a selection :class:`InvalidInputError` lists
the episodes, so the CLI can show them.

Which transcript: the episode's transcripts by type, VTT > SRT > JSON (the podcast namespace's
``{"segments": [{"speaker", "startTime", "endTime", "body"}]}``) > HTML > plain text; when one
cannot be fetched or read, the next is tried. Speaker labels (``<v Name>``, ``Name:``, JSON
``speaker``, HTML ``<cite>Name:</cite>``) are kept in ``transcript.md``.

Episodes without a transcript are skipped with a reason (see :meth:`acquire_with_warnings`);
``--transcript FILE`` attaches a local caption file to one chosen episode instead.

Identity follows the episode, never the address the feed was reached by (the same episode
added through a second feed URL, a redirect or a local copy is the same item):

1. a GUID that is an http(s) URL → that URL (canonicalised);
2. another GUID that is distinctive (≥ 8 characters, not only digits — UUIDs, ``Buzzsprout-…``)
   → ``podcast-guid:<guid>``;
3. the enclosure (audio) URL, else the episode's link → that URL (canonicalised);
4. a short GUID (``"12"``) → ``podcast-guid:<feed URL>#<guid>`` (scoped, since short GUIDs
   repeat across podcasts); nothing at all → ``<feed URL>#<number>:<title>``.

The feed URL is the feed's ``atom:link rel="self"`` when it has one, else the URL given, else,
for a local file, the channel link.
"""

from __future__ import annotations

import html
import json
import math
import re
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit, urlunsplit

from arkai.adapters.fs import read_input_file
from arkai.adapters.http import FetchError, fetch
from arkai.adapters.params import positive_number
from arkai.core.grammar import speaker_of
from arkai.core.hashing import digest, sha256_hex
from arkai.errors import ArkaiError, InvalidInputError, SourceFormatError
from arkai.formats import Cue, ParsedSource, parse_source, transcript_bytes
from arkai.formats.cue import clean_text, parse_clock
from arkai.sources.base import Acquired, AddOptions, read_transcript_file
from arkai.sources.route import is_url

CONTENT_TYPE = "podcasts"
#: Transcript kinds in order of preference.
KIND_ORDER = ("vtt", "srt", "json", "html", "txt")
LIST_LIMIT = 40
"""At most this many episodes are listed in the "choose an episode" message."""

_MEDIA_KINDS = {
    "text/vtt": "vtt",
    "text/webvtt": "vtt",
    "application/x-subrip": "srt",
    "application/srt": "srt",
    "application/x-srt": "srt",
    "text/srt": "srt",
    "text/x-srt": "srt",
    "application/json": "json",
    "text/json": "json",
    "text/html": "html",
    "application/xhtml+xml": "html",
    "text/plain": "txt",
}
_EXT_KINDS = {
    ".vtt": "vtt",
    ".webvtt": "vtt",
    ".srt": "srt",
    ".json": "json",
    ".html": "html",
    ".htm": "html",
    ".txt": "txt",
}
_SOURCE_EXT = {"vtt": "vtt", "srt": "srt", "json": "json", "html": "html", "txt": "txt"}
_FEED_SUFFIXES = (".rss", ".xml", ".atom")
_HEAD_RE = re.compile(rb"<(?:[A-Za-z][\w.-]*:)?(?:rss|feed|RDF)[\s>/]")
_TRACKING_PARAMS = re.compile(r"^(?:utm_[a-z]+|fbclid|gclid|mc_cid|mc_eid)$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class TranscriptLink:
    """One ``<podcast:transcript>`` of an episode."""

    url: str
    type: str
    """Media type as the feed gives it, lower-case ("" when missing)."""
    language: str | None = None
    rel: str | None = None

    @property
    def kind(self) -> str | None:
        """``vtt`` | ``srt`` | ``json`` | ``html`` | ``txt``, or None when unknown."""
        media = self.type.split(";")[0].strip()
        if media in _MEDIA_KINDS:
            return _MEDIA_KINDS[media]
        path = urlsplit(self.url).path.lower()
        for ext, kind in _EXT_KINDS.items():
            if path.endswith(ext):
                return kind
        return None


@dataclass(frozen=True, slots=True)
class Episode:
    """One feed entry."""

    number: int
    """1-based position in the feed."""
    guid: str | None
    title: str
    published: str | None
    """ISO-8601 UTC (``2024-01-02T10:00:00Z``), or None."""
    audio_url: str | None
    """The enclosure."""
    link: str | None
    duration_s: int | None
    transcripts: tuple[TranscriptLink, ...] = ()

    def ranked_transcripts(self) -> list[TranscriptLink]:
        """Transcripts of a known kind, best first (VTT > SRT > JSON > HTML > text)."""
        known = [t for t in self.transcripts if t.kind is not None]
        return sorted(known, key=lambda t: KIND_ORDER.index(t.kind or "txt"))


@dataclass
class Feed:
    """A parsed feed."""

    name: str
    """How messages name it: the URL or path given."""
    url: str
    """The feed's identity URL (see the module doc)."""
    title: str
    episodes: list[Episode] = field(default_factory=list)


def looks_like_feed(head: bytes) -> bool:
    """True when a file's first bytes open an RSS or Atom document."""
    return _HEAD_RE.search(head[:8192]) is not None


def parse_feed(data: bytes, name: str, *, base_url: str | None = None) -> Feed:
    """Parse RSS/Atom bytes. ``name`` names the feed in errors; ``base_url`` (the feed's URL,
    when it came from one) resolves relative links. Raises :class:`SourceFormatError`."""
    import feedparser

    parsed = feedparser.parse(data)
    positions = [i for i, e in enumerate(parsed.entries) if _is_real_entry(e)]
    entries = [parsed.entries[i] for i in positions]
    if not entries:
        if parsed.bozo:
            reason = " ".join(str(parsed.get("bozo_exception") or "malformed XML").split())
            raise SourceFormatError(f"{name}: not a readable RSS/Atom feed ({reason})")
        if not parsed.get("version"):
            raise SourceFormatError(f"{name}: not an RSS or Atom feed")
        raise SourceFormatError(f"{name}: the feed has no episodes")
    channel = parsed.get("feed") or {}
    self_link = next(
        (
            str(link.get("href"))
            for link in channel.get("links") or []
            if link.get("rel") == "self" and is_url(str(link.get("href") or ""))
        ),
        None,
    )
    base = base_url or self_link or ""
    feed_url = self_link or base_url or str(channel.get("link") or "").strip()
    if not is_url(feed_url):
        feed_url = f"file:sha256:{sha256_hex(data)}"
    title = clean_text(str(channel.get("title") or "")) or name
    raw_links = _raw_transcripts(data)
    by_guid = {guid: links for guid, links in raw_links if guid}
    positional = len(raw_links) == len(parsed.entries)
    episodes: list[Episode] = []
    for number, (position, entry) in enumerate(zip(positions, entries, strict=True), start=1):
        guid = str(entry.get("id") or "").strip() or None
        if guid is not None and guid in by_guid:
            links = by_guid[guid]
        elif positional:
            links = raw_links[position][1]
        else:
            links = []
        if not links:
            links = _feedparser_transcripts(entry)
        episodes.append(
            Episode(
                number=number,
                guid=guid,
                title=clean_text(str(entry.get("title") or "")) or f"Episode {number}",
                published=_iso(entry.get("published_parsed") or entry.get("updated_parsed")),
                audio_url=_enclosure(entry, base),
                link=_absolute(str(entry.get("link") or ""), base),
                duration_s=_duration(entry.get("itunes_duration")),
                transcripts=tuple(
                    TranscriptLink(
                        url=_absolute(link.url, base) or link.url,
                        type=link.type,
                        language=link.language,
                        rel=link.rel,
                    )
                    for link in links
                ),
            )
        )
    return Feed(name=name, url=feed_url, title=title, episodes=episodes)


def _is_real_entry(entry: Any) -> bool:
    return any(entry.get(k) for k in ("title", "id", "link", "enclosures", "summary"))


def _absolute(url: str, base: str) -> str | None:
    url = url.strip()
    if not url:
        return None
    return urljoin(base, url) if base and not is_url(url) else url


def _iso(value: Any) -> str | None:
    if not isinstance(value, time.struct_time):
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", value)


def _duration(value: Any) -> int | None:
    """``itunes:duration`` (``1865``, ``31:05``, ``00:31:05``) in seconds."""
    text = str(value or "").strip()
    if not re.fullmatch(r"\d+(?::\d{1,2}){0,2}(?:\.\d+)?", text):
        return None
    seconds = 0.0
    for part in text.split(":"):
        seconds = seconds * 60 + float(part)
    return round(seconds)


def _enclosure(entry: Any, base: str) -> str | None:
    found = [e for e in entry.get("enclosures") or [] if e.get("href")]
    media = [e for e in found if str(e.get("type") or "").startswith(("audio/", "video/"))]
    chosen = (media or found or [None])[0]
    return _absolute(str(chosen["href"]), base) if chosen else None


def _local(tag: Any) -> tuple[str, str]:
    """``(namespace, local name)`` of an ElementTree tag."""
    if not isinstance(tag, str):
        return "", ""
    if tag.startswith("{"):
        ns, _, local = tag[1:].partition("}")
        return ns, local
    return "", tag


def _is_podcast_ns(ns: str) -> bool:
    return "podcastindex" in ns.lower() or "podcast-namespace" in ns.lower()


def _raw_transcripts(data: bytes) -> list[tuple[str | None, list[TranscriptLink]]]:
    """``(guid, transcripts)`` for each ``<item>``/``<entry>`` in document order; ``[]`` when
    the XML does not parse strictly."""
    try:
        root = ET.fromstring(data)
    except (ET.ParseError, ValueError):
        return []
    out: list[tuple[str | None, list[TranscriptLink]]] = []
    for element in root.iter():
        if _local(element.tag)[1] not in ("item", "entry"):
            continue
        guid: str | None = None
        links: list[TranscriptLink] = []
        for child in element:
            ns, local = _local(child.tag)
            if local in ("guid", "id") and not _is_podcast_ns(ns) and guid is None:
                guid = (child.text or "").strip() or None
            elif local == "transcript" and _is_podcast_ns(ns) and child.get("url"):
                links.append(
                    TranscriptLink(
                        url=str(child.get("url")).strip(),
                        type=str(child.get("type") or "").strip().lower(),
                        language=child.get("language") or None,
                        rel=child.get("rel") or None,
                    )
                )
        out.append((guid, links))
    return out


def _feedparser_transcripts(entry: Any) -> list[TranscriptLink]:
    """feedparser's view: the attributes of the last ``podcast:transcript`` only."""
    value = entry.get("podcast_transcript")
    if not isinstance(value, dict) or not value.get("url"):
        return []
    return [
        TranscriptLink(
            url=str(value["url"]).strip(),
            type=str(value.get("type") or "").strip().lower(),
            language=value.get("language") or None,
            rel=value.get("rel") or None,
        )
    ]


# --- choosing episodes ------------------------------------------------------------------------


def episode_list(feed: Feed, limit: int = LIST_LIMIT) -> str:
    """One line per episode: number, date, title, transcript kinds."""
    lines = []
    for ep in feed.episodes[:limit]:
        kinds = sorted({t.kind for t in ep.ranked_transcripts() if t.kind}, key=KIND_ORDER.index)
        has = f"transcript: {', '.join(kinds)}" if kinds else "no transcript"
        date = (ep.published or "")[:10] or "----------"
        lines.append(f"  {ep.number:>3}. {date}  {ep.title}  [{has}]")
    if len(feed.episodes) > limit:
        lines.append(f"  … and {len(feed.episodes) - limit} more")
    return "\n".join(lines)


def select_episodes(feed: Feed, select: Sequence[str]) -> list[Episode]:
    """The episodes ``select`` names (numbers, GUIDs, ``latest``, ``all``; a comma joins
    several), in the order named, each once. Raises :class:`InvalidInputError`."""
    chosen: list[Episode] = []
    count = len(feed.episodes)
    guids = {ep.guid for ep in feed.episodes if ep.guid}
    tokens: list[str] = []
    for raw in select:
        raw = raw.strip()
        # "1,3" names two episodes, unless it is itself a GUID.
        tokens.extend([raw] if raw in guids else raw.split(","))
    for token in (t.strip() for t in tokens):
        if not token:
            continue
        by_guid = [ep for ep in feed.episodes if ep.guid == token]
        if by_guid:
            picked = by_guid
        elif token.lower() == "all":
            picked = list(feed.episodes)
        elif token.lower() == "latest":
            dated = [ep for ep in feed.episodes if ep.published]
            latest = max(dated, key=lambda ep: ep.published or "") if dated else None
            picked = [latest or feed.episodes[0]]
        elif token.isdigit():
            n = int(token)
            if not 1 <= n <= count:
                raise InvalidInputError(
                    f"{feed.name}: no episode {n}; the feed has {count} "
                    f"(numbered 1 to {count} in feed order)"
                )
            picked = [feed.episodes[n - 1]]
        else:
            raise InvalidInputError(
                f"{feed.name}: no episode with GUID {token!r}",
                hint="use --episode N (a number from the list), a GUID, 'latest' or 'all'",
            )
        chosen.extend(ep for ep in picked if ep not in chosen)
    return chosen


# --- transcripts -----------------------------------------------------------------------------


def parse_podcast_json(name: str, data: bytes) -> ParsedSource:
    """The podcast namespace's JSON transcript (``{"segments": [...]}``) as timed cues.

    A youtube-transcript-api list is read too. Raises :class:`SourceFormatError` naming
    ``name``.
    """
    try:
        value = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise SourceFormatError(f"{name}: not valid JSON ({exc})") from None
    except RecursionError:
        raise SourceFormatError(f"{name}: not valid JSON (nested too deeply)") from None
    if isinstance(value, list):
        return parse_source(name, data, "ytjson")
    segments = value.get("segments") if isinstance(value, dict) else None
    if not isinstance(segments, list):
        raise SourceFormatError(f"{name}: not a podcast JSON transcript (no 'segments' list)")
    cues: list[Cue] = []
    for index, segment in enumerate(segments):
        if not isinstance(segment, dict):
            raise SourceFormatError(f"{name}: segment {index} is not an object")
        body, start = segment.get("body"), segment.get("startTime")
        if not isinstance(body, str):
            raise SourceFormatError(f"{name}: segment {index}: 'body' is missing")
        if isinstance(start, str):
            start = parse_clock(start) if ":" in start else _float_or_none(start)
        if isinstance(start, bool) or not isinstance(start, int | float) or start < 0:
            raise SourceFormatError(f"{name}: segment {index}: bad 'startTime' {start!r}")
        if not math.isfinite(start):
            raise SourceFormatError(f"{name}: segment {index}: bad 'startTime' {start!r}")
        text = clean_text(html.unescape(body))
        speaker = clean_text(str(segment.get("speaker") or "")) or None
        if text:
            cues.append(Cue(float(start), text, speaker))
    if not cues:
        raise SourceFormatError(f"{name}: no transcript segments with text")
    cues.sort(key=lambda c: c.start or 0.0)
    return ParsedSource(format="txt", cues=tuple(cues), timed=True, title=None)


def _float_or_none(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


_BLOCK_TAGS = frozenset(
    {
        "p", "div", "br", "li", "ul", "ol", "tr", "table", "section", "article", "blockquote",
        "pre", "h1", "h2", "h3", "h4", "h5", "h6", "dd", "dt", "hr", "main", "header",
        "footer", "body",
    }
)  # fmt: skip
_SKIP_TAGS = frozenset({"script", "style", "head", "title", "noscript", "template"})


class _HtmlTranscript(HTMLParser):
    """Paragraphs of an HTML transcript; ``<cite>`` names a speaker, ``<time>`` a moment."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[tuple[float | None, str | None, str]] = []
        self._text: list[str] = []
        self._skip = 0
        self._capture: str | None = None  # "cite" or "time" while inside one
        self._captured: list[str] = []
        self._speaker: str | None = None
        self._time: float | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP_TAGS:
            self._skip += 1
        elif tag in ("cite", "time") and not self._skip:
            self._flush()
            self._capture, self._captured = tag, []
        elif tag in _BLOCK_TAGS:
            self._flush()

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _BLOCK_TAGS:
            self._flush()

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP_TAGS:
            self._skip = max(0, self._skip - 1)
        elif tag == self._capture:
            value = clean_text("".join(self._captured))
            if tag == "cite":
                self._speaker = value.rstrip(":").strip() or None
            else:
                self._time = parse_clock(value) if value.count(":") == 2 else _short_clock(value)
            self._capture = None
        elif tag in _BLOCK_TAGS:
            self._flush()

    def handle_data(self, data: str) -> None:
        if self._skip:
            return
        if self._capture is not None:
            self._captured.append(data)
        else:
            self._text.append(data)

    def close(self) -> None:
        super().close()
        self._flush()

    def _flush(self) -> None:
        text = clean_text("".join(self._text))
        self._text = []
        if text:
            self.blocks.append((self._time, self._speaker, text))
            self._time = None


def _short_clock(value: str) -> float | None:
    """``M:SS`` (the podcast namespace's HTML example) in seconds."""
    m = re.fullmatch(r"(\d{1,3}):(\d{2})(?:[.,]\d+)?", value)
    if m is None or int(m.group(2)) >= 60:
        return None
    return float(int(m.group(1)) * 60 + int(m.group(2)))


def parse_html_transcript(name: str, data: bytes) -> ParsedSource:
    """An HTML transcript: tags stripped, one cue per paragraph, speakers kept; timed when
    every paragraph carries a ``<time>``."""
    text = data.decode("utf-8", errors="replace")
    parser = _HtmlTranscript()
    parser.feed(text)
    parser.close()
    blocks = parser.blocks
    if not blocks:
        raise SourceFormatError(f"{name}: no text found in the HTML transcript")
    if all(start is not None for start, _, _ in blocks):
        cues = [Cue(start, body, who) for start, who, body in blocks]
        cues.sort(key=lambda c: c.start or 0.0)
        return ParsedSource(format="txt", cues=tuple(cues), timed=True, title=None)
    untimed: list[Cue] = []
    for _, who, body in blocks:
        if who is not None and speaker_of(body)[0] is None:
            body = f"{who}: {body}"
        untimed.append(Cue(None, body))
    return ParsedSource(format="txt", cues=tuple(untimed), timed=False, title=None)


def parse_transcript(kind: str, name: str, data: bytes) -> ParsedSource:
    """A fetched transcript of ``kind`` (see :data:`KIND_ORDER`) as cues."""
    if kind in ("vtt", "srt", "txt"):
        return parse_source(name, data, kind)
    if kind == "json":
        return parse_podcast_json(name, data)
    return parse_html_transcript(name, data)


# --- the source kind -------------------------------------------------------------------------


def canonical_episode_url(url: str) -> str:
    """Light URL canonicalisation: lower-case scheme and host, no fragment, no tracking."""
    parts = urlsplit(url.strip())
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True)]
    kept = [(k, v) for k, v in query if not _TRACKING_PARAMS.match(k)]
    return urlunsplit(
        (
            parts.scheme.lower(),
            parts.netloc.lower(),
            parts.path or "/",
            urlencode(kept) if len(kept) != len(query) else parts.query,
            "",
        )
    )


def episode_canonical(feed: Feed, ep: Episode) -> str:
    """The identity of an episode (see the module doc)."""
    guid = ep.guid
    if guid and is_url(guid):
        return canonical_episode_url(guid)
    if guid and len(guid) >= 8 and not guid.isdigit():
        return f"podcast-guid:{guid}"
    for url in (ep.audio_url, ep.link):
        if url and is_url(url):
            return canonical_episode_url(url)
    if guid:
        return f"podcast-guid:{feed.url}#{guid}"
    return f"{feed.url}#{ep.number}:{ep.title}"


def _timeout(opts: AddOptions) -> float:
    return positive_number(opts.params.get("podcast"), "podcast.timeout_s", 20.0)


class _Skipped(Exception):
    """An episode left out, and why (an ArkaiError to raise when it was the only one)."""

    def __init__(self, error: ArkaiError) -> None:
        super().__init__(str(error))
        self.error = error


class PodcastSource:
    """Podcast RSS/Atom feeds (see the module doc)."""

    name = "podcast"

    def match(self, ref: str, path: Path | None, head: bytes) -> bool:
        if path is not None:
            return path.suffix.lower() in _FEED_SUFFIXES and looks_like_feed(head)
        parts = urlsplit(ref.strip())
        if parts.scheme.lower() not in ("http", "https"):
            return False
        host = (parts.hostname or "").lower()
        route = parts.path.lower().rstrip("/")
        return (
            route.endswith(_FEED_SUFFIXES)
            or route.endswith(("/feed", "/rss"))
            or host.startswith(("feed.", "feeds."))
        )

    def acquire(self, ref: str, path: Path | None, opts: AddOptions) -> list[Acquired]:
        items, _warnings = self.acquire_with_warnings(ref, path, opts)
        return items

    def read_feed(self, ref: str, path: Path | None, opts: AddOptions) -> Feed:
        """Fetch or read the feed and parse it."""
        if path is None:
            url = ref.strip()
            resp = fetch(url, timeout=_timeout(opts), max_bytes=opts.max_bytes)
            return parse_feed(resp.data, url, base_url=url)
        data = read_input_file(path, max_bytes=opts.max_bytes)
        return parse_feed(data, str(path))

    def acquire_with_warnings(
        self, ref: str, path: Path | None, opts: AddOptions
    ) -> tuple[list[Acquired], list[str]]:
        """The chosen episodes as items, and one line for each chosen episode left out."""
        feed = self.read_feed(ref, path, opts)
        if opts.transcript is None and not any(ep.ranked_transcripts() for ep in feed.episodes):
            raise SourceFormatError(
                f"{feed.name}: no episode of this feed has a transcript (podcast:transcript)",
                hint="attach one to an episode with --episode N --transcript FILE",
            )
        if not opts.select:
            raise InvalidInputError(
                f"{feed.name}: choose episodes with --episode N (a number below, a GUID, "
                f"'latest' or 'all'); {feed.title!r} has {len(feed.episodes)}:\n"
                + episode_list(feed)
            )
        chosen = select_episodes(feed, opts.select)
        if not chosen:
            raise InvalidInputError(f"{feed.name}: no episode chosen")
        if opts.transcript is not None:
            if len(chosen) != 1:
                raise InvalidInputError(
                    f"{feed.name}: --transcript attaches to one episode, "
                    f"but {len(chosen)} are chosen"
                )
            return [self._attach(feed, chosen[0], opts.transcript, opts)], []
        items: list[Acquired] = []
        skipped: list[ArkaiError] = []
        for ep in chosen:
            try:
                items.append(self._episode(feed, ep, opts))
            except _Skipped as exc:
                skipped.append(exc.error)
        if not items:
            if len(skipped) == 1:
                raise skipped[0]
            reasons = "; ".join(e.message for e in skipped[:3])
            more = f"; and {len(skipped) - 3} more" if len(skipped) > 3 else ""
            kind = FetchError if any(isinstance(e, FetchError) for e in skipped) else None
            message = f"{feed.name}: none of the {len(skipped)} chosen episodes could be added"
            if kind is not None:
                raise FetchError(f"{message}: {reasons}{more}")
            raise SourceFormatError(f"{message}: {reasons}{more}")
        return items, [str(e) for e in skipped]

    def _episode(self, feed: Feed, ep: Episode, opts: AddOptions) -> Acquired:
        links = ep.ranked_transcripts()
        if not links:
            if ep.transcripts:
                types = ", ".join(sorted({t.type or "no type" for t in ep.transcripts}))
                raise _Skipped(
                    SourceFormatError(
                        f"{feed.name}: episode {ep.title!r} has no transcript arkai can read "
                        f"({types}); attach one with --transcript FILE"
                    )
                )
            raise _Skipped(
                SourceFormatError(
                    f"{feed.name}: episode {ep.title!r} has no transcript (podcast:transcript); "
                    "attach one with --transcript FILE"
                )
            )
        errors: list[ArkaiError] = []
        for link in links:
            kind = link.kind or "txt"
            try:
                resp = fetch(link.url, timeout=_timeout(opts), max_bytes=opts.max_bytes)
                parsed = parse_transcript(kind, link.url, resp.data)
                transcript = transcript_bytes(parsed, link.url)
            except ArkaiError as exc:
                errors.append(exc)
                continue
            return self._item(
                feed,
                ep,
                files={f"source.{_SOURCE_EXT[kind]}": resp.data, "transcript.md": transcript},
                timed=parsed.timed,
                source_format="podcast-json" if kind == "json" else kind,
                transcript_meta={
                    "transcript_url": link.url,
                    "transcript_type": link.type or kind,
                    "transcript_language": link.language,
                    "transcript_source": "feed",
                },
            )
        reasons = "; ".join(e.message for e in errors)
        raise _Skipped(
            type(errors[0])(f"{feed.name}: episode {ep.title!r}: {reasons}", hint=errors[0].hint)
        )

    def _attach(self, feed: Feed, ep: Episode, file: Path, opts: AddOptions) -> Acquired:
        _, parsed, files = read_transcript_file(file, opts.max_bytes)
        return self._item(
            feed,
            ep,
            files=files,
            timed=parsed.timed,
            source_format=parsed.format,
            transcript_meta={
                "transcript_url": None,
                "transcript_type": parsed.format,
                "transcript_language": None,
                "transcript_source": "local",
                "transcript_file": file.name,
            },
        )

    def _item(
        self,
        feed: Feed,
        ep: Episode,
        *,
        files: dict[str, bytes],
        timed: bool,
        source_format: str,
        transcript_meta: dict[str, Any],
    ) -> Acquired:
        canonical = episode_canonical(feed, ep)
        human = next((u for u in (ep.link, ep.guid, ep.audio_url) if u and is_url(u)), None)
        return Acquired(
            canonical=canonical,
            source_id=sha256_hex(canonical.encode("utf-8"))[:8],
            title=ep.title,
            content_type=CONTENT_TYPE,
            files=files,
            url=human,
            meta={
                "podcast": feed.title,
                "feed_url": feed.url if is_url(feed.url) else None,
                "episode_guid": ep.guid,
                "published": ep.published,
                "audio_url": ep.audio_url,
                "duration": ep.duration_s,
                **transcript_meta,
            },
            timed=timed,
            source_format=source_format,
            content_hash=digest(files["transcript.md"]),
        )
