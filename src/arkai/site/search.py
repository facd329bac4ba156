"""What the site's search finds: the entries arkai adds to Material's search index.

Material's search plugin would parse every page's HTML to index it — for thousands of
transcript pages that parse was most of the build time. arkai's pages are excluded from
the plugin (``search: {exclude: true}``) and their entries are written here instead, from
the text itself, next to each page in ``.site-build/search/<page>.json``; the site hook
adds them to ``search/search_index.json`` after every build.

Entries follow the plugin's format: the first entry of a page has the page's URL; the
others are its sections (``<url>#<anchor>``), which the search shows under the page. Text
is HTML-escaped (``& < >``), as the plugin's is. A transcript is indexed in sections of
about :data:`SECTION_CHARS` characters anchored at their first line (``#L120``), so a
result opens the transcript at the matching passage. Text that is already indexed on the
transcript (quotes found in it verbatim) is left out of the item page's entries.

Material loads the whole index into the browser, so it is kept within ``site.search_index_mb``
(:func:`search_scope`): when the item and transcript pages' entries (nearly all of it) would
weigh more, transcripts are indexed by their title only, and when the item pages' entries
alone would, every page is indexed by its first entry (its title), without transcript pages.
The entries files stay whole; the site hook leaves out what the scope does not cover
(:func:`scoped_rows`), and the home page says what the search covers and that
``arkai search`` finds the rest.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from arkai.core.grammar import TIMESTAMP_BYTES_RE
from arkai.site.collect import ItemData

SECTION_CHARS = 1000
#: Search ranking (Material's per-entry ``boost``; 1 is neutral): item pages and their claims
#: come first, entity and topic pages (which name many items) last. Material weighs a match
#: in a title 1,000 times a match in text, and an entity or topic page is titled with the very
#: name people search for, so its boost has to undo that factor to rank below the items.
ITEM_BOOST = 4.0
INDEX_PAGE_BOOST = 0.001
#: What the site's search index holds (:func:`search_scope`), widest first.
ALL, NO_TRANSCRIPT_TEXT, TITLES = "all", "no-transcript-text", "titles"
SCOPES = (ALL, NO_TRANSCRIPT_TEXT, TITLES)
#: What the search covers, said on the home page and by ``arkai site build``, for each scope
#: narrower than every entry.
SCOPE_NOTES = {
    NO_TRANSCRIPT_TEXT: "titles, claims, summaries, entities and topics, not transcript text",
    TITLES: "page titles only",
}
#: ``params.yaml`` ``site.search_index_mb`` when not set.
DEFAULT_INDEX_MB = 20.0
#: In the ``titles`` scope, the most characters of a first entry's text that are kept.
TITLE_TEXT_CHARS = 160
_BAD = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


@dataclass(frozen=True, slots=True)
class Section:
    anchor: str
    """Element id on the page ("" for the page itself)."""
    title: str
    """Plain text."""
    text: str
    """Plain text."""
    boost: float = 1.0


def _clean(text: str) -> str:
    if _BAD.search(text):
        text = _BAD.sub(" ", text)
    text = " ".join(text.split())
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def encode(sections: Sequence[Section]) -> bytes:
    """The sidecar file: ``[[anchor, title (escaped), text (escaped)(, boost)], …]`` (boost
    only when it is not 1)."""
    rows: list[list[Any]] = []
    for s in sections:
        row: list[Any] = [s.anchor, _clean(s.title), _clean(s.text)]
        if s.boost != 1.0:
            row.append(s.boost)
        rows.append(row)
    return json.dumps(rows, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def transcript_sections(d: ItemData, title: str) -> list[Section]:
    out = [Section("", f"{title} — transcript", "")]
    if not d.data:
        return out
    lines = d.data.split(b"\n")
    if d.data.endswith(b"\n"):
        lines.pop()
    # Speaker labels are left out: repeated on every line they would only bloat the index.
    labels = tuple(f"{label}: ".encode() for label in d.speakers)
    buf: list[str] = []
    size = 0
    first, stamp = 1, ""
    for n, raw in enumerate(lines, 1):
        m = TIMESTAMP_BYTES_RE.match(raw)
        if not buf:
            first, stamp = n, "{:02d}:{:02d}:{:02d}".format(*map(int, m.groups())) if m else ""
        text = raw[m.end() :].removeprefix(b" ") if m else raw
        if labels and text.startswith(labels):
            text = text.split(b": ", 1)[1]
        if text.strip():
            buf.append(text.decode("utf-8", "replace"))
            size += len(text) + 1
        if size >= SECTION_CHARS or n == len(lines):
            if buf:
                where = f"L{first}–L{n}" if n > first else f"L{first}"
                out.append(Section(f"L{first}", f"{stamp} · {where}" if stamp else where,
                                   " ".join(buf)))  # fmt: skip
            buf, size = [], 0
    return out


def _verbatim(d: ItemData, text: str) -> bool:
    return len(text) >= 20 and text.encode() in d.data


def item_sections(
    d: ItemData, summary: dict[str, Any], wisdom: Iterable[tuple[str, str, list[str]]]
) -> list[Section]:
    """``wisdom``: (anchor, heading, entry texts) of the wisdom sections on the page."""
    head = [str(summary["type"]), *(f"#{t}" for t in summary["tags"])]
    out = [Section("", str(summary["title"]), " ".join(head), ITEM_BOOST)]
    for anchor, heading, texts in wisdom:
        kept = [t for t in texts if t.strip() and not _verbatim(d, t)]
        if kept:
            out.append(Section(anchor, heading, " ".join(kept), ITEM_BOOST))
    claims = [c for c in d.claims if not c.rejected]
    if claims:
        text = " ".join(c.claim + ("" if c.start is not None else f" “{c.quote}”") for c in claims)
        out.append(Section("claims", "Claims", text, ITEM_BOOST))
    if d.entities:
        names = ", ".join(e.name for e in d.entities)
        out.append(Section("entities", "Entities", names, ITEM_BOOST))
    return out


def search_scope(transcripts: int, others: int, budget: int | None) -> str:
    """The widest scope whose entries fit in ``budget`` bytes (None: no limit): ``transcripts``
    and ``others`` are the sizes of the transcript pages' and the other (item) pages' entries
    files. The ``titles`` scope is the narrowest there is, whatever its size."""
    if budget is None or transcripts + others <= budget:
        return ALL
    return NO_TRANSCRIPT_TEXT if others <= budget else TITLES


def scoped_rows(rows: list[list[Any]], transcript: bool, scope: str) -> list[list[Any]]:
    """The rows of a page's entries file (see :func:`encode`) that the index holds in
    ``scope``: all; a transcript's first (its title) without its sections; or only the first
    row of a page that is not a transcript, its text cut at a space to at most
    :data:`TITLE_TEXT_CHARS` characters (the text is escaped, and a character reference holds
    no space)."""
    if scope == ALL:
        return rows
    if transcript:
        return rows[:1] if scope == NO_TRANSCRIPT_TEXT else []
    if scope == NO_TRANSCRIPT_TEXT or not rows:
        return rows
    anchor, title, text, *boost = rows[0]
    if len(text) > TITLE_TEXT_CHARS:
        cut = text.rfind(" ", 0, TITLE_TEXT_CHARS)
        text = text[:cut] + " …" if cut > 0 else ""
    return [[anchor, title, text, *boost]]
