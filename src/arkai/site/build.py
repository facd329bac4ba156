"""``arkai site build``: Markdown pages for the library in ``.site-build/docs/``, a generated
MkDocs config that inherits the user's ``mkdocs.yml``, then ``mkdocs build`` into ``site/``.

Incremental at two levels:

- Pages. Each item's pages are regenerated only when one of its files changed (a digest
  of them is kept with the item's summary in ``.site-build/summaries.sqlite``, see
  :mod:`arkai.site.store`; only a slim record per item is held in memory) or what its item
  page shows from elsewhere (related items, topics, entity pages) changed; every page is
  written only when its bytes differ, so unchanged pages keep their mtime. Library-wide
  pages are made one at a time; an entity page — the costly kind, it reads transcripts — is
  rendered only when its key (:func:`arkai.site.indexes.entity_part_keys`) changed.
- HTML. MkDocs renders every page on a normal build. When the configuration, theme and
  arkai's version are unchanged since the last successful build, ``mkdocs build --dirty``
  is used instead: it renders just the pages whose Markdown is newer than their HTML. That
  is correct here because the navigation is short, explicit and fixed (no page's HTML
  depends on another page's content) and the site hook completes the search index and
  removes deleted pages afterwards (:mod:`arkai.site.hooks`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import itertools
import json
import logging
import os
import re
import shutil
import sys
import time
from collections.abc import Callable, Container, Generator, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from functools import cache
from importlib import metadata as importlib_metadata
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from arkai.adapters import manifest as folder_manifests
from arkai.adapters.chunkparts import FOLDER as CHUNKS_FOLDER
from arkai.adapters.chunkparts import ChunkParts
from arkai.adapters.fs import (
    atomic_write_bytes,
    atomic_write_text,
    check_inside,
    open_repo_file,
    read_repo_file,
    sweep_temp,
)
from arkai.adapters.layout import INDEX, LIBRARY, Item, item_at, item_folders, load_metadata
from arkai.adapters.memory import (
    History,
    histories,
    iter_changes,
    read_histories,
    read_state,
    state_digest,
)
from arkai.adapters.params import load_params
from arkai.adapters.store import read_json, read_own_json
from arkai.errors import ArkaiError, LibraryError, UnsafeFileError
from arkai.search.topics import chunk_offsets, iter_topics_json
from arkai.site import indexes, links
from arkai.site.collect import (
    ItemData,
    input_digest,
    input_stats,
    load_item,
    read_inputs,
    summarize_item,
)
from arkai.site.config import (
    BUILD_DIR,
    CSS,
    DOCS_DIR,
    HOOKS,
    JS,
    UserConfig,
    generated_config,
    load_user_config,
    reproducible_build_date,
)
from arkai.site.hooks import PAGES, SEARCH_DIR, SEARCH_SCOPE, read_pages
from arkai.site.indexes import Library, Topic, TopicEntry
from arkai.site.links import Urls
from arkai.site.pages import (
    ItemContext,
    entry_text,
    render_item_page,
    render_transcript_page,
    wisdom_sections,
)
from arkai.site.search import (
    ALL,
    DEFAULT_INDEX_MB,
    Section,
    encode,
    item_sections,
    search_scope,
    transcript_sections,
)
from arkai.site.siteurl import derive_site_url
from arkai.site.store import SummaryStore, pack_slim, slim_summary, stats_key
from arkai.site.topicmemo import FILE as TOPIC_MEMO
from arkai.site.topicmemo import Memo, TopicMemo, item_marks, memo_key, value_digest

#: Bump when the cached item summaries change shape (any change to this package's code
#: already regenerates every page: see :func:`code_digest`).
GENERATOR_VERSION = "2"
#: The summaries cache of earlier versions (one JSON file, read whole): removed.
LEGACY_CACHE = "cache.json"
STATE = "state.json"
#: The pages the build in progress is writing (:func:`_undo_unfinished`).
JOURNAL = "writing.jsonl"
CONFIG = "mkdocs.yml"
MAX_RELATED = 10
MAX_TOPICS = 20
#: Transcript bytes of parsed items kept between the two passes of :func:`generate_pages`
#: (more are parsed again: a full build of a big library must not hold them all).
LOADED_BYTES = 4_000_000
_RELEVANCE = {"high": 0, "medium": 1, "low": 2}
_RELEVANCE_NAME = {r: r for r in _RELEVANCE}
_RANK_NAME = {n: r for r, n in _RELEVANCE.items()}
_START_LINE = re.compile(rb'"start_line": ?(-?[0-9]+)[,}]')
_END_LINE = re.compile(rb'"end_line": ?(-?[0-9]+)[,}]')

log = logging.getLogger(__name__)


#: The DVC stage that builds the site (``stages/site.py``): its items are planned from the
#: manifests of library/ and extracted/ (its dependencies), and its run sealed under this name.
STAGE = "site"
STAGE_FOLDERS = ("library", "extracted")
#: Bump when what the stage's sealed result (:class:`_ItemPlan`) holds changes.
SEALED_VERSION = 1


@dataclass
class _ItemPlan:
    """The site stage's items planned from the manifests (:func:`_item_plan`): the item
    folders the manifest of library/ lists, and for each folder whose lines are those of the
    stage's last complete run, the input digest that run recorded for its item."""

    digest: str
    """The digest of the manifests planned from (with the inputs): the run is sealed only
    when they are still those when it ends."""
    inputs: dict[str, Any]
    folders: list[Path]
    unchanged: dict[str, str]
    """An unchanged item's folder (relative to the repo root, as its summary holds it) → the
    input digest sealed for it."""
    sealed: dict[str, str] = field(default_factory=dict)
    """Filled by the build: each item's folder → its input digest now (what is sealed)."""


def _item_plan(root: Path) -> _ItemPlan | None:
    """The plan of the ``site`` stage's items, as the validate, beliefs and index stages plan
    theirs (:func:`arkai.adapters.manifest.changes`); None when a manifest is missing (the
    library is then walked and every item's input files looked at)."""
    inputs = {"stage": STAGE, "sealed": SEALED_VERSION, "generator": GENERATOR_VERSION}
    plan = folder_manifests.planned(root, STAGE, STAGE_FOLDERS, inputs)
    if plan is None:
        return None
    lib = root / LIBRARY
    folders = in_path_order(lib, folder_manifests.item_folders(plan.now.manifests["library"]))
    unchanged: dict[str, str] = {}
    sealed, changes = plan.sealed, plan.changes
    if sealed is not None and changes is not None:
        rows = _sealed_rows(sealed.result)
        prefix = f"{LIBRARY}/"
        for rel, digest in (rows or {}).items():
            if rel.startswith(prefix) and rel[len(prefix) :] not in changes.folders:
                unchanged[rel] = digest
    return _ItemPlan(plan.now.digest, inputs, folders, unchanged)


def in_path_order(base: Path, rels: Iterable[str]) -> list[Path]:
    """``sorted(base / rel for rel in rels)`` (``rels``: normalised ``/``-separated relative
    paths), sorted by their parts as :class:`~pathlib.Path` compares them, not by comparing
    paths (≈ 50 ms at 10,000 items; a string sort differs: ``a-b/c`` before ``a/b``)."""
    return [base / rel for rel in sorted(rels, key=lambda rel: rel.split("/"))]


def _sealed_rows(data: bytes | None) -> dict[str, str] | None:
    """What :func:`_seal_items` sealed; None when it is not that."""
    try:
        doc = json.loads(data or b"")
        if doc["version"] != SEALED_VERSION or not isinstance(doc["items"], dict):
            return None
        return {str(k): str(v) for k, v in doc["items"].items()}
    except (ValueError, KeyError, TypeError):
        return None


def _seal_items(root: Path, plan: _ItemPlan) -> None:
    """Seal the stage's run with the manifests it planned from, read again (not held through
    the run): unsealed when they changed meanwhile."""
    doc = {"version": SEALED_VERSION, "items": plan.sealed}
    data = json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    folder_manifests.seal_as_planned(root, STAGE, STAGE_FOLDERS, plan.inputs, plan.digest,
                                     len(plan.sealed), data)  # fmt: skip


class SiteBuildError(ArkaiError):
    """``mkdocs build`` failed (bad configuration, a plugin error, strict-mode warnings)."""


@dataclass(frozen=True)
class SiteOptions:
    """``params.yaml`` → ``site:``."""

    entity_min_items: int = 1
    """An entity gets its own page when it occurs in at least this many items."""
    topic_min_items: int = 1
    """A topic gets its own page when at least this many items have it."""
    search_index_mb: float | None = DEFAULT_INDEX_MB
    """The most the search index should weigh, in MB (None: no limit; see
    :func:`arkai.site.search.search_scope`)."""

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> SiteOptions:
        site = params.get("site") if isinstance(params.get("site"), dict) else {}
        assert isinstance(site, dict)

        def positive(key: str) -> int:
            value = site.get(key, 1)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise LibraryError(f"params.yaml site.{key}: expected an integer ≥ 1")
            return value

        budget = site.get("search_index_mb", DEFAULT_INDEX_MB)
        if budget is not None and (
            isinstance(budget, bool)
            or not isinstance(budget, int | float)
            or not 0 < budget < float("inf")
        ):
            raise LibraryError(
                "params.yaml site.search_index_mb: expected a finite number of MB above 0, or "
                "null for no limit"
            )
        return cls(positive("entity_min_items"), positive("topic_min_items"),
                   None if budget is None else float(budget))  # fmt: skip


@dataclass
class SiteReport:
    items: int = 0
    items_regenerated: int = 0
    pages: int = 0
    pages_written: int = 0
    pages_removed: int = 0
    generate_s: float = 0.0
    mkdocs: str | None = None
    """``full``, ``dirty`` or None (not run)."""
    mkdocs_s: float = 0.0
    search_scope: str = ALL
    """What the site's search index covers (:data:`arkai.site.search.SCOPES`)."""
    build_dir: str = ""
    site_dir: str = ""
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# --------------------------------------------------------------------------- index files


def _topic_items(entry: Any, offsets: Mapping[str, int] | None) -> list[TopicEntry]:
    """One topic's items as the site keeps them: content id, relevance, the first
    :data:`indexes.CHUNK_LINKS` chunk positions in ``index/chunks/`` and how many there are.
    ``offsets``: each item's first position (:func:`arkai.search.topics.chunk_offsets`), which
    the item's own chunk numbers are added to (an item it does not have is left out); None for
    a version 1 file, whose numbers are positions already."""
    items = []
    for it in (entry or {}).get("items", []) if isinstance(entry, dict) else []:
        if not isinstance(it, dict) or not isinstance(it.get("content_id"), str):
            continue
        offset = 0 if offsets is None else offsets.get(it["content_id"])
        if offset is None:
            continue
        # Every item is named under many topics (≈ 60 each at 10,000 items): its ID and the
        # relevance are kept as one string each, not one per entry as JSON decodes them.
        rel = _RELEVANCE_NAME.get(str(it.get("relevance") or "low"), "low")
        # Only the first chunks are shown (and their count): the rest is not kept.
        chunks = [c for c in it.get("chunks") or () if type(c) is int and c >= 0]
        shown = [offset + c for c in chunks[: indexes.CHUNK_LINKS]]
        items.append(TopicEntry(sys.intern(it["content_id"]), rel, shown, len(chunks)))
    return items


_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()
# The form of one topics.json entry as the index stage writes it (compact canonical JSON, keys
# sorted: a ranking's entry, :func:`arkai.search.topics.entry_json`), the chunk numbers as
# ``{n}``, read without decoding. A JSON number or string of any other spelling (escapes,
# leading zeros, a sign), another key or whitespace does not match: the topic is decoded.
_NUMBERS = r"(?:0|[1-9][0-9]*)(?:,(?:0|[1-9][0-9]*))*"
_ENTRY_FORM = (
    r'\{{"chunks":\[({n})?\],(?:"condensed_chunks":\[(?:{n})?\],)?'
    r'"content_id":"([^"\\\x00-\x1f]+)","relevance":"(high|medium|low)"\}}'
)
# A topic's whole value in that form, ``{"items":[entry,…]}``, matched without capturing.
_ENTRY_BARE = re.sub(r"\((?!\?)", "(?:", _ENTRY_FORM).format(n=_NUMBERS)
_TOPIC_VALUE = re.compile(rf'\{{"items":\[(?:{_ENTRY_BARE}(?:,{_ENTRY_BARE})*)?\]\}}')
# The chunk numbers, content ID and relevance of each entry of a value that matched
# :data:`_TOPIC_VALUE` (its form known, the pattern that finds them need not check it again:
# at 10,000 items 0.38 → 0.15 CPU s). A string holds no quote, so ``"chunks":[`` opens an entry.
_ENTRY_PARTS = re.compile(
    r'"chunks":\[([0-9,]*)\],(?:"condensed_chunks":\[[0-9,]*\],)?'
    r'"content_id":"([^"]*)","relevance":"([a-z]+)"'
)


def _ws(text: str, i: int) -> int:
    m = _WS.match(text, i)
    assert m is not None  # the pattern matches the empty string
    return m.end()


def _json_object(text: str, i: int, member: Callable[[str, int], int]) -> int:
    """Walk the JSON object opening at ``i``: ``member(key, where its value starts)`` decodes
    each value and returns where it ends. Returns where the object ends; ValueError or
    IndexError when the text is not an object there."""
    if text[i] != "{":
        raise ValueError("not an object")
    i = _ws(text, i + 1)
    if text[i] == "}":
        return i + 1
    while True:
        key, i = _DECODER.raw_decode(text, i)
        i = _ws(text, i)
        if not isinstance(key, str) or text[i] != ":":
            raise ValueError("not a member")
        i = _ws(text, member(key, _ws(text, i + 1)))
        if text[i] == "}":
            return i + 1
        if text[i] != ",":
            raise ValueError("no separator")
        i = _ws(text, i + 1)


def _scan_topic(
    text: str, at: int, offsets: Mapping[str, int] | None
) -> tuple[list[TopicEntry], int] | None:
    """The topic whose value opens at ``at`` as :func:`_topic_items` keeps it, and where the
    value ends — its form checked by :data:`_TOPIC_VALUE` and its entries found by
    :data:`_ENTRY_PARTS` (each one call in C, not decoded; at 10,000 items ≈ 300,000 entries) — or
    None when the value is not exactly ``{"items":[entry,…]}`` of such entries (the caller then
    decodes it)."""
    whole = _TOPIC_VALUE.match(text, at)
    if whole is None:
        return None
    end = whole.end()
    links, intern, names, entry = indexes.CHUNK_LINKS, sys.intern, _RELEVANCE_NAME, TopicEntry
    place: Callable[[str], int | None] = (lambda _: 0) if offsets is None else offsets.get
    # Of an entry's chunk numbers only the first ``links`` are read as numbers; the rest are
    # counted. The form matched, so the entries are the whole value's, in its order.
    return [
        entry(intern(cid), names[rel],
              [offset + int(c) for c in numbers.split(",", links)[:links]] if numbers else [],
              numbers.count(",") + 1 if numbers else 0)
        for numbers, cid, rel in _ENTRY_PARTS.findall(text, at, end)
        if (offset := place(cid)) is not None
    ], end  # fmt: skip


def _read_topic(
    text: str, at: int, offsets: Mapping[str, int] | None
) -> tuple[list[TopicEntry], int]:
    """The topic whose value opens at ``at`` as :func:`_topic_items` keeps it, and where the
    value ends: read by :func:`_scan_topic` when in the index stage's form, else decoded
    (ValueError when it is not a JSON value there)."""
    fast = _scan_topic(text, at, offsets)
    if fast is not None:
        return fast
    value, end = _DECODER.raw_decode(text, at)
    return _topic_items(value, offsets), end


def _walk_topics(
    text: str, offsets: Mapping[str, int] | None
) -> tuple[dict[str, list[TopicEntry]], Any, Any] | None:
    """topics.json read one topic at a time: the members of ``topics`` are decoded and trimmed
    (:func:`_topic_items`) one by one, so the whole document never exists as Python objects
    (at 10,000 items its 77 MB took the stage from 66 to 402 MB). Returns the items by term,
    ``synonyms`` and ``version`` as ``json.loads`` would see them (of a repeated key, the
    last), or None when the text is not one JSON object (the caller then parses it whole)."""
    topics: dict[str, list[TopicEntry]] = {}
    found: dict[str, Any] = {}

    def topic(term: str, at: int) -> int:
        topics[term], end = _read_topic(text, at, offsets)
        return end

    def top(key: str, at: int) -> int:
        if key == "topics":
            topics.clear()
            if text[at] == "{":
                return _json_object(text, at, topic)
        value, end = _DECODER.raw_decode(text, at)
        if key in ("synonyms", "version"):
            found[key] = value
        return end

    try:
        end = _json_object(text, _ws(text, 0), top)
    except (ValueError, IndexError):
        return None
    if _ws(text, end) != len(text):
        return None
    return topics, found.get("synonyms"), found.get("version")


_TOPICS_OPEN = '  "topics": {\n'
_TOPIC_INDENT = "    "  # of a topic's line inside ``topics``

#: A topic read from ``topics.json``: its term and items as :func:`_topic_items` keeps them
#: (or as a memo kept them), and its value's digest when a memo is kept.
_TopicRead = tuple[str, list[TopicEntry] | Memo, bytes | None]
#: A topic as the pages made again read it: its term and items.
_TopicRead2 = tuple[str, list[TopicEntry]]
#: A reader of ``topics.json``: each topic (those ``wanted`` only, when given), then returns
#: ``(synonyms, version)``, or None when the file is not in the form it reads.
_TopicReader = Callable[
    [Path, Mapping[str, int] | None, Container[str] | None, TopicMemo | None],
    Generator[_TopicRead, None, tuple[Any, Any] | None],
]


def _line_term(line: str) -> tuple[str, int] | None:
    """The term a topic line of :func:`arkai.search.topics.iter_topics_json` opens with, and
    where it ends; None when the line does not open with a JSON string."""
    try:
        term, at = _DECODER.raw_decode(line, len(_TOPIC_INDENT))
    except ValueError:
        return None
    return (term, at) if isinstance(term, str) else None


def _topic_line(
    line: str, offsets: Mapping[str, int] | None
) -> tuple[str, list[TopicEntry], str] | None:
    """One line of the ``topics`` object as :func:`arkai.search.topics.iter_topics_json`
    writes it, ``    "term": {value}`` and a comma or not: the term, its items as
    :func:`_topic_items` keeps them and the line with ``null`` for the value; None when the
    line is not a member and its value whole."""
    opened = _line_term(line)
    if opened is None or not line.startswith(": ", opened[1]):
        return None
    term, at = opened[0], opened[1] + 2
    try:
        items, end = _read_topic(line, at, offsets)
    except ValueError:
        return None
    rest = line[end:]
    if rest not in (",\n", "\n"):
        return None
    return term, items, line[:at] + "null" + rest


def _each_topic(
    path: Path,
    offsets: Mapping[str, int] | None,
    wanted: Container[str] | None = None,
    memo: TopicMemo | None = None,
) -> Generator[_TopicRead, None, tuple[Any, Any] | None]:
    """topics.json read a line at a time in the layout the index stage writes (a topic per
    line, :func:`arkai.search.topics.iter_topics_json`), so neither the file's text nor every
    topic is ever whole in memory: yields each topic in the file's order, then returns
    ``(synonyms, version)`` as :func:`_walk_topics` gives them for the same text — or None
    when the file is laid out otherwise, once what was yielded is found not to be the file's
    (the caller then walks it whole).

    Each topic line's value is read (:func:`_scan_topic`, else decoded) and replaced by
    ``null``; what remains — the other lines and the terms — must parse, and must be exactly
    what the writer makes of the parsed synonyms, the terms in their order and the version:
    any other layout, a repeated term, a ``topics`` line inside another value, has no such
    remainder.

    ``wanted``: only these topics' values are read (the file read again, for the pages that
    are made, after a first read checked it); the other lines are passed over, the layout is
    not checked and None is returned.

    ``memo``: a topic whose value has the digest the memo kept it under is yielded as the
    memo's (:class:`arkai.site.topicmemo.Memo`), its value not read; each other topic comes
    with its value's digest (to be kept), else None."""
    terms: list[str] = []
    rest: list[str] = []
    inside = False
    with io.TextIOWrapper(open_repo_file(path, path.parent), encoding="utf-8", newline="") as fh:
        for line in fh:
            if inside and line.startswith(_TOPIC_INDENT):
                if wanted is not None:
                    opened = _line_term(line)
                    if opened is None or opened[0] not in wanted:
                        continue
                digest = None
                if memo is not None and (opened := _line_term(line)) is not None:
                    at = opened[1] + 2
                    end = len(line) - (2 if line.endswith(",\n") else 1)
                    if line.startswith(": ", opened[1]) and line.endswith("\n") and end > at:
                        digest = value_digest(line[at:end])
                        kept = memo.get(opened[0], digest, line)
                        if kept is not None:
                            terms.append(opened[0])
                            rest.append(line[:at] + "null" + line[end:])
                            yield opened[0], kept, digest
                            continue
                member = _topic_line(line, offsets)
                if member is None:
                    return None
                term, items, bare = member
                terms.append(term)
                rest.append(bare)
                yield term, items, digest
                continue
            inside = line == _TOPICS_OPEN and not terms
            rest.append(line)
    if wanted is not None:
        return None
    text = "".join(rest)
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("topics"), dict):
        return None
    written = {"synonyms": doc.get("synonyms"), "topics": dict.fromkeys(terms),
               "version": doc.get("version")}  # fmt: skip
    if set(doc) != set(written) or b"".join(iter_topics_json(written)) != text.encode("utf-8"):
        return None
    return doc.get("synonyms"), doc.get("version")


def _walked_topics(
    path: Path,
    offsets: Mapping[str, int] | None,
    wanted: Container[str] | None = None,
    memo: TopicMemo | None = None,
) -> Generator[_TopicRead, None, tuple[Any, Any] | None]:
    """topics.json of another layout: its text walked whole (:func:`_walk_topics`, every
    topic held at once), then each topic (``wanted`` only, when given) yielded by term;
    returns ``(synonyms, version)``, or None when the text is not one JSON object."""
    text = (read_repo_file(path, path.parent) or b"").decode("utf-8")
    walked = _walk_topics(text, offsets)
    del text
    if walked is None:
        return None
    by_term, synonyms, version = walked
    for term in sorted(by_term):
        if wanted is None or term in wanted:
            yield term, by_term[term], None
    return synonyms, version


def _decoded_topics(
    path: Path,
    offsets: Mapping[str, int] | None,
    wanted: Container[str] | None = None,
    memo: TopicMemo | None = None,
) -> Generator[_TopicRead, None, tuple[Any, Any] | None]:
    """topics.json parsed whole by :func:`read_json`, which names the file when it is not a
    JSON object (none: no topics)."""
    obj = read_json(path) or {}
    raw = obj.get("topics") if isinstance(obj.get("topics"), dict) else {}
    assert isinstance(raw, dict)
    for term in sorted(raw):
        if wanted is None or term in wanted:
            yield str(term), _topic_items(raw[term], offsets), None
    return obj.get("synonyms"), obj.get("version")


class _TopicsFound:
    """What :func:`_load_topics` keeps of each topic it reads (:func:`indexes.make_topic`,
    or the memo's: :mod:`arkai.site.topicmemo`) and each of its entries' item and relevance,
    for every item's first :data:`MAX_TOPICS` terms of each relevance (the terms come in
    order: the writer's layout has them sorted, the other readers sort them). ``offsets``:
    where each item's chunks start in ``index/chunks/`` (None: the file names positions);
    ``memo``: where a topic read afresh is kept (its line's value digest given with it)."""

    def __init__(
        self,
        titles: Mapping[str, str],
        known: list[str],
        offsets: Mapping[str, int] | None = None,
        memo: TopicMemo | None = None,
    ) -> None:
        self.titles = titles
        self.known = known
        self.index = memo.index if memo is not None else {c: i for i, c in enumerate(known)}
        self.offsets = offsets
        self.memo = memo
        self.heads: dict[str, bytes] = {}
        self.topics: dict[str, Topic] = {}
        self._terms: list[str] = []
        self._items: list[npt.NDArray[np.int32]] = []
        self._ranks: list[npt.NDArray[np.int8]] = []

    def add(self, term: str, items: list[TopicEntry] | Memo, digest: bytes | None = None) -> None:
        if isinstance(items, Memo):
            self._kept(term, items)
            return
        known = indexes.known_entries(items, self.titles)
        index = self.index
        idx = np.array([index[c] if (c := e.content_id) in index else self._place(c)
                        for e in known], dtype=np.int32)  # fmt: skip
        ranks = np.array([_RELEVANCE[e.relevance] for e in known], dtype=np.int8)
        topic = indexes.make_topic(term, known, [], self.titles, self.heads) if known else None
        if self.memo is not None and digest is not None:
            off = self.offsets or {}
            top = () if topic is None else tuple(
                (e.content_id, e.relevance, tuple(c - off[e.content_id] for c in e.chunks),
                 e.passages)
                for e in topic.top
            )  # fmt: skip
            size, count, listing = (
                (topic.size, topic.count, topic.listing) if topic else (0, 0, b"")
            )
            self.memo.put(term, digest, Memo(size, count, listing, top, idx, ranks))
        if topic is not None:
            self.topics[term] = topic
            self._entries(term, idx, ranks)

    def _place(self, cid: str) -> int:
        """An item ``titles`` names but does not list (a mapping that answers for any ID):
        numbered after the listed ones (a memo of them is then not used again: its items
        differ)."""
        self.index[cid] = len(self.known)
        self.known.append(cid)
        return self.index[cid]

    def _kept(self, term: str, memo: Memo) -> None:
        """A topic as the memo kept it (none: no entry of a library item)."""
        if not memo.size:
            return
        off = self.offsets or {}
        top = [TopicEntry(cid, _RELEVANCE_NAME[rel], [off[cid] + c for c in chunks], passages)
               for cid, rel, chunks, passages in memo.top]  # fmt: skip
        self.topics[term] = Topic(term, [], memo.size, memo.count, top, memo.listing)
        self._entries(term, memo.items, memo.ranks)

    def _entries(
        self, term: str, items: npt.NDArray[np.int32], ranks: npt.NDArray[np.int8]
    ) -> None:
        self._terms.append(term)
        self._items.append(items)
        self._ranks.append(ranks)

    def per_item(self) -> dict[str, ItemTopics]:
        """Per item its first :data:`MAX_TOPICS` terms of each relevance, in the order the
        topics came (and, within one, their entries), then its first :data:`MAX_TOPICS` of
        those, high before medium before low: every entry sorted at once by item, relevance
        and the order it came in (as arrays: a list of terms per item and relevance, grown
        entry by entry, was ≈ 0.3 s at 10,000 items)."""
        if not self._items:
            return {}
        items = np.concatenate(self._items).astype(np.int64)
        ranks = np.concatenate(self._ranks).astype(np.int64)
        terms = np.repeat(np.arange(len(self._terms)), [len(a) for a in self._items])
        order = np.lexsort((np.arange(len(items)), ranks, items))
        items, ranks, terms = items[order], ranks[order], terms[order]
        # The first MAX_TOPICS of each (item, relevance), then of each item.
        keep = _places(items * 3 + ranks) < MAX_TOPICS
        items, ranks, terms = items[keep], ranks[keep], terms[keep]
        keep = _places(items) < MAX_TOPICS
        items, ranks, terms = items[keep], ranks[keep], terms[keep]
        names = [self._terms[t] for t in terms.tolist()]
        starts = np.flatnonzero(np.diff(items, prepend=-1)).tolist()
        known = self.known
        out: dict[str, ItemTopics] = {}
        for lo, hi in itertools.pairwise([*starts, len(items)]):
            r = ranks[lo:hi]
            a = lo + int(np.searchsorted(r, 1))
            b = lo + int(np.searchsorted(r, 2))
            out[known[int(items[lo])]] = (tuple(names[lo:a]), tuple(names[a:b]),
                                          tuple(names[b:hi]))  # fmt: skip
        return out


def _places(group: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Each element's place within its run of equal values (``group`` sorted)."""
    starts = np.flatnonzero(np.diff(group, prepend=-1))
    sizes = np.diff(np.append(starts, len(group)))
    return np.arange(len(group)) - np.repeat(starts, sizes)


#: An item's first :data:`MAX_TOPICS` topics: its high, medium and low terms, each in term
#: order (tuples: ≈ 0.4 KB an item, 4.1 MB at 10,010 items, where a ``[term, relevance]``
#: list per topic was ≈ 1.7 KB).
ItemTopics = tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]


def item_topics(found: ItemTopics | None) -> Iterator[tuple[str, str]]:
    """An item's topics, best first: ``(term, relevance)``."""
    for rank, terms in enumerate(found or ()):
        name = _RANK_NAME[rank]
        for term in terms:
            yield term, name


def _drain(
    read: Generator[_TopicRead, None, tuple[Any, Any] | None],
    add: Callable[[str, list[TopicEntry] | Memo, bytes | None], None],
) -> tuple[Any, Any] | None:
    """Every topic of ``read`` given to ``add``; what the reader returns."""
    while True:
        try:
            term, items, digest = next(read)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        add(term, items, digest)


def _id_and_chunks(obj: dict[str, Any]) -> Any:
    """A ``catalog.json`` item (an object with ``id`` and ``chunks``) cut to those two; any
    other object as it is."""
    if "id" in obj and "chunks" in obj:
        return {"id": obj["id"], "chunks": obj["chunks"]}
    return obj


def _load_topics(
    index: Path, titles: Mapping[str, str], memo_path: Path | None = None
) -> tuple[dict[str, Topic], dict[str, ItemTopics], Callable[[set[str]], Iterator[_TopicRead2]]]:
    """topics.json → the topics of the items ``titles`` names, by term (each one's first
    entries and digest, :func:`indexes.make_topic`: never every entry at once); per item its
    first :data:`MAX_TOPICS` terms by relevance (:data:`ItemTopics`); and the reader of the topics'
    entries for the pages that are made (:attr:`indexes.Library.load_topic_items`). Chunk
    numbers become positions in ``index/chunks/`` through ``catalog.json``
    (:func:`arkai.search.topics.chunk_offsets`). ``memo_path``: the memo of the last read
    (:mod:`arkai.site.topicmemo`), used for the topics whose lines did not change and
    written back."""
    path = index / "topics.json"
    # Each item's catalog entry cut to its ID and chunk count as it is decoded: the entries
    # whole (≈ 1.5 KB each decoded) were most of this step's peak (issue 17).
    catalog = read_json(index / "catalog.json", _id_and_chunks)
    listed = catalog.get("items") if isinstance(catalog, dict) else None
    offsets = chunk_offsets(listed if isinstance(listed, list) else [])
    del catalog, listed
    known = sorted(cid for cid, title in titles.items() if title is not None)
    memo = None
    if memo_path is not None:
        marks = item_marks(titles, offsets)
        memo = TopicMemo.load(memo_path, memo_key(code_digest()), known, marks)
    reader: _TopicReader
    for reader in (_each_topic, _walked_topics, _decoded_topics):
        given: Mapping[str, int] | None = offsets
        while True:
            # The memo holds the items' own chunk numbers: used when the file names them.
            use = memo if reader is _each_topic and given is not None else None
            found = _TopicsFound(titles, known, given, use)
            try:
                result = _drain(reader(path, given, None, use), found.add)
            except (OSError, UnicodeDecodeError):
                # Missing, or not UTF-8: the last reader (read_json) says which.
                if reader is _decoded_topics:
                    raise
                result = None
            if result is None or result[1] != 1 or given is None:
                break
            given = None  # version 1: positions already, read again as they are
        if result is not None:
            break
    if found.memo is not None and result is not None and memo_path is not None:
        found.memo.save(memo_path)
    synonyms = result[0] if result is not None and isinstance(result[0], dict) else {}
    for term, topic in found.topics.items():
        topic.synonyms = [str(s) for s in synonyms.get(term) or []]

    def again(terms: set[str]) -> Iterator[_TopicRead2]:
        try:
            for term, items, _ in reader(path, given, terms, None):
                assert not isinstance(items, Memo)  # no memo: each read
                yield term, items
        except (OSError, UnicodeDecodeError) as exc:
            raise SiteBuildError(f"{path}: read again for the topic pages: {exc}") from None

    return found.topics, found.per_item(), again


def _line_number(field: re.Pattern[bytes], line: bytes) -> int | None:
    """The value of a line-number field of one chunk line, found without parsing
    it (None unless it occurs exactly once: inside a JSON string its quotes are escaped, so
    only the field itself can match)."""
    found = field.findall(line)
    return int(found[0]) if len(found) == 1 else None


def _chunk_lines(index: Path, wanted: set[int]) -> Iterator[tuple[int, bytes]]:
    """The chunk lines at these positions (0-based) of ``index/chunks/``: only the parts
    that hold one are read (none without a listing)."""
    parts = ChunkParts.load(index / CHUNKS_FOLDER) if wanted else None
    if parts is not None:
        yield from parts.lines_at(wanted)


def _chunk_digests(index: Path, wanted: set[int]) -> dict[int, indexes.ChunkDigest]:
    """The digest of the line of each chunk in ``wanted`` (a topic page's key names the bytes
    of the chunks it shows) and its first and last line. Lines are hashed, not parsed: the
    chunks themselves are read by :func:`_load_chunks` for the topic pages made again only."""
    return {
        pos: (
            hashlib.blake2b(line, digest_size=16).digest(),
            _line_number(_START_LINE, line),
            _line_number(_END_LINE, line),
        )
        for pos, line in _chunk_lines(index, wanted)
    }


def _load_chunks(index: Path, wanted: set[int]) -> dict[int, dict[str, Any]]:
    """The chunks at these positions of ``index/chunks/`` (unreadable lines are left out)."""
    out: dict[int, dict[str, Any]] = {}
    for pos, line in _chunk_lines(index, wanted):
        try:
            obj = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue
        if isinstance(obj, dict):
            out[pos] = {k: obj.get(k) for k in ("content_id", "start_line", "end_line", "text")}
    return out


def _load_related(index: Path, titles: dict[str, str]) -> dict[str, list[tuple[str, str, str]]]:
    """index/related.jsonl → per item ``(content_id, title, relation)`` (RELATED_TO, CITES),
    read line by line: the best :data:`MAX_RELATED` the site knows, in the index's order
    (tuples: 24 bytes a row less than lists, ≈ 20 rows an item; JSON writes them alike, so
    the item pages' keys are the same)."""
    out: dict[str, list[tuple[str, str, str]]] = {}
    path = index / "related.jsonl"
    if not path.is_file():
        return out
    with io.TextIOWrapper(open_repo_file(path, index), encoding="utf-8") as fh:
        for line in fh:
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                continue
            cid = obj.get("id") if isinstance(obj, dict) else None
            rows = obj.get("related") if isinstance(obj, dict) else None
            if cid not in titles or not isinstance(rows, list):
                continue
            # IDs and relations recur across items (20 neighbours each): one string apiece.
            picked = [
                (sys.intern(r[0]), titles[r[0]], sys.intern(str(r[1])))
                for r in rows
                if isinstance(r, list)
                and len(r) >= 2
                and isinstance(r[0], str)
                and r[0] in titles
                and r[0] != cid
            ]
            if picked:
                out[str(cid)] = picked[:MAX_RELATED]
    return out


def _load_beliefs(root: Path) -> dict[str, Any] | None:
    """``beliefs/beliefs.json`` and the digest of the replayed state's files, or None before
    the first replay (an unreadable file is left out of the site, and ``arkai validate`` /
    the stage report it). Each belief's changes are read only when the beliefs page is made
    (:func:`_belief_changes`)."""
    try:
        state = read_state(root)
        digest = state_digest(root) if state is not None else ""
    except LibraryError:
        return None
    if state is None:
        return None
    header, beliefs = state
    return {
        "as_of": header.get("as_of"),
        "half_life_days": float((header.get("params") or {}).get("half_life_days", 30)),
        "beliefs": [b.to_dict() for b in beliefs],
        "digest": digest,
    }


def _belief_changes(root: Path) -> dict[str, History]:
    """Each belief's history: the beliefs stage's fold of the change log when it mirrors
    ``beliefs/changes.jsonl`` (:func:`arkai.adapters.memory.read_histories`), else the log
    read a line at a time and folded here; none when unreadable."""
    got = read_histories(root)
    if got is not None:
        return got
    try:
        return histories(iter_changes(root))
    except LibraryError:
        return {}


# --------------------------------------------------------------------------- pages


def write_page(path: Path, data: bytes) -> bool:
    """Write ``data`` unless ``path`` holds it already (its mtime then stays, which is what
    ``mkdocs build --dirty`` goes by). Atomic, but not fsynced: pages are derived data."""
    try:
        if path.stat().st_size == len(data) and path.read_bytes() == data:
            return False
    except OSError:
        pass
    atomic_write_bytes(path, data, fsync=False)
    return True


@cache
def code_digest() -> str:
    """Digest of this package's code and assets: pages made by other code are regenerated,
    and the next MkDocs build is a full one."""
    h = hashlib.sha256()
    base = Path(__file__).parent
    for path in sorted([*base.glob("*.py"), *(base / "assets").glob("*")]):
        h.update(f"{path.name}:".encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def _write(
    build: Path,
    src: str,
    text: str,
    sections: list[Section] | None,
    report: SiteReport,
    journal: _Journal,
) -> None:
    """The page, and its search entries beside it (``search/<page>.json``), noted in the
    build's journal first."""
    journal.note(src)
    if write_page(build / DOCS_DIR / src, text.encode("utf-8")):
        report.pages_written += 1
    if sections is not None:
        write_page(build / SEARCH_DIR / f"{src}.json", encode(sections))


def _asset(name: str) -> bytes:
    return resources.files("arkai.site").joinpath("assets").joinpath(name).read_bytes()


def _files_under(folder: Path) -> set[str]:
    """The files under ``folder`` (paths relative to it, ``/``-separated) that ``is_file``
    would find — regular files, or links to them — from one ``scandir`` of each folder;
    linked folders are not entered. The temp files a killed build left are removed
    (:func:`arkai.adapters.fs.sweep_temp`)."""
    found: set[str] = set()
    todo = [(os.fspath(folder), "")]
    while todo:
        path, prefix = todo.pop()
        try:
            with os.scandir(path) as listing:
                for entry in listing:
                    if entry.is_dir(follow_symlinks=False):
                        todo.append((entry.path, f"{prefix}{entry.name}/"))
                    elif entry.name.endswith(".tmp") and sweep_temp(entry):
                        continue
                    elif entry.is_file():
                        found.add(prefix + entry.name)
        except OSError:  # no folder yet (a first build), or one that went meanwhile
            continue
    return found


def _remove_others(folder: Path, keep: set[str], suffix: str = "") -> int:
    """Delete the files under ``folder`` not named in ``keep`` (+ ``suffix``), and empty
    folders; return how many files went."""
    removed = 0
    if not folder.is_dir():
        return 0
    for path in sorted(folder.rglob("*"), reverse=True):
        rel = path.relative_to(folder).as_posix()
        if path.is_file() and (rel[: -len(suffix)] if suffix else rel) not in keep:
            path.unlink()
            removed += 1
        elif path.is_dir() and not any(path.iterdir()):
            path.rmdir()
    return removed


def _remove_files(folder: Path, gone: set[str], suffix: str = "") -> int:
    """Delete the files ``gone`` (+ ``suffix``) under ``folder`` and the folders they leave
    empty; return how many files went."""
    removed = 0
    for src in sorted(gone):
        path = folder / f"{src}{suffix}"
        if path.is_file():
            path.unlink()
            removed += 1
        parent = path.parent
        while parent != folder and parent.is_dir() and not any(parent.iterdir()):
            parent.rmdir()
            parent = parent.parent
    return removed


def _with_metadata(item: Item) -> Item:
    """The item with its ``metadata.json`` read (the build keeps only where each item is)."""
    return Item(item.root, item.path, load_metadata(item.path, item.root))


def generate_pages(
    root: Path,
    user: UserConfig,
    options: SiteOptions,
    report: SiteReport,
    progress: Callable[[int, int], None] | None = None,
    plan: _ItemPlan | None = None,
) -> Library:
    """Write every page into ``.site-build/docs`` (unchanged pages are left alone).

    Memory stays bounded by the item summaries: an item's files are parsed when its pages
    must be made, its transcript page is written at once, and the parsed item is kept for
    its item page (written once the library-wide context is known) only within
    :data:`LOADED_BYTES`; beyond that it is parsed again. Library-wide pages are made and
    written one at a time; an entity page is rendered only when its inputs changed.
    """
    build = root / BUILD_DIR
    urls = Urls(user.directory_urls)
    setting = {
        "version": GENERATOR_VERSION,
        "code": code_digest(),
        "directory_urls": urls.directory_urls,
    }
    (build / LEGACY_CACHE).unlink(missing_ok=True)
    build.mkdir(parents=True, exist_ok=True)
    journal = build / JOURNAL
    _undo_unfinished(build, journal)
    # The store commits when the pages are all written (on leaving its block, before the
    # journal's): a build that stops before leaves the journal for the next one.
    with _Journal(journal) as log, SummaryStore(build, setting) as store:
        lib = _generate(root, store, user, urls, options, report, progress, log, plan)
    journal.unlink()
    return lib


class _Journal:
    """The pages a build is writing, one JSON string a line, each flushed before its page is
    written (see :func:`_undo_unfinished`)."""

    def __init__(self, path: Path) -> None:
        self._fh = path.open("a", encoding="utf-8")

    def __enter__(self) -> _Journal:
        return self

    def __exit__(self, *_: object) -> None:
        self._fh.close()

    def note(self, src: str) -> None:
        self._fh.write(json.dumps(src) + "\n")
        self._fh.flush()


def _undo_unfinished(build: Path, journal: Path) -> None:
    """Remove the pages (and their search entries) that a build which did not finish wrote.

    Such a build wrote them from inputs its summary store never recorded (the store's
    transaction was rolled back, or never committed): were the inputs to go back to what the
    store holds, the pages would pass as made from them. A page that is gone is made again
    (:func:`_generate` checks that each page it keeps is there). A line that is not a page's
    path inside the build folder, reached through real folders (``check_inside``) and not
    itself a link, is skipped (the journal is a file like any other)."""
    try:
        lines = journal.read_text(encoding="utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return
    docs, entries = build / DOCS_DIR, build / SEARCH_DIR
    listed: set[str] = set()
    for line in lines:
        try:
            src = json.loads(line)
        except ValueError:
            continue
        if not isinstance(src, str) or not src or src.startswith("/") or "\\" in src:
            continue
        if any(part in ("", ".", "..") for part in src.split("/")):
            continue
        try:
            for folder, path in ((docs, docs / src), (entries, entries / f"{src}.json")):
                check_inside(path, folder)  # no linked folder on the way
                if path.is_symlink():
                    raise UnsafeFileError(f"{path}: a link")
        except UnsafeFileError:
            continue
        listed.add(src)
    _remove_files(docs, listed)
    _remove_files(entries, listed, ".json")
    journal.unlink()


def _generate(
    root: Path,
    store: SummaryStore,
    user: UserConfig,
    urls: Urls,
    options: SiteOptions,
    report: SiteReport,
    progress: Callable[[int, int], None] | None,
    journal: _Journal,
    plan: _ItemPlan | None = None,
) -> Library:
    build = root / BUILD_DIR
    docs = build / DOCS_DIR
    before = store.take_files()
    # Content id → (cache entry, slim summary): the whole summaries stay in the store.
    stored = {cid: (entry, slim) for cid, entry, slim in store.entries()}
    cached_pages = store.page_keys()
    # Content id and folder of each item: an item's metadata is held only while it is worked
    # on (read again for an item page that must be made). A folder whose input files have the
    # sizes and times stored for the item last built there (metadata.json among them) is that
    # item: its metadata is not read to learn its ID.
    at_path = {slim.get("path"): cid for cid, (_, slim) in stored.items()}
    items: list[tuple[str, str]] = []
    # Per item: its input stats, as the one string the store compares, and its folder's path
    # as the summary holds it (each made once, here).
    found_as: dict[str, tuple[list[list[int] | None], str, str]] = {}
    seen: set[str] = set()
    # As the DVC stage (``plan``): the item folders the manifest of library/ lists, and an
    # item whose folder's manifest lines are those of the stage's last complete run is taken
    # as its summary holds it when that holds the input digest sealed for it — its files are
    # not looked at (issue 17: ≈ 50,000 ``lstat`` calls at 10,000 items).
    sealed_digests = plan.unchanged if plan is not None else {}
    for place in plan.folders if plan is not None else item_folders(root):
        rel = place.relative_to(root).as_posix()
        cid = at_path.get(rel)
        sealed_digest = sealed_digests.get(rel)
        if (
            cid is not None
            and sealed_digest is not None
            and stored[cid][0].get("digest") == sealed_digest
            and isinstance(held := stored[cid][0].get("stats"), str)
        ):
            stats, skey = [], held  # (not needed: the summary holds)
        else:
            stats = input_stats(Item(root, place, {}))
            skey = stats_key(stats)
            if cid is None or stored[cid][0].get("stats") != skey:
                found = item_at(root, place)
                if found is None:
                    continue
                cid = found.id
        if cid in seen:
            report.warnings.append(f"{place}: duplicate content ID {cid}, skipped")
            continue
        seen.add(cid)
        items.append((cid, str(place)))
        found_as[cid] = (stats, skey, rel)
    del at_path
    # The entities of the items that are new, changed or gone: only their pages can change.
    dirty_entities: set[str] = set()
    for cid in set(stored) - seen:
        dirty_entities.update(store.item_entity_keys(cid))
        store.remove(cid)
        del stored[cid]
    loaded: dict[str, ItemData] = {}
    loaded_bytes = 0
    entries: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
    touched: set[str] = set()
    regenerated: set[str] = set()
    keep: set[str] = set()

    # The pages and search entries on disk, one listing of each folder (two ``stat`` calls
    # per page cost more at 21,000 pages); one not listed is looked for (made in this run).
    pages_there, entries_there = _files_under(docs), _files_under(build / SEARCH_DIR)

    def fresh(entry: dict[str, Any], slot: str, key: str, src: str, searched: bool = True) -> bool:
        """Whether the page ``src`` is on disk (with its search entries, when ``searched``)
        and ``entry`` says it was made from ``key``."""
        found = f"{src}.json"
        return (
            entry.get(slot) == key
            and (src in pages_there or (docs / src).is_file())
            and (not searched or found in entries_there or (build / SEARCH_DIR / found).is_file())
        )

    for n, (cid, folder) in enumerate(items, 1):
        # Where the item's files are (its metadata is read only when the item is loaded).
        item = Item(root, Path(folder), {"id": cid})
        stats, skey, rel = found_as.pop(cid)
        entry, slim = stored.pop(item.id, (None, None))
        data: ItemData | None = None
        # A folder renamed with its files unchanged: the summary holds the old path.
        moved = slim is not None and slim.get("path") != rel
        if entry is None or slim is None or moved or entry.get("stats") != skey:
            blobs = read_inputs(item, stats)
            dg = input_digest(blobs)
            if entry is None or slim is None or moved or entry.get("digest") != dg:
                data = load_item(_with_metadata(item), blobs)
                summary = summarize_item(data)
                entry, slim = {"digest": dg, "stats": stats}, pack_slim(slim_summary(summary))
                entry["listed"] = _listed_digest(slim, summary["issues"])
                dirty_entities.update(store.item_entity_keys(item.id))
                store.put(item.id, entry, summary)
                dirty_entities.update(e[0] for e in summary["entities"])
                del summary
            entry["stats"] = stats
            touched.add(item.id)
        if item.id not in touched:
            # Only written back for touched items: not kept (a fifth of an item's memory).
            entry.pop("stats", None)
        entries[item.id] = (entry, slim)
        if plan is not None:
            plan.sealed[rel] = entry["digest"]
        # The transcript page depends on the item's files only: made now.
        src = links.transcript_page(item.id)
        keep.add(src)
        if not fresh(entry, "transcript_key", entry["digest"], src):
            data = data or load_item(_with_metadata(item))
            text = render_transcript_page(data, slim, urls)
            _write(build, src, text, transcript_sections(data, slim["title"]), report, journal)
            entry["transcript_key"] = entry["digest"]
            regenerated.add(item.id)
            touched.add(item.id)
        if data is not None and loaded_bytes + len(data.data) <= LOADED_BYTES:
            loaded[item.id] = data
            loaded_bytes += len(data.data)
        del data, item
        if progress is not None:
            progress(n, len(items) * 2)
    del stored
    summaries = [entries[cid][1] for cid, _ in items]
    listed = _listing_key(items, entries, options)
    store.update_entities(dirty_entities, {cid: n for n, (cid, _) in enumerate(items)})
    index = root / INDEX
    lib = Library(
        summaries,
        user.site_name,
        urls,
        beliefs=_load_beliefs(root),
        load_belief_changes=lambda: _belief_changes(root),
        entity_min_items=options.entity_min_items,
        topic_min_items=options.topic_min_items,
        root=root,
        digests={cid: e["digest"] for cid, (e, _) in entries.items()},
        store=store,
        dirty_entities=dirty_entities,
    )
    lib.topics, per_item, lib.load_topic_items = _load_topics(
        index, lib.titles, root / BUILD_DIR / TOPIC_MEMO
    )
    wanted = {c for t in lib.topics.values() if lib.topic_has_page(t.term)
              for c in lib.topic_shown_chunks(t)}  # fmt: skip
    lib.chunk_digests = _chunk_digests(index, wanted)
    lib.load_chunks = lambda positions: _load_chunks(index, positions)
    related = _load_related(index, {s["id"]: s["title"] for s in summaries})
    every_entity_page = options.entity_min_items <= 1

    def item_entity_pages(cid: str) -> list[str]:
        return sorted({k for k in lib.item_entity_keys(cid) if lib.entity_has_page(k)})

    for n, (cid, folder) in enumerate(items, 1):
        entry, summary = entries[cid]
        ctx = ItemContext(
            # Every entity of an item has a page when one item is enough (the default): the
            # list then follows from the item's files (its digest), and is read from the
            # store only when the page is made.
            entity_pages=["*"] if every_entity_page else item_entity_pages(cid),
            topics=[
                [t, r, "1" if lib.topic_has_page(t) else ""]
                for t, r in item_topics(per_item.get(cid))
            ],
            related=related.get(cid, []),
        )
        item_key = hashlib.sha256(
            (entry["digest"] + json.dumps(ctx.to_dict(), sort_keys=True)).encode()
        ).hexdigest()
        src = links.item_page(cid)
        keep.add(src)
        if not fresh(entry, "item_key", item_key, src):
            if every_entity_page:
                ctx = dataclasses.replace(ctx, entity_pages=item_entity_pages(cid))
            data = loaded.pop(cid, None) or load_item(
                _with_metadata(Item(root, Path(folder), {"id": cid}))
            )
            text = render_item_page(data, summary, ctx, urls)
            wisdom = [
                (
                    anchor,
                    heading,
                    [value] if isinstance(value, str) else [entry_text(v) for v in value],
                )
                for anchor, heading, value in wisdom_sections(data)
            ]
            _write(build, src, text, item_sections(data, summary, wisdom), report, journal)
            entry["item_key"] = item_key
            regenerated.add(cid)
            touched.add(cid)
            del data
        loaded.pop(cid, None)
        if progress is not None:
            progress(len(items) + n, len(items) * 2)
    for cid in touched:
        store.put(cid, entries[cid][0], None)
    # The library-wide pages need none of these (every item's cache entry, its related items
    # and the loaded items: ≈ 1.4 KB an item, held through those pages before; issue 17).
    del entries, related, loaded
    report.items_regenerated = len(regenerated)
    page_keys: dict[str, str] = {}

    def unchanged(src: str, key: str | None, searched: bool = True) -> bool:
        """Whether the page on disk was made from ``key`` (None: from its last key);
        ``searched``: a page with search entries (they must be on disk too)."""
        old = cached_pages.get(src)
        page_keys[src] = old if key is None and old is not None else key or ""
        return (
            old is not None and old == page_keys[src] and fresh({"k": old}, "k", old, src, searched)
        )

    def listing(src: str, make: Callable[[indexes.Library], str], *more: Any) -> indexes.PageOut:
        """A library-wide listing (no search entries of its own), made only when what
        :func:`_listing_key` covers or ``more`` changed since the page on disk was made."""
        if listed is None:
            page_keys[src] = ""
            return src, make(lib), None
        key = hashlib.sha256(json.dumps([listed, *more]).encode()).hexdigest()
        return src, None if unchanged(src, key, searched=False) else make(lib), None

    # What the search covers, from the entries of the item and transcript pages (all made by
    # now; the library-wide pages' are a small share): the home page says it.
    lib.search_scope, lib.search_bytes = _scope(build, keep, options.search_index_mb)
    lib.search_index_mb = options.search_index_mb
    report.search_scope = lib.search_scope
    write_page(build / SEARCH_SCOPE, json.dumps({"scope": lib.search_scope}).encode())
    # (The home page also shows how many entities there are and what the search covers.)
    shown = [lib.site_name, len(lib.entities), lib.search_scope, lib.search_index_mb,
             indexes.search_size(lib) if lib.search_scope != ALL else None]  # fmt: skip
    pages: Iterable[indexes.PageOut] = itertools.chain(
        [
            listing(links.HOME, indexes.home, *shown),
            listing(links.LIBRARY, indexes.library_by_type),
            listing(links.LIBRARY_DATES, indexes.library_by_date),
            listing(links.VALIDATION, indexes.validation),
        ],
        ((tag_src, tag_text, None) for tag_src, tag_text in indexes.tag_pages(lib).items()),
        indexes.entity_pages(lib, unchanged),
        indexes.topic_pages(lib, unchanged),
        [indexes.beliefs(lib, unchanged)] if lib.beliefs is not None else [],
    )
    for page_src, body, sections in pages:
        keep.add(page_src)
        if body is not None:
            _write(build, page_src, body, sections, report, journal)
    for name, src in (("arkai.css", CSS), ("arkai.js", JS)):
        keep.add(src)
        write_page(docs / src, _asset(name))
    if before is None:
        report.pages_removed = _remove_others(docs, keep)
        _remove_others(build / SEARCH_DIR, keep, ".json")
    else:
        report.pages_removed = _remove_files(docs, before - keep)
        _remove_files(build / SEARCH_DIR, before - keep, ".json")
    store.set_files(keep)
    report.items = len(items)
    report.pages = len([k for k in keep if k.endswith(".md")])
    store.set_page_keys(page_keys)
    return lib


def _listed_digest(slim: Mapping[str, Any], issues: Any) -> str:
    """A digest of what the library-wide listings show of one item: the fields of its slim
    summary they read (:data:`indexes.LISTING_FIELDS`) and its issues (kept in its cache
    entry as ``listed``; :func:`_listing_key`)."""
    shown = {k: slim.get(k) for k in indexes.LISTING_FIELDS}
    text = json.dumps([shown, issues], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _listing_key(
    items: list[tuple[str, str]],
    entries: Mapping[str, tuple[dict[str, Any], dict[str, Any]]],
    options: SiteOptions,
) -> str | None:
    """What the library-wide listings (home, the library by type and by date, validation)
    are made from: what they show of each item (:func:`_listed_digest`), in the
    items' order, and the entity and topic thresholds; None when an item's entry holds no
    such digest (the listings are then made). The generator's version and code and the URL
    style empty the summary store, these digests included, when they change. Making the four
    pages was ≈ 0.16 s of a one-item rebuild at 10,000 items; an edit that changes no title,
    count, date or issue of an item (a comment in its review, a transcript line that adds no
    claim or entity) now leaves them as they are."""
    h = hashlib.sha256(json.dumps([options.entity_min_items, options.topic_min_items]).encode())
    for cid, _ in items:
        listed = entries[cid][0].get("listed")
        if not isinstance(listed, str):
            return None
        h.update(f"{cid}\0{listed}\n".encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def _scope(build: Path, pages: Iterable[str], budget_mb: float | None) -> tuple[str, int]:
    """The search scope for the entries files of ``pages`` as they now are, and their bytes
    (one ``stat`` a page)."""
    sizes = [0, 0]
    folder = os.fspath(build / SEARCH_DIR)  # a string: Path objects cost more than the stat
    for src in pages:
        try:
            size = os.stat(f"{folder}/{src}.json").st_size
        except OSError:
            continue  # no entries file: nothing to count
        sizes[links.is_transcript(src)] += size
    budget = None if budget_mb is None else int(budget_mb * 1_000_000)
    return search_scope(sizes[1], sizes[0], budget), sizes[0] + sizes[1]


# --------------------------------------------------------------------------- mkdocs


def _fingerprint(user: UserConfig, config_text: str) -> str:
    """Digest of what the MkDocs build depends on beside the pages: a new one makes the next
    build a full one. The generated config names where this package's hook file is
    installed; its code is in :func:`code_digest`, so the same code installed elsewhere (a
    new virtual environment, another checkout) is the same build."""
    h = hashlib.sha256()
    h.update(config_text.replace(str(HOOKS), "arkai/site/hooks.py").encode("utf-8"))
    if user.path is not None:
        h.update(user.path.read_bytes())
    for dist in ("mkdocs", "mkdocs-material", "arkai"):
        try:
            h.update(f"{dist}={importlib_metadata.version(dist)};".encode())
        except importlib_metadata.PackageNotFoundError:
            h.update(f"{dist}=-;".encode())
    h.update(GENERATOR_VERSION.encode())
    h.update(code_digest().encode())
    custom = user.custom_dir
    if custom is not None and custom.is_dir():
        for path in sorted(custom.rglob("*")):
            if path.is_file():
                st = path.stat()
                h.update(f"{path.relative_to(custom)}:{st.st_size}:{st.st_mtime_ns};".encode())
    return h.hexdigest()


def run_mkdocs(config_file: Path, *, dirty: bool, verbose: bool = False) -> None:
    """``mkdocs build`` in this process (``--dirty`` when asked)."""
    from mkdocs import exceptions as mk_exceptions
    from mkdocs.commands import build as mk_build
    from mkdocs.config import load_config

    logger = logging.getLogger("mkdocs")
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.INFO if verbose else logging.WARNING)
    handler.setFormatter(logging.Formatter("mkdocs: %(levelname)s: %(message)s"))
    old_level, old_propagate = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.INFO if verbose else logging.WARNING)
    logger.propagate = False
    try:
        cfg = load_config(config_file=str(config_file))
        cfg.plugins.on_startup(command="build", dirty=dirty)
        try:
            with reproducible_build_date():
                mk_build.build(cfg, dirty=dirty)
        finally:
            cfg.plugins.on_shutdown()
    except (mk_exceptions.MkDocsException, SystemExit) as exc:
        raise SiteBuildError(f"mkdocs build failed: {exc}", hint=f"config {config_file}") from None
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
        logger.propagate = old_propagate


def prepare(
    root: Path,
    *,
    options: SiteOptions | None = None,
    report: SiteReport | None = None,
    progress: Callable[[int, int], None] | None = None,
    plan: _ItemPlan | None = None,
) -> tuple[Path, str, SiteReport]:
    """Generate the pages and the config; return (config path, config text, report)."""
    report = report or SiteReport()
    user = load_user_config(root)
    params = load_params(root)
    opts = options or SiteOptions.from_params(params)
    build = root / BUILD_DIR
    started = time.perf_counter()
    lib = generate_pages(root, user, opts, report, progress, plan)
    site_url = None if user.data.get("site_url") else derive_site_url(root, params)
    text = generated_config(
        user, build, topics=True, beliefs=lib.beliefs is not None, site_url=site_url
    )
    write_page(build / CONFIG, text.encode("utf-8"))
    report.generate_s = round(time.perf_counter() - started, 3)
    report.build_dir = str(build)
    report.site_dir = str(user.site_dir)
    return build / CONFIG, text, report


def build_site(
    root: Path,
    *,
    options: SiteOptions | None = None,
    mkdocs: bool = True,
    full: bool = False,
    verbose: bool = False,
    progress: Callable[[int, int], None] | None = None,
    stage: bool = False,
) -> SiteReport:
    """Generate the pages, then ``mkdocs build`` (dirty when that is safe, see module doc).
    ``stage``: run as the DVC stage, the items planned from the manifests (:func:`_item_plan`)
    unless ``full``, and the run sealed when it completes."""
    plan = _item_plan(root) if stage and not full else None
    config_file, text, report = prepare(root, options=options, progress=progress, plan=plan)
    if not mkdocs:
        return report
    user = load_user_config(root)
    build = config_file.parent
    site = user.site_dir
    fp = _fingerprint(user, text)
    state = read_own_json(build / STATE)  # (damaged: {}, a whole build)
    dirty = (
        not full
        and state.get("fingerprint") == fp
        and state.get("complete") is True
        and (site / "index.html").is_file()
        and read_pages(build) is not None
    )
    if not dirty:
        (build / PAGES).unlink(missing_ok=True)
    atomic_write_text(build / STATE, json.dumps({"fingerprint": fp, "complete": False}))
    started = time.perf_counter()
    run_mkdocs(config_file, dirty=dirty, verbose=verbose)
    report.mkdocs_s = round(time.perf_counter() - started, 3)
    report.mkdocs = "dirty" if dirty else "full"
    atomic_write_text(build / STATE, json.dumps({"fingerprint": fp, "complete": True}))
    if plan is not None:
        _seal_items(root, plan)
    return report


def clean(root: Path) -> None:
    """Remove the build folder (the next build regenerates everything)."""
    shutil.rmtree(root / BUILD_DIR, ignore_errors=True)
