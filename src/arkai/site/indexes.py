"""The library-wide pages, built from the item summaries (:func:`arkai.site.collect.
summarize_item`) and, when present, ``index/topics.json`` and ``index/beliefs.json``:
home, library by type and by date, tags, entities, topics, beliefs and validation."""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from arkai.adapters.fs import read_repo_file
from arkai.adapters.layout import TRANSCRIPT
from arkai.adapters.memory import HISTORY_LATEST, History
from arkai.core.escape import css_token, one_line
from arkai.errors import ArkaiError
from arkai.site import links
from arkai.site.collect import sentence_around
from arkai.site.html import a, badge, day, esc, h2, page, plural, table
from arkai.site.links import Urls
from arkai.site.search import ALL, INDEX_PAGE_BOOST, SCOPE_NOTES, Section
from arkai.site.store import SummaryStore, mention_count

T = TypeVar("T")
LATEST = 12
CHUNK_LINKS = 6
#: Items of an entity page shown with their mentions' sentences (the most mentioning first).
SAID_ITEMS = 10
#: Items listed (with line links) on one entity page after the first :data:`SAID_ITEMS`: an
#: entity most items mention continues on pages 2, 3, … so that no page grows with the
#: library (one page listing every item was a big library's peak memory, several times over).
ENTITY_PAGE_ITEMS = 500
TRANSCRIPT_CACHE = 64
#: Passages of a topic shown with their sentence per item (the rest as line links).
SNIPPETS = 3
SNIPPET_CHARS = 160
#: Items of a topic page shown with their passages (by relevance, then the most passages);
#: the others are listed compactly (relevance, passage count), :data:`TOPIC_PAGE_ITEMS` a
#: page on pages 2, 3, …, as entity pages are: a topic most items share made one page of
#: 6.7 MB at 10,000 items, and every edit that moved one of its items rendered it again.
TOPIC_SAID_ITEMS = 20
TOPIC_PAGE_ITEMS = 500
_RELEVANCE_RANK = {"high": 0, "medium": 1, "low": 2}


@dataclass
class Entity:
    """One entity across the library: what its index entry shows (its items' mentions are in
    the summary store, see :meth:`Library.entity_items`)."""

    key: str
    type: str
    names: Counter[str] = field(default_factory=Counter)
    count: int = 0
    """Items that mention it."""
    mentions: int = 0
    first: str = ""
    """The content id of the first item (in library order) that mentions it."""

    @property
    def name(self) -> str:
        return min(self.names.items(), key=lambda kv: (-kv[1], kv[0]))[0]


@dataclass(frozen=True)
class EntityItems:
    """The items of one entity, in library order."""

    items: dict[str, str]
    """content id → the line of each mention, ``"12 40 0 …"`` (0: unresolved or stale; see
    :func:`mention_lines`) — one short string per item, as in the item summaries."""
    said: dict[str, str]
    """content id → ``"line:start:end …"`` of its first mentions (see :func:`said_spans`)."""


def mention_lines(text: str) -> list[int | None]:
    """``"12 40 0"`` (an entity's mentions in an item summary) → ``[12, 40, None]``."""
    return [int(n) or None for n in text.split()]


#: A chunk as a topic page's key sees it: the digest of its chunk line (16 bytes),
#: its ``start_line`` and ``end_line`` (None when not found).
ChunkDigest = tuple[bytes, int | None, int | None]


class TopicEntry(NamedTuple):
    """One item under a topic as the site keeps it from topics.json. A tuple, not a dict: at
    10,000 items a build holds ≈ 300,000 of them (a dict of these four keys is ≈ 100 bytes
    more each, and slower to make)."""

    content_id: str
    relevance: str
    """``high``, ``medium`` or ``low``."""
    chunks: list[int]
    """The first :data:`CHUNK_LINKS` chunk positions in ``index/chunks/``."""
    passages: int
    """How many chunks the item has under the topic (``chunks`` holds the first of them)."""


@dataclass
class Topic:
    """One topic as the library-wide pages hold it between reading ``topics.json`` and making
    its pages: not every item under it (≈ 55 entries an item, ≈ 180 MB at 10,000 items and
    growing with the library), only what its key, the topics index and the items shown with
    passages need (:func:`make_topic`). The pages that are made again read its items once
    more (:attr:`Library.load_topic_items`)."""

    term: str
    synonyms: list[str]
    size: int
    """Its entries (the items listed under it)."""
    count: int
    """Distinct items."""
    top: list[TopicEntry]
    """Its first :data:`TOPIC_SAID_ITEMS` entries in page order (:func:`topic_order`)."""
    listing: bytes
    """Digest of every entry in page order: its item's ID and title, relevance and passage
    count (:func:`listing_digest`; part of :func:`topic_key`)."""


def topic_order(items: Sequence[TopicEntry], titles: Mapping[str, str]) -> list[TopicEntry]:
    """A topic's items as its pages list them: by relevance, then the most passages, then
    title and ID, else as given; the first :data:`TOPIC_SAID_ITEMS` are shown with passages."""
    # Sorted as tuples made in one comprehension (no key function called per entry: at 10,000
    # items ≈ 550,000 entries); the position last keeps equal keys in order.
    rank = _RELEVANCE_RANK.get
    keyed = [
        (rank(e.relevance, 3), -e.passages, titles.get(e.content_id, e.content_id),
         e.content_id, n)
        for n, e in enumerate(items)
    ]  # fmt: skip
    keyed.sort()
    return [items[k[4]] for k in keyed]


def listing_digest(
    order: Sequence[TopicEntry], titles: Mapping[str, str], heads: dict[str, bytes]
) -> bytes:
    """Digest of a topic's entries in page order as its pages list them: each one's item ID
    and title, relevance and passage count. ``heads``: each item's ID and title as the digest
    holds them, kept between the topics of one build (an item is under ≈ 55 topics)."""
    out: list[bytes] = []
    add = out.append
    for e in order:
        cid = e.content_id
        head = heads.get(cid)
        if head is None:
            head = heads[cid] = _sized(cid) + _sized(titles.get(cid, cid))
        add(head)
        add(b"%s;%d;" % (e.relevance.encode(), e.passages))
    # The bytes of every entry joined, then hashed once (an update per entry cost more).
    return hashlib.sha256(b"".join(out)).digest()


def known_entries(items: Iterable[TopicEntry], titles: Mapping[str, str]) -> list[TopicEntry]:
    """The entries of items the library has (an index built before items were removed may
    name items that are gone): those ``titles`` has."""
    return [e for e in items if titles.get(e.content_id) is not None]


def make_topic(
    term: str,
    known: Sequence[TopicEntry],
    synonyms: list[str],
    titles: Mapping[str, str],
    heads: dict[str, bytes] | None = None,
) -> Topic:
    """The topic of these entries: ``known``, those of the library's items
    (:func:`known_entries`), at least one. ``heads``: see :func:`listing_digest`."""
    order = topic_order(known, titles)
    listing = listing_digest(order, titles, {} if heads is None else heads)
    count = len({e.content_id for e in order})
    return Topic(term, synonyms, len(order), count, order[:TOPIC_SAID_ITEMS], listing)


@dataclass
class Library:
    """Everything the library-wide pages need."""

    summaries: list[dict[str, Any]]
    """The slim summary of each item (:func:`arkai.site.store.slim_summary`), in library
    order; the rest of each summary is in ``store``."""
    site_name: str
    urls: Urls
    entities: dict[str, Entity] = field(default_factory=dict)
    topics: dict[str, Topic] = field(default_factory=dict)
    """By term (:func:`make_topic`: the items of the library only)."""
    load_topic_items: Callable[[set[str]], Iterable[tuple[str, list[TopicEntry]]]] | None = None
    """Reads the entries of these topics again, each ``(term, entries)`` as ``topics.json``
    holds them (the topic pages that are made again list every item: see
    :func:`topic_pages`); None: no topic page can be made."""
    chunks: dict[int, dict[str, Any]] = field(default_factory=dict)
    """Position in index/chunks/ → ``{content_id, start_line, end_line, text}`` (topic
    passages): only the chunks of the topic pages that are made again (see
    :func:`topic_pages`), loaded by ``load_chunks``."""
    chunk_digests: dict[int, ChunkDigest] = field(default_factory=dict)
    """Position in index/chunks/ → digest of its line's bytes, its start and end line, for
    every chunk a topic page may show (part of the topic page's key: :func:`topic_key`)."""
    load_chunks: Callable[[set[int]], dict[int, dict[str, Any]]] | None = None
    """Reads the chunks at these positions (None: ``chunks`` holds them all already)."""
    beliefs: dict[str, Any] | None = None
    """``beliefs/beliefs.json`` and its files' ``digest`` (see ``site.build._load_beliefs``)."""
    load_belief_changes: Callable[[], dict[str, History]] | None = None
    """Reads each belief's history (None: the page shows no history)."""
    entity_min_items: int = 1
    topic_min_items: int = 1
    root: Path | None = None
    """The knowledge repo (entity pages read mention sentences from transcripts)."""
    digests: dict[str, str] = field(default_factory=dict)
    """content id → digest of the item's files (part of the key of the pages that read its
    transcript: :func:`entity_part_keys`)."""
    store: SummaryStore | None = None
    """Where the item summaries are (their entities, issues and evidence IDs)."""
    dirty_entities: set[str] = field(default_factory=set)
    """Keys of the entities of the items that are new, changed or gone since the last build:
    the others' pages are made from the same inputs (:func:`entity_part_keys` reads only the
    entity's items) and are not looked at again when the page on disk was made from its last
    key."""
    search_scope: str = ALL
    """What the site's search index covers (:func:`arkai.site.search.search_scope`)."""
    search_bytes: int = 0
    """The size of the item and transcript pages' search entries files together."""
    search_index_mb: float | None = None
    """``params.yaml`` ``site.search_index_mb``, the limit the scope keeps to."""
    _transcripts: dict[str, bytes] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.by_id = {s["id"]: s for s in self.summaries}
        # content id → title of every item of the library (the items a topic may list).
        self.titles = {cid: str(s["title"]) for cid, s in self.by_id.items() if s}
        self.pos = {s["id"]: n for n, s in enumerate(self.summaries)}
        # Only each entity's totals are held (kept up to date in the store).
        for key, etype, first, count, mentions, names in (
            self.store.entity_totals() if self.store else ()
        ):
            self.entities[key] = Entity(key, etype, Counter(names), count, mentions, first)

    def entity_items(self, ent: Entity) -> EntityItems:
        """The items of one entity with their mentions, in library order."""
        rows = self.store.entity_items(ent.key) if self.store else []
        rows = sorted((r for r in rows if r[0] in self.pos), key=lambda r: (self.pos[r[0]], r[1]))
        items: dict[str, str] = {}
        said: dict[str, str] = {}
        for cid, _, mentions, spans in rows:
            before = items.get(cid)
            items[cid] = f"{before} {mentions}".strip() if before else mentions
            if spans:
                said[cid] = (said.get(cid, "") + " " + spans).strip()
        return EntityItems(items, said)

    def item_entity_keys(self, cid: str) -> list[str]:
        return self.store.item_entity_keys(cid) if self.store else []

    def transcript(self, cid: str) -> bytes:
        """An item's ``transcript.md`` (the last few kept: entity pages of one library ask
        for the same items again and again); empty when unknown or missing."""
        found = self._transcripts.get(cid)
        if found is None:
            s = self.by_id.get(cid)
            try:  # read like every library file: regular files inside the repo only
                root = self.root
                found = b""
                if s and root:
                    path = root / s["path"] / TRANSCRIPT
                    found = read_repo_file(path, root, missing_ok=True) or b""
            except (OSError, ArkaiError):
                found = b""
            if len(self._transcripts) >= TRANSCRIPT_CACHE:
                self._transcripts.pop(next(iter(self._transcripts)))
            self._transcripts[cid] = found
        return found

    def entity_has_page(self, key: str) -> bool:
        ent = self.entities.get(key)
        return ent is not None and ent.count >= self.entity_min_items

    def topic_has_page(self, term: str) -> bool:
        t = self.topics.get(term)
        return t is not None and t.count >= self.topic_min_items

    def title(self, cid: str) -> str:
        return self.titles.get(cid, cid)

    def topic_shown_chunks(self, t: Topic) -> Iterator[int]:
        """The positions of the chunks a topic's pages may show (their passages)."""
        for e in t.top:
            yield from e.chunks[:CHUNK_LINKS]


def _item_link(lib: Library, src: str, cid: str) -> str:
    return a(lib.urls.href(src, links.item_page(cid)), lib.title(cid))


def _item_rows(
    lib: Library, src: str, items: Iterable[dict[str, Any]], *, with_type: bool = True
) -> list[str]:
    """The item list (a responsive table); ``with_type``: a Type column (left out where
    the items are grouped by type)."""
    rows = []
    for s in items:
        tags = ", ".join(a(lib.urls.href(src, links.tag_page(t)), t) for t in s["tags"])
        row = [
            _item_link(lib, src, s["id"]),
            esc(s["type"]),
            esc(day(s["created_at"])),
            esc(day(s["published"])),
            tags,
            str(s["counts"]["claims"]),
            str(s["entity_count"]),
        ]
        rows.append(row if with_type else row[:1] + row[2:])
    head = ["Title", "Type", "Added", "Published", "Tags", "Claims", "Entities"]
    cls = "ak-items" if with_type else "ak-items ak-notype"
    return table(head if with_type else head[:1] + head[2:], rows, cls=cls, labels=False)


def totals(summaries: list[dict[str, Any]]) -> dict[str, int]:
    t: Counter[str] = Counter()
    for s in summaries:
        t.update({k: v for k, v in s["counts"].items()})
        t["items"] += 1
        t["extracted"] += int(s["extracted"])
        t["digest_changed"] += int(s["extracted"] and not s["digest_ok"])
        t["mentions_stale"] += s["mentions_stale"]
    return dict(t)


def _status_line(t: dict[str, int]) -> str:
    ok = not t.get("stale") and not t.get("mentions_stale")
    parts = [badge("resolved", "all spans valid") if ok else badge("stale", "stale evidence")]
    for key in ("resolved", "ambiguous", "unresolved", "stale", "rejected"):
        if t.get(key):
            parts.append(badge(key, f"{t[key]} {key}"))
    if t.get("digest_changed"):
        changed = plural(t["digest_changed"], "transcript")
        parts.append(badge("stale", f"{changed} changed since extraction"))
    return " ".join(parts)


#: The fields of an item's slim summary that :func:`home`, :func:`library_by_type`,
#: :func:`library_by_date` and :func:`validation` show (with the item's issues): the site
#: build makes these pages again only when one of them changes for some item (a test renders
#: them with every other field changed).
LISTING_FIELDS = ("id", "title", "type", "tags", "created_at", "published", "counts",
                  "extracted", "digest_ok", "mentions_stale", "entity_count")  # fmt: skip


def search_size(lib: Library) -> str:
    """The whole search index's size as the home page shows it (MB, three digits)."""
    return f"{lib.search_bytes / 1_000_000:.3g}"


def home(lib: Library) -> str:
    src = links.HOME
    t = totals(lib.summaries)
    out = [f"<h1>{esc(lib.site_name)}</h1>"]
    if lib.search_scope != ALL:
        # Material loads the whole index into the browser: the site says what it left out.
        size = search_size(lib)
        budget = lib.search_index_mb
        limit = f" ({budget:g} MB)" if budget is not None else ""
        out.append(
            f'<p class="ak-search-scope">Search on this site covers '
            f"{SCOPE_NOTES[lib.search_scope]}: the whole index would be about {size} MB, "
            f"more than <code>site.search_index_mb</code>{limit} allows. "
            f'<code>arkai search "words"</code> searches everything.</p>'
        )
    cards = [
        ("items", t.get("items", 0)),
        ("claims", t.get("claims", 0)),
        ("entities", len(lib.entities)),
        ("tags", len({x for s in lib.summaries for x in s["tags"]})),
    ]
    out.append(
        '<div class="ak-cards">'
        + "".join(
            f'<div class="ak-card"><span class="ak-num">{n}</span><span>{esc(label)}</span></div>'
            for label, n in cards
        )
        + "</div>"
    )
    out.append(h2("validation", "Validation"))
    out.append(f"<p>{_status_line(t)} {a(lib.urls.href(src, links.VALIDATION), 'Details')}</p>")
    out.append(h2("types", "By type"))
    types: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for s in lib.summaries:
        types[s["type"]].append(s)
    rows = [
        [
            a(lib.urls.href(src, links.LIBRARY, links.type_anchor(k)), k),
            str(len(v)),
            str(sum(s["counts"]["claims"] for s in v)),
        ]
        for k, v in sorted(types.items())
    ]
    out += table(("Type", "Items", "Claims"), rows)
    out.append(h2("latest", "Latest additions"))
    latest = sorted(lib.summaries, key=lambda s: (s["created_at"], s["id"]), reverse=True)[:LATEST]
    out += table(
        ("Added", "Title", "Type", "Claims"),
        [
            [
                esc(day(s["created_at"])),
                _item_link(lib, src, s["id"]),
                esc(s["type"]),
                str(s["counts"]["claims"]),
            ]
            for s in latest
        ],
    )
    if not lib.summaries:
        out.append("<p><em>The library is empty: add items with <code>arkai add</code>.</em></p>")
    return page("Home", out, kind="home", hide=("toc",))


def library_by_type(lib: Library) -> str:
    src = links.LIBRARY
    out = [
        "<h1>Library</h1>",
        f"<p>{plural(len(lib.summaries), 'item')} · "
        f"{a(lib.urls.href(src, links.LIBRARY_DATES), 'by date')} · "
        f"{a(lib.urls.href(src, links.TAGS), 'by tag')}</p>",
    ]
    types: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for s in lib.summaries:
        types[s["type"]].append(s)
    for k in sorted(types):
        out.append(h2(links.type_anchor(k), f"{k} ({len(types[k])})"))
        out += _item_rows(
            lib, src, sorted(types[k], key=lambda s: s["title"].casefold()), with_type=False
        )
    return page("Library", out, kind="library")


def library_by_date(lib: Library) -> str:
    src = links.LIBRARY_DATES
    out = [
        "<h1>Library by date</h1>",
        "<p>Grouped by month published (or added, when the source has no date).</p>",
    ]
    months: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for s in lib.summaries:
        months[(s["published"] or s["created_at"])[:7] or "undated"].append(s)
    for m in sorted(months, reverse=True):
        out.append(h2("m-" + css_token(m), f"{m} ({len(months[m])})"))
        out += _item_rows(
            lib,
            src,
            sorted(months[m], key=lambda s: s["published"] or s["created_at"], reverse=True),
        )
    return page("Library by date", out, kind="library", hide=("toc",))


def tag_pages(lib: Library) -> dict[str, str]:
    tags: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for s in lib.summaries:
        for t in s["tags"]:
            tags[t].append(s)
    pages = {}
    rows = []
    for t in sorted(tags, key=str.casefold):
        src = links.tag_page(t)
        out = [f"<h1>Tag: {esc(t)}</h1>", f"<p>{plural(len(tags[t]), 'item')}</p>"]
        out += _item_rows(lib, src, sorted(tags[t], key=lambda s: s["title"].casefold()))
        pages[src] = page(f"Tag: {t}", out, kind="tag", hide=("toc",))
        rows.append([a(lib.urls.href(links.TAGS, src), t), str(len(tags[t]))])
    out = ["<h1>Tags</h1>"]
    out += table(("Tag", "Items"), rows) if rows else ["<p><em>No tags yet.</em></p>"]
    pages[links.TAGS] = page("Tags", out, kind="tags", hide=("toc",))
    return pages


#: A library-wide page: its source path, its text — None when the caller's ``unchanged``
#: said the page on disk was made from the same inputs — and its search entries.
PageOut = tuple[str, str | None, list[Section] | None]


def _never(src: str, key: str | None) -> bool:
    return False


def entity_part_keys(
    lib: Library, ent: Entity, found: EntityItems, ranked: list[tuple[str, str]], parts: list[str]
) -> list[str]:
    """Digest of everything each page of an entity (``parts``: :func:`_entity_parts`; its
    items ``ranked`` by :func:`_ranked`) is made from. Every page: the entity's key and name,
    how many pages and items, the URL style and this module's limits, and the items the page
    lists (each one's mention lines and title, in order). The first page also: the entity's
    type, names and totals, every item's title (its search entry names them all), and the
    items whose sentences it shows (their mention spans and their files' digest). An item
    listed on a later page is shown by its mention lines, not its spans: a change that moves
    only its spans (an edit before a mention on its line) makes no page again (issue 17: each
    of a hub entity's pages was made again, ≈ 26,000 rows at 10,000 items, when one of its
    items changed)."""
    rest = ranked[SAID_ITEMS:]
    every = [ent.key, ent.name, len(parts), len(rest), lib.urls.directory_urls, SAID_ITEMS,
             ENTITY_PAGE_ITEMS]  # fmt: skip
    head = [
        ent.type,
        sorted(ent.names.items()),
        ent.count,
        ent.mentions,
        [lib.title(cid) for cid in found.items],
        [
            [cid, lines, said, lib.title(cid), lib.digests.get(cid, "") if said else ""]
            for cid, lines in ranked[:SAID_ITEMS]
            for said in [found.said.get(cid, "")]
        ],
    ]
    keys = []
    for n in range(len(parts)):
        listed = rest[n * ENTITY_PAGE_ITEMS : (n + 1) * ENTITY_PAGE_ITEMS]
        obj = [every, n, head if n == 0 else None, [[c, m, lib.title(c)] for c, m in listed]]
        keys.append(hashlib.sha256(json.dumps(obj, separators=(",", ":")).encode()).hexdigest())
    return keys


def _ranked(lib: Library, found: EntityItems) -> list[tuple[str, str]]:
    return sorted(found.items.items(), key=lambda kv: (-mention_count(kv[1]), lib.title(kv[0])))


def entity_pages(
    lib: Library, unchanged: Callable[[str, str | None], bool] = _never
) -> Iterator[PageOut]:
    """The entities index, and one page per entity that has one, one at a time. An entity
    page is rendered only when ``unchanged(src, entity_part_keys(…)[n])`` is false (its transcript
    reads are most of the cost of a rebuild after one item changed); the key of an entity
    none of whose items changed (not in ``lib.dirty_entities``) is not even computed when
    ``unchanged(src, None)`` says the page was made from its last key."""
    by_type: dict[str, list[Entity]] = defaultdict(list)
    for ent in lib.entities.values():
        by_type[ent.type].append(ent)
    index = [
        "<h1>Entities</h1>",
        f"<p>{plural(len(lib.entities), 'entity', 'entities')} in "
        f"{plural(len(lib.summaries), 'item')} "
        "(number of items · mentions).</p>",
    ]
    for etype in sorted(by_type):
        ents = sorted(by_type[etype], key=lambda e: (-e.count, -e.mentions, e.name.casefold()))
        index.append(h2("e-" + css_token(etype), f"{etype} ({len(ents)})"))
        chips = []
        for ent in ents:
            label = ent.name
            count = f'&#160;<span class="ak-count">{ent.count} · {ent.mentions}</span>'
            if lib.entity_has_page(ent.key):
                src = links.entity_page(ent.key)
                chips.append(a(lib.urls.href(links.ENTITIES, src), label) + count)
                parts = _entity_parts(ent.key, ent.count)
                if ent.key not in lib.dirty_entities and all(unchanged(p, None) for p in parts):
                    yield from ((p, None, None) for p in parts)
                    continue
                found = lib.entity_items(ent)
                parts = _entity_parts(ent.key, len(found.items))
                ranked = _ranked(lib, found)
                keys = entity_part_keys(lib, ent, found, ranked, parts)
                # Every part asked (its key is kept), the stale ones noted.
                stale = {
                    n
                    for n, (p, k) in enumerate(zip(parts, keys, strict=True))
                    if not unchanged(p, k)
                }
                if not stale:
                    yield from ((p, None, None) for p in parts)
                    continue
                titles = ", ".join(lib.title(cid) for cid in found.items)
                sections = [Section("", ent.name, f"{ent.type} · {titles}", INDEX_PAGE_BOOST)]
                # Pages 2, 3, … have no search entries of their own (the first has them all).
                for n, text in enumerate(_entity_page(lib, ent, found, ranked, parts, stale)):
                    yield parts[n], text, (sections if n == 0 else []) if text is not None else None
            else:
                chips.append(
                    a(lib.urls.href(links.ENTITIES, links.item_page(ent.first), "entities"), label)
                    + count
                )
        index.append('<p class="ak-chips">' + " · ".join(chips) + "</p>")
    yield links.ENTITIES, page("Entities", index, kind="entities"), None


def _entity_parts(key: str, count: int) -> list[str]:
    """The pages of an entity mentioned in ``count`` items (see :data:`ENTITY_PAGE_ITEMS`)."""
    return _page_parts(links.entity_page_part, key, count, SAID_ITEMS, ENTITY_PAGE_ITEMS)


def _pager(lib: Library, parts: list[str], src: str) -> str:
    """Links to every page of a paged entity or topic, the current one unlinked."""
    cells = [
        str(n) if p == src else a(lib.urls.href(src, p), str(n)) for n, p in enumerate(parts, 1)
    ]
    return f'<p class="ak-pages">Pages: {" · ".join(cells)}</p>'


def _entity_page(
    lib: Library,
    ent: Entity,
    found: EntityItems,
    ranked: list[tuple[str, str]],
    parts: list[str],
    wanted: Container[int],
) -> list[str | None]:
    """The entity's pages (its items ``ranked`` by :func:`_ranked`): the first, then one per
    :data:`ENTITY_PAGE_ITEMS` further items; only those ``wanted`` (by their place) are made,
    the others None."""
    src = parts[0]
    rest = ranked[SAID_ITEMS:]

    def row(part: str, listed: tuple[str, str]) -> str:
        cid, mentions = listed
        target = links.transcript_page(cid)
        tail = _line_links(lib, part, target, mention_lines(mentions), set())
        count = mention_count(mentions)
        return (
            f'<li>{_item_link(lib, part, cid)} <span class="ak-count">{count}</span>'
            f" <span>{tail}</span></li>"
        )

    if 0 not in wanted:
        return _paged(lib, ent.name, "entity", [], rest, parts, ENTITY_PAGE_ITEMS, row, wanted)
    out = [
        f"<h1>{esc(ent.name)}</h1>",
        f"<p>{badge('type', ent.type)} mentioned {plural(ent.mentions, 'time')} in "
        f"{plural(ent.count, 'item')}.</p>",
    ]
    others = sorted(n for n in ent.names if n != ent.name)
    if others:
        out.append(f"<p>Also written: {esc(', '.join(others))}</p>")
    # Sentences for the items that mention it most; a hub entity of a big library lists
    # the other items compactly, with line links only, so the page stays small.
    for cid, mentions in ranked[:SAID_ITEMS]:
        target = links.transcript_page(cid)
        said = said_spans(found.said.get(cid, ""))
        out.append(_group_head(lib, src, cid, plural(mention_count(mentions), "mention")))
        data = lib.transcript(cid) if said else b""
        said = [x for x in said if x[2] <= len(data)]
        if said:
            out.append('<ul class="ak-said">')
            for line, start, end in said:
                href = lib.urls.href(src, target, f"L{line}")
                out.append(_said(href, line, *sentence_around(data, start, end)))
            out.append("</ul>")
        tail = _line_links(lib, src, target, mention_lines(mentions), {x[0] for x in said})
        if tail:
            out.append(f'<p class="ak-also">{"also " if said else ""}{tail}</p>')
        out.append("</div>")
    if rest:
        out.append(f"<p>Also mentioned in {plural(len(rest), 'item')}:</p>")
    return _paged(lib, ent.name, "entity", out, rest, parts, ENTITY_PAGE_ITEMS, row, wanted)


def _page_parts(page_of: Callable[[str, int], str], key: str, count: int, said: int,
                per_page: int) -> list[str]:  # fmt: skip
    """The pages of an entity or topic of ``count`` items: the first (``said`` items shown
    in full, then ``per_page`` listed), and one per ``per_page`` further items."""
    rest = max(0, count - said)
    return [page_of(key, n) for n in range(1, max(1, -(-rest // per_page)) + 1)]


def _paged(lib: Library, name: str, kind: str, first: list[str], rest: Sequence[T],
           parts: list[str], per_page: int, row: Callable[[str, T], str],
           wanted: Container[int] | None = None) -> list[str | None]:  # fmt: skip
    """A paged entity's or topic's pages: ``first`` (its head and the items shown in full)
    with the first ``per_page`` of ``rest`` listed (``row`` renders one on a page), then one
    page per ``per_page`` further items, each linking to the others. ``wanted``: the places
    of the pages to make (the others None; None: all)."""
    src, out, title = parts[0], first, name
    pages: list[str | None] = []
    for n, part in enumerate(parts):
        if wanted is not None and n not in wanted:
            pages.append(None)
            continue
        listed = rest[n * per_page : (n + 1) * per_page]
        if n:
            title = f"{name} ({n + 1}/{len(parts)})"
            out = [
                f"<h1>{esc(title)}</h1>",
                f"<p>{a(lib.urls.href(part, src), name)}: items {n * per_page + 1}"
                f"–{n * per_page + len(listed)} of the {plural(len(rest), 'item')} "
                "listed after the first.</p>",
            ]
        if len(parts) > 1:
            out.append(_pager(lib, parts, part))
        if listed:
            out.append('<ul class="ak-mentions">')
            out.extend(row(part, x) for x in listed)
            out.append("</ul>")
        pages.append(page(title, out, kind=kind, hide=("toc",)))
    return pages


def said_spans(text: str) -> list[tuple[int, int, int]]:
    """``"line:start:end …"`` (an item summary's ``said``) → ``[(line, start, end), …]``."""
    out = []
    for part in text.split():
        fields = part.split(":")
        if len(fields) == 3 and all(f.isdigit() for f in fields):
            out.append((int(fields[0]), int(fields[1]), int(fields[2])))
    return out


def _line_links(
    lib: Library, src: str, target: str, mentions: list[int | None], shown: set[int]
) -> str:
    """Links to the lines of an item's mentions not in ``shown``, and how many have no
    valid span."""
    lines = sorted({m for m in mentions if m and m not in shown})
    out = " ".join(a(lib.urls.href(src, target, f"L{n}"), f"L{n}") for n in lines)
    missing = len(mentions) - sum(1 for m in mentions if m)
    if missing:
        out += f" <small>(+{missing} without a valid span)</small>"
    return out.strip()


def _group_head(lib: Library, src: str, cid: str, count: str) -> str:
    """Opens an item's group on an entity or topic page (closed by the caller)."""
    return (
        f'<div class="ak-group"><p class="ak-gt">{_item_link(lib, src, cid)} '
        f'<span class="ak-count">{esc(count)}</span></p>'
    )


def _said(href: str, line: int, before: str, words: str, after: str) -> str:
    """One mention in its sentence, the mentioned words marked, linked to its line."""
    return (
        f'<li><span class="ak-s">{esc(before)}'
        + (f'<mark class="ak-m">{esc(words)}</mark>' if words else "")
        + f"{esc(after)}</span> {a(href, f'L{line}')}</li>"
    )


def _sized(text: str) -> bytes:
    """``text`` in a topic page's key: its UTF-8 length, then its bytes (no separator can be
    forged inside a title or a term)."""
    raw = text.encode("utf-8", "surrogatepass")
    return b"%d:" % len(raw) + raw


def _chunk_keys(lib: Library, cid: str, positions: list[int]) -> bytes:
    """The chunks at ``positions`` of item ``cid`` in a topic page's key: the bytes of each
    one's line (its digest) and whether its passage is shown — ``i`` or ``o``: a passage is
    shown when its line (between the chunk's start and end line) is one of the item's lines,
    so the item's line count is named (``n``) only when that is not decided by the chunk's
    lines alone (an appended line changes no topic page)."""
    lines = (lib.by_id.get(cid) or {}).get("lines")
    digests = lib.chunk_digests
    out = bytearray()
    for pos in positions:
        digest, start, end = digests.get(pos, _NO_CHUNK)
        out += digest
        if not isinstance(lines, int) or start is None:
            out += b"n" + _sized(repr(lines))
            continue
        high = start if end is None or end < start else end
        if start >= 1 and high <= lines:
            out += b"i"
        elif start > lines or high < 1:
            out += b"o"
        else:
            out += b"n" + _sized(repr(lines))
    return bytes(out)


_NO_CHUNK: ChunkDigest = (bytes(16), None, None)


def topic_key(lib: Library, t: Topic) -> str:
    """Digest of everything a topic's pages are made from: the term and its synonyms, every
    entry's place, item, title, relevance and passage count (``t.listing``), for the items
    shown with passages the bytes of the chunks they may show (``lib.chunk_digests``: not
    their positions, which shift whenever an item before them gains or loses a chunk) and
    whether each is shown, the URL style and this module's limits."""
    h = hashlib.sha256()
    h.update(_sized(t.term) + _sized(json.dumps(t.synonyms)))
    limits = (CHUNK_LINKS, SNIPPETS, SNIPPET_CHARS, TOPIC_SAID_ITEMS, TOPIC_PAGE_ITEMS)
    h.update(b"%d;%d;%d;%d;%d;%d;" % (lib.urls.directory_urls, *limits))
    h.update(t.listing)
    out: list[bytes] = []
    for e in t.top:
        shown = e.chunks[:CHUNK_LINKS]
        out.append(b"%d;" % len(shown))
        out.append(_chunk_keys(lib, e.content_id, shown))
    h.update(b"".join(out))
    return h.hexdigest()


def _topic_parts(term: str, count: int) -> list[str]:
    """The pages of a topic of ``count`` items (see :data:`TOPIC_PAGE_ITEMS`)."""
    return _page_parts(links.topic_page_part, term, count, TOPIC_SAID_ITEMS, TOPIC_PAGE_ITEMS)


class TopicsChanged(ArkaiError):
    """``topics.json`` read again for the pages that are made does not hold what it held when
    their keys were made."""


def topic_pages(
    lib: Library, unchanged: Callable[[str, str | None], bool] = _never
) -> Iterator[PageOut]:
    """The topics index and one page per topic that has one, one at a time. A topic page is
    rendered only when ``unchanged(src, topic_key(…))`` is false; only the chunks of those
    pages are read (``lib.load_chunks``), not every chunk a topic page shows, and only their
    topics' entries (``lib.load_topic_items``), one topic at a time: the whole topic index is
    never held. Raises :class:`TopicsChanged` when what is read again is not what the keys
    were made from."""
    out = ["<h1>Topics</h1>"]
    if not lib.topics:
        out.append(
            "<p><em>No topic index yet: it is built by the <code>index</code> stage "
            "(<code>dvc repro index</code>).</em></p>"
        )
        yield links.TOPICS, page("Topics", out, kind="topics", hide=("toc",)), None
        return
    ranked = sorted(lib.topics.values(), key=lambda t: (-t.size, t.term))
    out.append(f"<p>{plural(len(ranked), 'topic')} (number of items).</p>")
    made: set[str] = set()
    chips = []
    for t in ranked:
        count = f'&#160;<span class="ak-count">{t.size}</span>'
        if not lib.topic_has_page(t.term):
            chips.append(esc(t.term) + count)
            continue
        parts = _topic_parts(t.term, t.size)
        chips.append(a(lib.urls.href(links.TOPICS, parts[0]), t.term) + count)
        key = topic_key(lib, t)
        # A list: every part's key is looked at (and kept).
        if all([unchanged(p, key) for p in parts]):
            yield from ((p, None, None) for p in parts)
        else:
            made.add(t.term)
    if made:
        if lib.load_chunks is not None:
            lib.chunks = lib.load_chunks(
                {pos for term in made for pos in lib.topic_shown_chunks(lib.topics[term])}
            )
        if lib.load_topic_items is None:
            raise TypeError("Library.load_topic_items is needed to make topic pages")
        left = set(made)
        for term, items in lib.load_topic_items(made):
            if term not in left:
                continue
            t = lib.topics[term]
            order = topic_order(known_entries(items, lib.titles), lib.titles)
            if listing_digest(order, lib.titles, {}) != t.listing:
                raise TopicsChanged(f"topics.json: topic {term!r} changed while the site was "
                                    "built", hint="build the site again")  # fmt: skip
            left.discard(term)
            parts = _topic_parts(term, t.size)
            titles = ", ".join(lib.title(i.content_id) for i in order)
            sections = [Section("", term, f"topic · {titles}", INDEX_PAGE_BOOST)]
            # Pages 2, 3, … have no search entries of their own (the first has them all).
            for n, text in enumerate(_topic_page(lib, t, order, parts)):
                yield parts[n], text, sections if n == 0 else []
        if left:
            raise TopicsChanged(f"topics.json: {plural(len(left), 'topic')} gone while the site "
                                f"was built ({', '.join(sorted(left)[:3])})",
                                hint="build the site again")  # fmt: skip
    out.append('<p class="ak-chips">' + " · ".join(chips) + "</p>")
    yield links.TOPICS, page("Topics", out, kind="topics", hide=("toc",)), None


def topic_passage(term: str, chunk: dict[str, Any]) -> tuple[int, str, str, str] | None:
    """``(line, before, term as written, after)``: the sentence of the chunk's text where the
    term first appears (its first sentence when the term is not there verbatim), or None
    when the chunk has no usable line."""
    line = chunk.get("start_line")
    end_line = chunk.get("end_line")
    text = chunk.get("text")
    if not isinstance(line, int):
        return None
    if not isinstance(text, str):
        return line, "", "", ""
    at = text.casefold().find(term.casefold()) if term else -1
    if at < 0:
        first = " ".join(text[:SNIPPET_CHARS].split())
        return line, "", "", first + ("…" if len(text) > SNIPPET_CHARS else "")
    lines_before = text[:at].count("\n")
    if isinstance(end_line, int) and line + lines_before <= end_line:
        line += lines_before
    head = text[:at].rsplit("\n", 1)[-1]
    tail = text[at + len(term) :].split("\n", 1)[0]
    for stop in (". ", "? ", "! "):
        if stop in head:
            head = head.rsplit(stop, 1)[1]
        if stop in tail:
            tail = tail.split(stop, 1)[0] + stop.strip()
    if len(head) > SNIPPET_CHARS:
        head = "…" + head[-SNIPPET_CHARS:]
    if len(tail) > SNIPPET_CHARS:
        tail = tail[:SNIPPET_CHARS] + "…"
    return line, head.lstrip(), text[at : at + len(term)], tail.rstrip()


def _topic_page(
    lib: Library, t: Topic, ranked: list[TopicEntry], parts: list[str]
) -> list[str | None]:
    """The topic's pages: the first (its best :data:`TOPIC_SAID_ITEMS` items with their
    passages, then the others listed), one per :data:`TOPIC_PAGE_ITEMS` further items.
    ``ranked``: its entries in page order (:func:`topic_order`)."""
    src = parts[0]
    out = [f"<h1>{esc(t.term)}</h1>"]
    if t.synonyms:
        out.append(f"<p>Synonyms: {esc(', '.join(t.synonyms))}</p>")
    for entry in ranked[:TOPIC_SAID_ITEMS]:
        cid = entry.content_id
        target = links.transcript_page(cid)
        passages: list[tuple[int, str, str, str]] = []
        for pos in entry.chunks[:CHUNK_LINKS]:
            chunk = lib.chunks.get(pos)
            if not chunk or chunk.get("content_id") != cid:
                continue
            found = topic_passage(t.term, chunk)
            if found is not None and 1 <= found[0] <= lib.by_id[cid]["lines"]:
                passages.append(found)
        rel = badge("rel-" + entry.relevance, entry.relevance)
        out.append(_group_head(lib, src, cid, plural(entry.passages, "passage")))
        out[-1] = out[-1].replace("</p>", f" {rel}</p>", 1)
        out.append('<ul class="ak-said">')
        for line, before, words, after in passages[:SNIPPETS]:
            href = lib.urls.href(src, target, f"L{line}")
            out.append(_said(href, line, before, words, after))
        out.append("</ul>")
        more = [
            a(lib.urls.href(src, target, f"L{p[0]}"), f"L{p[0]}", cls="ak-go")
            for p in passages[SNIPPETS:]
        ]
        if more:
            out.append(f'<p class="ak-also">also {" ".join(more)}</p>')
        out.append("</div>")
    rest = ranked[TOPIC_SAID_ITEMS:]
    if rest:
        out.append(f"<p>Also under this topic: {plural(len(rest), 'item')}.</p>")

    def row(part: str, entry: TopicEntry) -> str:
        rel = badge("rel-" + entry.relevance, entry.relevance)
        count = plural(entry.passages, "passage")
        return (
            f"<li>{_item_link(lib, part, entry.content_id)} "
            f'<span class="ak-count">{count}</span> {rel}</li>'
        )

    return _paged(lib, t.term, "topic", out, rest, parts, TOPIC_PAGE_ITEMS, row)


def validation(lib: Library) -> str:
    src = links.VALIDATION
    t = totals(lib.summaries)
    out = [
        "<h1>Validation</h1>",
        "<p>Every span is re-checked against the current transcript bytes at build time "
        "(the same check as <code>arkai validate</code>).</p>",
        f"<p>{_status_line(t)}</p>",
    ]
    rows = []
    for s in lib.summaries:
        c = s["counts"]
        if not (c["stale"] or c["unresolved"] or s["mentions_stale"] or not s["digest_ok"]):
            continue
        fix = (
            f"<code>arkai evidence reanchor {esc(s['id'])}</code>"
            if c["stale"] or s["mentions_stale"]
            else "<code>arkai extract</code>"
            if not s["digest_ok"]
            else ""
        )
        state = badge("resolved", "matches") if s["digest_ok"] else badge("stale", "changed")
        rows.append(
            [
                _item_link(lib, src, s["id"]),
                state,
                str(c["stale"]),
                str(c["unresolved"]),
                str(s["mentions_stale"]),
                fix,
            ]
        )
    out.append(h2("items", f"Items needing attention ({len(rows)})"))
    head = ("Item", "Transcript", "Stale", "Unresolved", "Stale mentions", "Repair")
    out += table(head, rows) if rows else ["<p>None: every span matches its transcript.</p>"]
    by_item = dict(lib.store.issues()) if lib.store else {}
    for status, heading in (("stale", "Stale evidence"), ("unresolved", "Unresolved evidence")):
        issues = [
            (s, i) for s in lib.summaries for i in by_item.get(s["id"], []) if i["status"] == status
        ]
        out.append(h2(status, f"{heading} ({len(issues)})"))
        if not issues:
            out.append("<p>None.</p>")
            continue
        rows = []
        for s, i in issues:
            line = i.get("line")
            where = esc(f"L{line}") if line else "—"
            if status == "stale":
                # The recorded line now holds other text: link to the claim's notice.
                notice = links.transcript_page(s["id"])
                where = a(lib.urls.href(src, notice, "E" + links.anchor_id(i["id"])), "notice")
                where = f"{esc(f'L{line}') if line else '—'} · {where}"
            rows.append(
                [
                    _item_link(lib, src, s["id"]),
                    esc(i["claim"]),
                    f'<q class="ak-q">{esc(i["quote"])}</q>',
                    where,
                    f"<code>{esc(i['id'])}</code>",
                ]
            )
        out += table(("Item", "Claim", "Quote", "Recorded line", "Evidence"), rows)
    return page("Validation", out, kind="validation")


@dataclass(frozen=True)
class _Claims:
    """Where the evidence IDs the beliefs page links to are."""

    stale: dict[str, str]
    """evidence ID → content id, for stale quotes."""
    owners: dict[str, tuple[str, bool]]
    """evidence ID → (content id, whether its quote has a valid span)."""


def _belief_claims(lib: Library, ids: Iterable[str]) -> _Claims:
    stale = {
        i["id"]: cid
        for cid, issues in (lib.store.issues() if lib.store else ())
        if cid in lib.pos
        for i in issues
        if i["status"] == "stale"
    }
    owners = lib.store.claim_owners(ids) if lib.store else {}
    return _Claims(stale, {e: o for e, o in owners.items() if o[0] in lib.pos})


def _belief_links(lib: Library, src: str, ids: list[str], claims: _Claims) -> list[str]:
    """Links to the highlighted quote of each evidence ID (a notice for stale ones, the item's
    claims when the quote has no valid span); imported or vanished episodes are counted."""
    out, other = [], 0
    for eid in ids:
        owner = claims.owners.get(eid)
        if eid in claims.stale:
            cid = claims.stale[eid]
            href = lib.urls.href(src, links.transcript_page(cid), "E" + links.anchor_id(eid))
            out.append(a(href, lib.title(cid), cls="ak-go") + " " + badge("stale"))
        elif owner is not None and owner[1]:
            cid = owner[0]
            href = lib.urls.href(src, links.transcript_page(cid), "E" + links.anchor_id(eid))
            out.append(a(href, lib.title(cid), cls="ak-go"))
        elif owner is not None:
            href = lib.urls.href(src, links.item_page(owner[0]), "claims")
            out.append(a(href, lib.title(owner[0]), cls="ak-go"))
        else:
            other += 1
    if other:
        out.append(esc(f"{other} imported or removed"))
    return out


#: Per belief on the beliefs page: the supporting and the contradicting quotes linked (its
#: first ones), and the changes of its history shown (its latest); the rest are counted and
#: ``arkai belief history ID`` lists them all. A belief of a big library is reinforced by
#: thousands of claims: every one linked made the page 9.6 MB at 10,000 items.
BELIEF_LINKS = 10
BELIEF_HISTORY = HISTORY_LATEST


def _capped(ids: Sequence[str]) -> list[str]:
    return list(ids[:BELIEF_LINKS])


def beliefs_key(lib: Library, shown: Sequence[Any], claims: _Claims) -> str:
    """Digest of everything the beliefs page is made from: the replayed state's files (the
    beliefs, their changes, the date as of which confidence is shown), for each quote linked
    where it is (its item, whether its span holds, whether it is stale) and its item's title,
    the URL style and this module's limits."""
    data = lib.beliefs or {}
    digest = data.get("digest", "")
    linked = []
    for b in shown:
        for eid in (*_capped(b.episodes), *_capped(b.contradicted_by)):
            owner = claims.owners.get(eid)
            stale = claims.stale.get(eid)
            cid = stale or (owner[0] if owner else None)
            linked.append([eid, owner, stale, lib.title(cid) if cid else None])
    obj = [digest, linked, lib.urls.directory_urls, BELIEF_LINKS, BELIEF_HISTORY]
    return hashlib.sha256(json.dumps(obj, separators=(",", ":")).encode()).hexdigest()


def _more(b_id: str, what: str) -> str:
    """What a belief's row leaves out, and the command that lists it."""
    return esc(f"{what}: ") + f"<code>arkai belief history {esc(b_id)}</code>"


def beliefs(lib: Library, unchanged: Callable[[str, str | None], bool] = _never) -> PageOut:
    """The belief memory (``beliefs/beliefs.json``): each belief's statement, type, effective
    confidence as of the latest episode, status, the quotes that support and contradict it
    (linked to their highlighted lines; the first :data:`BELIEF_LINKS` of each) and its
    history (the latest :data:`BELIEF_HISTORY` changes); its search entry holds the
    statements. No text when ``unchanged(src, beliefs_key(…))``: the page on disk was made
    from the same inputs."""
    from arkai.memory.replay import effective_confidence, to_date
    from arkai.model.belief import Belief

    data = lib.beliefs or {}
    as_of = data.get("as_of")
    src = links.BELIEFS
    day = to_date(str(as_of)) if as_of else None
    order = {"active": 0, "invalidated": 1, "forgotten": 2, "pruned": 3}
    shown = []
    for raw in data.get("beliefs") or []:
        b = Belief.from_dict(raw)
        eff = effective_confidence(b, day, float(data.get("half_life_days", 30))) if day else 0.0
        shown.append((order.get(b.status, 9), -eff, b.id, b, eff))
    shown.sort(key=lambda t: t[:3])
    claims = _belief_claims(
        lib, [e for *_, b, _ in shown for e in (*_capped(b.episodes), *_capped(b.contradicted_by))]
    )
    if unchanged(src, beliefs_key(lib, [t[3] for t in shown], claims)):
        return src, None, None
    changes = lib.load_belief_changes() if lib.load_belief_changes is not None else {}
    out = [
        "<h1>Beliefs</h1>",
        "<p>Every claim of the library replayed in date order: similar claims reinforce a "
        "belief, conflicting ones replace it, and confidence halves every "
        f"{float(data.get('half_life_days', 30)):g} days without reinforcement. "
        f"Confidence as of {esc(str(as_of or 'the latest episode'))}.</p>",
    ]
    rows = []
    for _, _, _, b, eff in shown:
        had = changes.get(b.id) or History()
        history = [
            f"{esc(c.date)} {esc(c.kind)}" + (f" — {esc(one_line(c.note))}" if c.note else "")
            for c in had.latest
        ]
        if had.count > len(had.latest):
            history.insert(0, _more(b.id, f"{had.count - len(had.latest)} earlier changes"))
        cell = esc(b.statement)
        if history:
            cell += "<details><summary>history</summary>" + "<br>".join(history) + "</details>"
        support = _belief_links(lib, src, _capped(b.episodes), claims)
        if len(b.episodes) > BELIEF_LINKS:
            support.append(_more(b.id, f"{len(b.episodes) - BELIEF_LINKS} more supporting quotes"))
        contra = _belief_links(lib, src, _capped(b.contradicted_by), claims)
        if len(b.contradicted_by) > BELIEF_LINKS:
            contra.append(
                _more(b.id, f"{len(b.contradicted_by) - BELIEF_LINKS} more contradicting")
            )
        rows.append(
            [
                cell,
                esc(b.type),
                f"{eff:.2f}" + (" " + badge("pinned") if b.pinned else ""),
                badge(css_token(b.status), b.status),
                " · ".join(support),
                " · ".join(contra),
            ]
        )
    out += (
        table(("Belief", "Type", "Confidence", "Status", "Support", "Contradicted by"), rows)
        if rows
        else ["<p><em>No beliefs.</em></p>"]
    )
    entry = Section("", "Beliefs", " · ".join(t[3].statement for t in shown))
    return src, page("Beliefs", out, kind="beliefs", hide=("toc",)), [entry]
