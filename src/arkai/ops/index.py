"""The ``index`` stage: everything under ``index/`` (docs/index-format.md), rebuilt from files.

One stage over the whole library, incremental inside:

- ``catalog.json`` — the seed's catalog plus counts, git-tracked, rewritten only when it changes;
- ``chunks/`` — transcript windows and claim chunks (:mod:`arkai.search.chunks`), one line
  each, in parts of about 64 items (:mod:`arkai.adapters.chunkparts`): a part whose items are
  unchanged is kept, only a changed item's part written again (:class:`_Layout`);
- ``lexical/`` — a BM25 index over the chunks, rebuilt when the chunks or its parameters change;
- ``vectors/`` — chunk embeddings keyed by chunk key: only keys not yet stored are embedded
  (``full`` re-embeds everything; the keys are read from ``index/chunks/`` by pattern, kept per
  part, and only the lines to embed are parsed), keys no longer present are pruned;
- ``topics.json`` — the topic index (:mod:`arkai.search.topics`), merged with ``synonyms.yaml``;
- ``graph.json`` / ``graph.graphml`` — the knowledge graph (:mod:`arkai.search.graph`), its
  RELATED_TO edges between items kept incrementally (:mod:`arkai.search.graphcache`);
- ``related.jsonl`` — per item, the items it is related to, cites or is cited by (the site's
  related-items lists, read line by line);
- ``shards/`` — the condensed chunks of ``condensed/`` in shards (:mod:`arkai.ops.shards`;
  under ``dvc repro`` this stage, which owns ``index/``, builds them after ``condense``);
- ``manifest.json`` — counts, embedder, lexical parameters and file digests.

Every JSON file is canonical and written only when its bytes change, so re-running the stage
over an unchanged library leaves ``index/`` as it was. The manifest's file digests are
remembered by size, mtime and inode (:class:`FileDigests`), so an unchanged file is not read.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import sys
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import numpy as np

import arkai
from arkai.adapters import dvc, events
from arkai.adapters import manifest as folder_manifests
from arkai.adapters.beside import Beside, forking
from arkai.adapters.chunkparts import FOLDER as CHUNKS_FOLDER
from arkai.adapters.chunkparts import (
    LISTING,
    ChunkParts,
    Part,
    ends_part,
    is_part_name,
    real_folder,
    write_listing,
    write_part,
)
from arkai.adapters.fs import (
    TEMP_DIR,
    byte_view,
    fed,
    open_repo_file,
    read_array,
    read_repo_file,
    sweep_temps,
    write_chunks_if_changed,
    write_if_changed,
)
from arkai.adapters.itemcache import (
    CACHE_DIR,
    FileDigests,
    ItemCache,
    StatMemo,
    checked_head,
    open_checked,
    read_checked,
    stamp,
    text_lines,
    write_checked,
    write_checked_parts,
)
from arkai.adapters.itemtable import ItemTable
from arkai.adapters.layout import ENTITIES, EVIDENCE, LIBRARY, REVIEW, TRANSCRIPT, Item, load_items
from arkai.adapters.raytasks import executor_of
from arkai.adapters.repo import Repo
from arkai.adapters.review import apply_review, load_item_review
from arkai.adapters.shards import CONDENSED_FILE, SHARDS_DIR, read_condensed
from arkai.adapters.store import (
    parse_evidence,
    read_entities,
    read_own_json,
    write_json,
)
from arkai.core import canonjson
from arkai.core.hashing import DIGEST_PREFIX
from arkai.errors import LibraryError
from arkai.ops.shards import shard_library
from arkai.search.chunks import MAX_WORDS, TARGET_WORDS, Chunk
from arkai.search.citecache import update_cites
from arkai.search.derive import (
    DERIVE_VERSION,
    ItemRecord,
    chunk_tokens,
    derive_item,
    terms_from_dict,
)
from arkai.search.graph import (
    GraphItem,
    GraphSettings,
    cite_needles,
    features,
    node_id,
    quotes_digest,
)
from arkai.search.graphcache import UNION as RELATED_UNION
from arkai.search.graphcache import related_table, update_related
from arkai.search.graphparts import (
    SUMS,
    PartStore,
    counted_parts,
    graph_parts,
    iter_graphml,
    iter_json,
    related_inputs,
    related_inputs_of,
)
from arkai.search.lexindex import update_engine
from arkai.search.topics import (
    EntryJson,
    ItemTerms,
    KeptEntries,
    KeptEntriesError,
    TopicBuilder,
    TopicSettings,
    WrittenTopics,
    entry_json,
    load_synonyms,
    rounded,
    rounded_count,
    stem_key,
)

if TYPE_CHECKING:
    from arkai.search.termcounts import CountsFile

CATALOG_VERSION = 1
MANIFEST_VERSION = 1
SYNONYMS = "synonyms.yaml"
CATALOG = "catalog.json"
CHUNKS = CHUNKS_FOLDER
#: The one file the chunks were in before they were kept in parts (removed when found).
LEGACY_CHUNKS = "chunks.jsonl"
LEXICAL = "lexical"
VECTORS = "vectors"
TOPICS = "topics.json"
GRAPH_JSON = "graph.json"
GRAPHML = "graph.graphml"
RELATED = "related.jsonl"
MANIFEST = "manifest.json"
#: The digest of what the last run's derived files are a function of (in the item cache).
INPUTS = "inputs.json"
#: The remembered digests of index/ files (in the item cache; :class:`FileDigests`).
DIGESTS = "digests.json"
#: The remembered inputs keys of the items, by their files' stamps (in the item cache).
STAMPS = "stamps.json"
#: Each chunk part's keys, by the part's name (in the item cache; :class:`_PartKeys`).
PART_KEYS = "part-keys.bin"
#: Which items' lines each part of ``chunks/`` holds (in the item cache; :class:`_Layout`).
LAYOUT = "chunks-layout.json"
LAYOUT_VERSION = 2
#: Every item's ranked terms, a row per item (:class:`arkai.adapters.itemtable.ItemTable`).
RANKINGS = "rankings"
#: Every item's topic entries as the last build made them (:class:`KeptEntries`).
TOPIC_ENTRIES = "topic-entries.bin"
#: Every item's phrase ids, for the document frequencies (in the item cache; :class:`_PhraseTable`).
PHRASE_TABLE = "phrase-table.bin"
#: The term frequencies the BM25 index was last weighed from (:func:`_term_counts`).
LEXICAL_COUNTS = "lexical-counts.bin"
#: The vector store's segments last found intact (:func:`arkai.search.vectors.drop_damaged`).
VECTOR_CHECKS = "vector-segments.json"
#: The digests of the BM25 files as the lexical step last wrote them (:func:`_bm25_intact`).
LEXICAL_FILES = "lexical-files.json"
PHRASE_TABLE_FORMAT = 1
#: 2: each term's ``topics.json`` entry kept as its text (1: the terms as lists).
RANKINGS_VERSION = "rankings-2"
#: Every item's ``main`` record (:class:`ItemRecord`), a row per item under its inputs key:
#: one file read each run, not one per item (each item's other parts are read only when used).
RECORDS = "records"
RECORDS_VERSION = "records-1"

#: ``index:`` in params.yaml, for whatever a repo leaves out.
DEFAULTS: dict[str, Any] = {
    "embedder": "default",
    "batch_size": 64,
    "bm25": {"k1": 1.2, "b": 0.75},
    "chunks": {"target_words": TARGET_WORDS, "max_words": MAX_WORDS},
    "topics": {},
    "graph": {},
    "ann": {"threshold": 200_000, "nlist": 0, "nprobe": 48, "rebuild_fraction": 0.2},
}

ProgressFn = Callable[[int, int, str], None]


@dataclass
class IndexSummary:
    """Counts for one run of the stage."""

    items: int = 0
    chunks: int = 0
    transcript_chunks: int = 0
    claim_chunks: int = 0
    embedded: int = 0
    """Chunks embedded in this run."""
    reused: int = 0
    """Chunks whose vectors were already stored."""
    pruned: int = 0
    """Stored vectors removed because their chunk is gone."""
    embedder: str | None = None
    dim: int | None = None
    topics: int = 0
    nodes: int = 0
    edges: int = 0
    lexical_rebuilt: bool = False
    cache_hits: int = 0
    """Items whose cached records were used (their files unchanged since they were made)."""
    cache_rejected: int = 0
    """Cache entries found damaged or stale, and rebuilt."""
    ann: str | None = None
    """What happened to the ANN index (``built``, ``rebuilt``, ``updated``, ``kept``,
    ``removed``); ``None``: below ``index.ann.threshold``, none there."""
    lexical_engine: str | None = None
    """What happened to the lexical engine (``built``, ``rebuilt``, ``updated``, ``kept``,
    ``removed``); ``None``: below ``index.lexical.threshold``, none there."""
    written: list[str] = field(default_factory=list)
    """Index files whose bytes changed."""
    shards: dict[str, Any] | None = None
    """What the shard step did (:class:`arkai.ops.shards.ShardSummary`)."""
    beliefs_beside: str | None = None
    """What the beliefs stage's build started beside this stage did (:func:`_beliefs_beside`):
    ``"N beliefs"``, or ``"failed: …"`` (the beliefs stage then builds, and says why); None
    when none was started."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "items": self.items,
            "chunks": self.chunks,
            "transcript_chunks": self.transcript_chunks,
            "claim_chunks": self.claim_chunks,
            "embedded": self.embedded,
            "reused": self.reused,
            "pruned": self.pruned,
            "embedder": self.embedder,
            "dim": self.dim,
            "topics": self.topics,
            "nodes": self.nodes,
            "edges": self.edges,
            "lexical_rebuilt": self.lexical_rebuilt,
            "cache_hits": self.cache_hits,
            "cache_rejected": self.cache_rejected,
            "ann": self.ann,
            "lexical_engine": self.lexical_engine,
            "written": sorted(self.written),
            "shards": self.shards,
            "beliefs_beside": self.beliefs_beside,
        }


def index_params(params: dict[str, Any]) -> dict[str, Any]:
    """``index:`` from params.yaml over :data:`DEFAULTS`."""
    raw = params.get("index") or {}
    if not isinstance(raw, dict):
        raise LibraryError("params.yaml: `index` must be a mapping")
    out = {**DEFAULTS, **raw}
    for sub in ("bm25", "chunks", "topics", "graph", "ann"):
        out[sub] = {**DEFAULTS[sub], **(raw.get(sub) or {})}
    try:
        TopicSettings.from_params(out["topics"])
    except (TypeError, ValueError) as exc:
        raise LibraryError(f"params.yaml: index.topics: {exc}") from None
    return out


@dataclass
class _Loaded:
    """What the first pass keeps of one item: its record, never its text."""

    item: Item
    path: str
    key: str
    record: ItemRecord


def _read_text(path: Path, root: Path) -> str:
    data = read_repo_file(path, root, missing_ok=True)
    return "" if data is None else _decode(data, path)


def _decode(data: bytes, path: Path) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LibraryError(f"{path}: not valid UTF-8 ({exc.reason} at byte {exc.start})") from None


def _settings_key(ip: dict[str, Any]) -> bytes:
    """What, besides an item's files, its cached records (and the manifest's ``inputs``)
    depend on: a new arkai version re-derives everything once."""
    cp, gs = ip["chunks"], GraphSettings.from_params(ip["graph"])
    shape = [int(cp["target_words"]), int(cp["max_words"]), gs.min_confidence, gs.max_evidence]
    return canonjson.dumps([arkai.__version__, DERIVE_VERSION, *shape]).encode("utf-8")


def _inputs_files(item: Item) -> tuple[str, ...]:
    """The paths of the files an item's records are derived from, as strings (each item's
    are stamped on every run: Path objects cost more than the ``lstat`` calls)."""
    own, extracted = os.fspath(item.path), os.fspath(item.extracted)
    return (
        os.path.join(own, TRANSCRIPT),
        os.path.join(extracted, EVIDENCE),
        os.path.join(own, REVIEW),
        os.path.join(extracted, ENTITIES),
        os.path.join(item.condensed, CONDENSED_FILE),
    )


def _inputs_key(
    item: Item, settings: bytes, memo: StatMemo | None = None
) -> tuple[str, bytes | None, bytes | None]:
    """The digest of everything an item's records are derived from (its transcript, evidence,
    review, entities and condensed chunks, byte for byte, and the settings), with the
    transcript's and the evidence's bytes — or, when ``memo`` remembers the digest for the
    files' unchanged stamps, the digest alone (the files are not read)."""
    files = _inputs_files(item)
    stamps = [stamp(f) for f in files] if memo is not None else []
    if memo is not None and (known := memo.get(item.id, stamps)) is not None:
        return known, None, None
    h = hashlib.sha256(settings)
    h.update(item.id.encode("utf-8") + b"\0")
    raws = [read_repo_file(Path(f), item.root, missing_ok=True) for f in files]
    for raw in raws:
        h.update(b"-" if raw is None else b"%d:" % len(raw) + raw)
    key = "sha256:" + h.hexdigest()
    if memo is not None:
        memo.put(item.id, stamps, key)
    return key, raws[0], raws[1]


def _derive(
    item: Item, text_raw: bytes | None, evidence_raw: bytes | None, ip: dict[str, Any]
) -> tuple[ItemRecord, list[Chunk], dict[str, Any]]:
    text = "" if text_raw is None else _decode(text_raw, item.transcript)
    evidence = (
        [] if evidence_raw is None else parse_evidence(evidence_raw, item.extracted / EVIDENCE)
    )
    lines = apply_review(evidence, load_item_review(item))
    entities = [
        e for e in read_entities(item.extracted / ENTITIES)["entities"] if isinstance(e, dict)
    ]
    try:
        condensed_file = read_condensed(item.condensed / CONDENSED_FILE, item.root)
    except LibraryError:
        # A damaged file: `arkai validate` names it, `arkai condense` redoes it.
        condensed_file = None
    data = text.encode("utf-8")
    condensed = [
        (c.chunk, data[c.start : c.end].decode("utf-8", errors="replace"))
        for c in (
            condensed_file.chunks
            if condensed_file is not None and condensed_file.content_id == item.id
            else ()
        )
    ]
    cp = ip["chunks"]
    return derive_item(
        item.id,
        text,
        lines,
        entities,
        condensed,
        target_words=int(cp["target_words"]),
        max_words=int(cp["max_words"]),
        graph=GraphSettings.from_params(ip["graph"]),
    )


def _lines(chunks: Sequence[Chunk]) -> bytes:
    """The chunks' chunk lines."""
    return canonjson.dumps_lines(c.to_dict() for c in chunks).encode("utf-8")


ITEM_PARTS = ("lines", "terms", "tokens", "phrases")
"""The parts of an item's entry in the item cache, :func:`_store`'s (another part's files, an
older version's, are pruned: the per-item ``topics`` part, before the rankings were kept in
one pack, and the ``main`` and ``related`` parts, before they were kept in tables, are)."""


def _store(
    cache: ItemCache, content_id: str, key: str,
    derived: tuple[ItemRecord, list[Chunk], dict[str, Any]],
) -> ItemRecord:  # fmt: skip
    """Cache every part of a freshly derived item but its record (:data:`RECORDS`):
    ``lines``, ``terms``, ``tokens`` and ``phrases``."""
    from arkai.search.termcounts import encode_segment

    record, chunks, terms = derived
    cache.put_bytes(content_id, key, "lines", _lines(chunks))
    cache.put(content_id, key, "terms", terms)
    cache.put_bytes(content_id, key, "tokens", encode_segment(chunk_tokens(terms)))
    cache.put_bytes(content_id, key, "phrases", _phrase_bytes(terms))
    return record


def _phrase_bytes(terms: dict[str, Any]) -> bytes:
    """The item's distinct phrases (its terms record's ``counts`` keys), one a line: phrases
    never hold a line break (:func:`arkai.search.topics.phrases` splits at them)."""
    return "\n".join(terms["counts"]).encode("utf-8")


class _Records:
    """The items' ``main`` records (:data:`RECORDS`): read from the table when made from the
    same inputs key, counted as the item cache counts its entries (hits, misses, rejected)."""

    def __init__(self, root: Path, full: bool) -> None:
        self.table = ItemTable(root, RECORDS, RECORDS_VERSION)
        self.full = full
        self.hits = 0
        self.rejected = self.table.rejected

    def get(self, content_id: str, key: str) -> ItemRecord | None:
        """The item's record, without its quotes (:meth:`quotes` reads them again)."""
        row = None if self.full else self.table.by_key(content_id, key)
        if row is None:
            return None
        try:
            record = ItemRecord.from_dict(json.loads(row.body)).without_quotes()
        except (ValueError, KeyError, TypeError):
            self.rejected += 1  # sealed, but not a record (the line's digest is checked)
            return None
        self.table.keep(content_id, None, key, row.body)
        self.hits += 1
        return record

    def put(self, content_id: str, key: str, record: ItemRecord) -> None:
        body = canonjson.dumps_compact(record.to_dict()).encode("utf-8")
        self.table.keep(content_id, None, key, body)

    def quotes(self, content_id: str, key: str) -> list[tuple[str, str]] | None:
        """The item's quotes, read from its row again (the table holds where the row is, not
        its body); None when the row is gone or not a record any more."""
        row = self.table.by_key(content_id, key)
        try:
            return None if row is None else ItemRecord.from_dict(json.loads(row.body)).quotes
        except (ValueError, KeyError, TypeError):
            return None


def _load(
    item: Item,
    ip: dict[str, Any],
    settings: bytes,
    cache: ItemCache,
    records: _Records,
    memo: StatMemo | None,
    full: bool,
    known: str | None = None,
) -> _Loaded:
    """The item's main record, from the records table when its inputs are unchanged (else,
    or with ``full``, derived, and its other parts cached). ``known``: the item's inputs key
    as the stage's last complete run sealed it for files the manifests say are unchanged
    (:func:`_stage_listing`): its files are not looked at when the table holds its record."""
    path = (Path(LIBRARY) / item.rel).as_posix()
    if known is not None and not full:
        got = records.get(item.id, known)
        if got is not None:
            return _Loaded(item, path, known, got)
    key, text_raw, evidence_raw = _inputs_key(item, settings, None if full else memo)
    cached = records.get(item.id, key)
    if cached is not None:
        return _Loaded(item, path, key, cached)
    if text_raw is None and evidence_raw is None:  # the key came from the memo: read the files
        key, text_raw, evidence_raw = _inputs_key(item, settings)
        if memo is not None:
            memo.put(item.id, [stamp(f) for f in _inputs_files(item)], key)
    record = _store(cache, item.id, key, _derive(item, text_raw, evidence_raw, ip))
    records.put(item.id, key, record)
    return _Loaded(item, path, key, record.without_quotes())


def _rederive(
    d: _Loaded, ip: dict[str, Any], settings: bytes, cache: ItemCache
) -> tuple[ItemRecord, list[Chunk], dict[str, Any]]:
    """Derive an item again (one of its cache entries went missing meanwhile) and cache it."""
    key, text_raw, evidence_raw = _inputs_key(d.item, settings)
    if key != d.key:
        raise LibraryError(f"{d.item.path}: changed while the index was being built; run again")
    derived = _derive(d.item, text_raw, evidence_raw, ip)
    _store(cache, d.item.id, key, derived)
    return derived


def _quotes(
    d: _Loaded, ip: dict[str, Any], settings: bytes, cache: ItemCache, records: _Records
) -> list[tuple[str, str]]:
    """The item's graph quotes: from its record's row, or derived again (the row went
    missing, was damaged or holds other quotes than the record digested, meanwhile)."""
    got = records.quotes(d.item.id, d.key)
    if got is None or quotes_digest(got) != d.record.quotes_digest:
        got = _rederive(d, ip, settings, cache)[0].quotes or []
    return got


def _terms(d: _Loaded, ip: dict[str, Any], settings: bytes, cache: ItemCache) -> ItemTerms:
    """The item's terms record."""
    raw = cache.get(d.item.id, d.key, "terms")
    if raw is None:
        raw = _rederive(d, ip, settings, cache)[2]
    return terms_from_dict(d.item.id, raw)


@dataclass(frozen=True)
class _Ranked:
    """An item's ranked terms (:func:`arkai.search.topics.rank_item`), as the topic step
    uses them."""

    entries: list[tuple[str, str, EntryJson]]
    """(term, relevance, its ``topics.json`` entry), best first."""
    high: list[tuple[str, float]]
    """The high-relevance terms and their scores (the graph's topic edges)."""
    fresh: bool
    """Ranked in this run (not taken from the cache)."""


def _ranking_row(entries: list[tuple[str, str, EntryJson]], scores: list[float]) -> bytes:
    """The ranking's field of a rankings row: ``[[term, relevance, score, entry], …]``."""
    rows = [[t, r, sc, e] for (t, r, e), sc in zip(entries, scores, strict=True)]
    return canonjson.dumps_compact(rows).encode("utf-8")


#: A kept ranking field (:func:`_ranking_row`) as canonical JSON writes it, checked whole in
#: one match (no Python work per entry): each term ``[term, relevance, score, entry]`` with
#: ``entry`` the text :func:`arkai.search.topics.entry_json` makes — the entry's relevance the
#: term's (a back reference), ``condensed_chunks`` present exactly when the row says the item
#: has condensed chunks (one pattern for each). Kept entries go into ``topics.json`` unread,
#: so a row that is intact but not one the stage wrote is ranked again rather than copied;
#: the content ID inside the entries is compared by counting (:func:`_kept_ranking`).
_NUMBERS = r"(?:(?:0|[1-9][0-9]*)(?:,(?:0|[1-9][0-9]*))*)?"
_JSON_STRING = r'"(?:[^"\\\x00-\x1f]|\\.)*"'
_SCORE = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?"
#: A JSON string inside the entry's JSON string: its quotes and backslashes escaped again.
_INNER_STRING = r'\\"(?:[^"\\\x00-\x1f]|\\\\\\.|\\\\u[0-9a-fA-F]{4})*\\"'


def _ranking_pattern(condensed: bool) -> re.Pattern[str]:
    extra = rf',\\"condensed_chunks\\":\[{_NUMBERS}\]' if condensed else ""
    term = (rf'\[{_JSON_STRING},"(high|medium|low)",{_SCORE},'
            rf'"\{{\\"chunks\\":\[{_NUMBERS}\]{extra},\\"content_id\\":{_INNER_STRING}'
            r',\\"relevance\\":\\"\1\\"\}"\]')  # fmt: skip
    # Each term in a group of its own (the back reference is to its own relevance).
    return re.compile(rf"\[(?:(?:{term})(?:,(?=\[)|(?=\])))*\]")


_RANKING = {flag: _ranking_pattern(flag) for flag in (False, True)}


def _kept_ranking(raw: bytes, content_id: str, condensed: bool) -> _Ranked | None:
    """The :class:`_Ranked` of a kept ranking field (:func:`_ranking_row`) of the item
    ``content_id``, its strings interned; None when it is not one — every entry must be the
    text :func:`arkai.search.topics.entry_json` makes for this item (``condensed``: the row
    says it has condensed chunks), since it is copied into ``topics.json`` unread."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if _RANKING[condensed].fullmatch(text) is None:
        return None
    # Every entry names this item: as many names as names of it (each is inside an entry,
    # the pattern said, and an entry has one).
    inner = json.dumps(canonjson.dumps_compact(content_id), ensure_ascii=False)[1:-1]
    if text.count('\\"content_id\\":') != text.count(f'\\"content_id\\":{inner},'):
        return None
    try:
        rows = json.loads(text)
    except ValueError:
        return None
    entries: list[tuple[str, str, EntryJson]] = []
    high: list[tuple[str, float]] = []
    intern = sys.intern
    for term, relevance, score, entry in rows:
        term, relevance = intern(term), intern(relevance)
        entries.append((term, relevance, entry))
        if relevance == "high":
            high.append((term, float(score)))
    return _Ranked(entries, high, fresh=False)


def _shape_digest(builder: TopicBuilder) -> Any:
    """The running SHA-256 of what every item's ranking context shares (the number of items
    and the topic settings): made once per build, copied for each item."""
    shape = {"n": rounded_count(builder.n, builder.settings.frequency_bits),
             "settings": asdict(builder.settings)}  # fmt: skip
    return hashlib.sha256(canonjson.dumps_line(shape).encode("utf-8"))


def _ranked_terms(
    d: _Loaded,
    ip: dict[str, Any],
    settings: bytes,
    cache: ItemCache,
    rankings: ItemTable,
    builder: TopicBuilder,
    full: bool,
    frequencies: bytes,
    context: str,
) -> _Ranked:
    """The item's ranked terms, kept in ``rankings`` (one table for every item,
    :class:`arkai.adapters.itemtable.ItemTable`) under the item's inputs key: the digest of
    what they depend on beyond the item's files (the number of items, the document frequency
    of each of its phrases and the topic settings), whether it has condensed chunks, each
    term with its relevance, score and ``topics.json`` entry (the item's own chunk numbers:
    the entry is a function of the ranking alone), and the chunks its rankings found for
    each term's stem. An item none of whose phrases changed frequency is not ranked again
    (its ``terms`` record is not even read, its entries are not decoded: their text is
    kept); one that is re-ranked reuses the chunks found for a term (they depend on the item
    alone). ``full``: no kept ranking is used. ``frequencies``: the document frequency of
    each of its phrases, in its order (:class:`_PhraseTable`); ``context``: the digest of
    :func:`_shape_digest` of ``builder`` and ``frequencies``."""
    row = None if full else rankings.by_key(d.item.id, d.key)
    kept = row.body if row is not None else b""
    fields = kept.split(b"\t") if kept else []
    if len(fields) == 4 and fields[0] == context.encode("ascii"):
        # Intact bytes (the row's digest held) that are not a ranking: ranked again.
        got = _kept_ranking(fields[2], d.item.id, fields[1] == b"1")
        if got is not None:
            rankings.keep(d.item.id, None, d.key, kept)
            return got
    known: dict[str, Any] = {}
    if len(fields) == 4:
        with contextlib.suppress(ValueError, TypeError, UnicodeDecodeError):
            known = dict(json.loads(fields[3]))
    it = _terms(d, ip, settings, cache)
    ranked = builder.rank(it, known, np.frombuffer(frequencies, dtype=np.int64))
    for t in ranked:
        known[stem_key(t.term)] = [list(t.chunks), list(t.condensed)]
    condensed = bool(it.condensed)
    entries = [(t.term, t.relevance, entry_json(d.item.id, t, condensed)) for t in ranked]
    body = b"\t".join((context.encode("ascii"), b"1" if condensed else b"0",
                       _ranking_row(entries, [t.score for t in ranked]),
                       canonjson.dumps_compact(known).encode("utf-8")))  # fmt: skip
    rankings.keep(d.item.id, None, d.key, body)
    high = [(t.term, t.score) for t in ranked if t.relevance == "high"]
    return _Ranked(entries, high, fresh=True)


class _Frequencies(Mapping[str, int]):
    """Phrase → number of items that have it (0 for a phrase none has), read from a
    :class:`_PhraseTable` without a dictionary of every phrase's count."""

    def __init__(self, table: _PhraseTable) -> None:
        self.table = table

    def __getitem__(self, phrase: str) -> int:
        i = self.table.id_of(phrase)
        return 0 if i is None else int(self.table.counts[i])

    def __contains__(self, phrase: object) -> bool:
        # As for the Counter this replaced: a phrase is in when an item has it.
        return isinstance(phrase, str) and self[phrase] > 0

    def __iter__(self) -> Iterator[str]:
        counts = self.table.counts
        return (p for i, p in enumerate(self.table.phrases) if counts[i])

    def __len__(self) -> int:
        return int(np.count_nonzero(self.table.counts))


#: An item's phrase ids: in memory (read this run), or where they are in the kept table's
#: file (byte offset, number of ids).
_Row = np.ndarray | tuple[int, int]

#: Phrase ids read at a time from the kept table (4 MB).
_PHRASE_BLOCK = 1 << 20


class _PhraseTable:
    """Every item's distinct phrases as ids into one list of phrases (4 bytes a phrase of an
    item; each phrase's text once): the document frequencies, and for each item the
    frequencies of its phrases.

    Kept between runs in ``.arkai/index-cache/phrase-table.bin`` (:func:`write_checked`: a
    header line with the digest of the rest): a JSON line naming each item's content ID,
    inputs key and number of phrases in table order (and the number of phrases and of their
    bytes), the phrases one a line, then every item's phrase ids as little-endian ``int32``.
    An item whose ID and key are those kept takes its ids from there; only the others'
    ``phrases`` entries are read (at 10,000 items reading every entry and mapping 3.2 million
    phrases cost ≈ 2 s a run). A table that is missing, damaged (its digest) or inconsistent
    is not used: every entry is read.

    The kept ids are not held (3.2 million at 10,000 items, and a copy of them while the
    table was read and written again): the file is checked in one pass, a block at a time,
    and an item's ids are read from it (``pread``) when its frequencies are asked for; a
    table written again is written an item at a time and read from then on."""

    def __init__(
        self, phrases: list[str], rows: list[_Row], keys: list[list[str]], counts: np.ndarray,
        fh: BinaryIO | None,
    ) -> None:  # fmt: skip
        self.phrases = phrases
        self.keys = keys
        self.counts = counts
        """Each phrase's number of items (an item's phrases are distinct)."""
        self._rows = rows
        self._fh = fh
        self._closer = weakref.finalize(self, fh.close) if fh is not None else None
        self._renumber: np.ndarray | None = None
        """Kept ids → ids after :meth:`_compact` (until the table is written again)."""
        self._ids: dict[str, int] | None = None
        self._rounded: tuple[int, np.ndarray] | None = None
        """The bits and the counts :meth:`frequencies` rounded last."""

    def close(self) -> None:
        if self._closer is not None:
            self._closer()
        self._fh = self._closer = None

    def id_of(self, phrase: str) -> int | None:
        if self._ids is None:
            self._ids = {p: i for i, p in enumerate(self.phrases)}
        return self._ids.get(phrase)

    def df(self) -> Mapping[str, int]:
        """Phrase → number of items that have it."""
        return _Frequencies(self)

    def row(self, i: int) -> np.ndarray:
        """Item ``i``'s phrase ids."""
        row = self._rows[i]
        if not isinstance(row, tuple):
            return row
        ids = _read_ids(self._fh, *row)
        return ids if self._renumber is None else self._renumber[ids].astype(np.int32)

    def frequencies(self, i: int, bits: int = 0) -> bytes:
        """Item ``i``'s phrases' document frequencies, :func:`rounded` to ``bits`` (what its
        ranking depends on; 0: exact), as native ``int64``."""
        if self._rounded is None or self._rounded[0] != bits:
            # Every phrase's count rounded once, not each item's on every call.
            self._rounded = (bits, rounded(self.counts, bits).astype("=i8"))
        out: bytes = self._rounded[1][self.row(i)].tobytes()
        return out

    @classmethod
    def build(
        cls, loaded: Sequence[_Loaded], phrases_of: Callable[[_Loaded], list[str]], path: Path,
        full: bool,
    ) -> _PhraseTable:  # fmt: skip
        """The table of ``loaded`` (in order), from the kept one where an item's ID and key
        are those kept there (``full``: nothing kept is used), written back when it changed."""
        kept = None if full else _KeptPhrases.read(path)
        phrases: list[str] = kept.phrases if kept else []
        at = {k: n for n, k in enumerate(kept.keys)} if kept else {}
        ids: dict[str, int] | None = None
        rows: list[_Row] = []
        used: set[int] = set()
        keys = [[d.item.id, d.key] for d in loaded]
        for d in loaded:
            n = at.get((d.item.id, d.key))
            if n is not None and kept is not None and n not in used:
                used.add(n)
                rows.append(kept.spans[n])
                continue
            if ids is None:
                ids = {p: i for i, p in enumerate(phrases)}
            rows.append(np.array([ids.setdefault(p, len(ids)) for p in phrases_of(d)], "<i4"))
        if ids is not None:
            phrases = list(ids)  # in id order: the kept phrases, then the new ones
        del ids, at
        # Every kept item's ids were counted as the file was checked: the ones not used
        # here are taken off, the new rows' added.
        counts = np.zeros(len(phrases), dtype=np.int64)
        fh = None
        if kept is not None:
            counts[: len(kept.counts)] = kept.counts
            fh = kept.fh
            for n, span in enumerate(kept.spans):
                if n not in used:
                    counts -= np.bincount(_read_ids(fh, *span), minlength=len(phrases))
        for row in rows:
            if not isinstance(row, tuple):
                counts += np.bincount(row, minlength=len(phrases))
        table = cls(phrases, rows, keys, counts, fh)
        if kept is None or len(used) != len(rows) or [list(k) for k in kept.keys] != keys:
            table._compact()
            table._save(path)
        return table

    def _compact(self) -> None:
        """Phrases no item has any more are dropped (and the ids renumbered) once they are a
        quarter of the list: the kept list does not grow with every edit."""
        dead = len(self.phrases) - int(np.count_nonzero(self.counts))
        if dead <= max(1024, len(self.phrases) // 4):
            return
        alive = self.counts > 0
        renumber = (np.cumsum(alive) - 1).astype(np.int32)
        self._rows = [row if isinstance(row, tuple) else renumber[row].astype("<i4")
                      for row in self._rows]  # fmt: skip
        self._renumber = renumber if self._renumber is None else renumber[self._renumber]
        self.phrases = [p for p, a in zip(self.phrases, alive.tolist(), strict=True) if a]
        self.counts = self.counts[alive]
        self._ids = self._rounded = None

    def _save(self, path: Path) -> None:
        """Write the table (an item's ids at a time, kept ones read from the file loaded),
        then read the rows from the file written."""
        text = "".join(p + "\n" for p in self.phrases).encode("utf-8")
        sizes = [row[1] if isinstance(row, tuple) else len(row) for row in self._rows]
        head = canonjson.dumps_line({
            "format": PHRASE_TABLE_FORMAT, "items": [
                [cid, key, size] for (cid, key), size in zip(self.keys, sizes, strict=True)],
            "phrases": len(self.phrases), "phrase_bytes": len(text),
        }).encode("utf-8")  # fmt: skip

        def fill(put: Callable[[bytes | memoryview], None]) -> None:
            put(head)
            put(text)
            for i in range(len(self._rows)):
                put(byte_view(np.ascontiguousarray(self.row(i), "<i4")))

        write_checked_parts(path, fill)
        self.close()
        self._renumber = None
        try:
            fh = open(path, "rb")  # noqa: SIM115 (kept open by the table)
        except OSError:
            return  # (gone already: the rows in memory stay as they are)
        start = len(fh.readline()) + len(head) + len(text)
        spans: list[_Row] = []
        for size in sizes:
            spans.append((start, size))
            start += 4 * size
        self._rows, self._fh = spans, fh
        self._closer = weakref.finalize(self, fh.close)


def _read_ids(fh: BinaryIO | None, at: int, count: int) -> np.ndarray:
    """``count`` phrase ids at byte ``at`` of the kept table. OSError when it ends first."""
    if fh is None:
        raise OSError(errno.EBADF, "the kept phrase table is closed: no phrase ids to read")
    ids: np.ndarray = read_array(
        fh.fileno(), count, "<i4", at, f"{fh.name} (kept phrase table, an item's phrase ids)"
    )
    return ids


@dataclass
class _KeptPhrases:
    """A kept phrase table (:class:`_PhraseTable`), checked: its phrases, the items'
    (ID, key) in order, where each one's ids are, and each phrase's number of items over all
    of them; the file stays open (``fh``)."""

    phrases: list[str]
    keys: list[tuple[str, str]]
    spans: list[tuple[int, int]]
    counts: np.ndarray
    fh: BinaryIO

    @classmethod
    def read(cls, path: Path) -> _KeptPhrases | None:
        """None when the file is missing, damaged or does not add up (a count that does not
        match the ids that follow, an id out of the list); checked in one pass."""
        return open_checked(path, cls._checked)

    @classmethod
    def _checked(cls, fh: BinaryIO) -> _KeptPhrases | None:
        head = checked_head(fh, PHRASE_TABLE_FORMAT)
        if head is None:
            return None
        digest, h, doc = head
        n_phrases, at, items = doc["phrases"], doc["phrase_bytes"], doc["items"]
        if type(n_phrases) is not int or type(at) is not int or not isinstance(items, list):
            return None
        if at < 0:
            return None
        text = fh.read(at)
        h.update(text)
        phrases = text_lines(text, at)
        if phrases is None or len(phrases) != n_phrases:
            return None
        start = fh.tell()
        size = os.fstat(fh.fileno()).st_size - start
        if size % 4:
            return None
        keys: list[tuple[str, str]] = []
        spans: list[tuple[int, int]] = []
        place = start
        for item in items:
            if not (isinstance(item, list) and len(item) == 3):
                return None
            cid, key, count = item
            if not (isinstance(cid, str) and isinstance(key, str) and type(count) is int
                    and count >= 0):  # fmt: skip
                return None
            keys.append((cid, key))
            spans.append((place, count))
            place += 4 * count
        if place - start != size:
            return None
        counts = np.zeros(n_phrases, dtype=np.int64)
        for lo in range(0, size // 4, _PHRASE_BLOCK):
            ids = _read_ids(fh, start + 4 * lo, min(_PHRASE_BLOCK, size // 4 - lo))
            h.update(byte_view(ids))
            if len(ids) and (int(ids.min()) < 0 or int(ids.max()) >= n_phrases):
                return None
            counts += np.bincount(ids, minlength=n_phrases)
        if "sha256:" + h.hexdigest() != digest:
            return None
        return cls(phrases, keys, spans, counts, fh)


def _phrases(d: _Loaded, ip: dict[str, Any], settings: bytes, cache: ItemCache) -> list[str]:
    """The item's distinct phrases (for the document frequencies)."""
    raw = cache.get_bytes(d.item.id, d.key, "phrases")
    if raw is None:
        raw = _phrase_bytes(_rederive(d, ip, settings, cache)[2])
    return raw.decode("utf-8").split("\n") if raw else []


def _segment(d: _Loaded, ip: dict[str, Any], settings: bytes, cache: ItemCache) -> bytes:
    """The item's chunks' BM25 tokens, as a segment."""
    from arkai.search.termcounts import encode_segment

    raw = cache.get_bytes(d.item.id, d.key, "tokens")
    if raw is None:
        raw = encode_segment(chunk_tokens(_rederive(d, ip, settings, cache)[2]))
    return raw


def _part_names(loaded: Sequence[_Loaded]) -> list[str]:
    """Each item's name in the lexical files kept between runs (the term counts, the engine's
    parts): its ID and inputs key, which changes with every input of its tokens."""
    return [f"{d.item.id} {d.key}" for d in loaded]


def _term_counts(
    loaded: Sequence[_Loaded], ip: dict[str, Any], settings: bytes, cache: ItemCache, path: Path,
    full: bool,
) -> tuple[CountsFile, int]:  # fmt: skip
    """The term frequencies of every item's chunks (the BM25 index's, before weighing), kept
    in ``path`` (:mod:`arkai.search.termcounts`; open: the caller closes it), and how many
    items' ``tokens`` segments were read: the last build's kept frequencies updated with the
    segments of items whose content ID or inputs key changed only (``full``, a kept file that
    is missing or damaged, items in another order than kept, or more new segments than an
    update reads in bounded memory — :data:`arkai.search.termcounts.UPDATE_READ_PAIRS`: built
    again from every item's). The same frequencies either way (tested), so the same index."""
    from arkai.search.termcounts import CountsFile, build_counts, update_counts

    names = _part_names(loaded)
    kept = None if full else CountsFile.open(path)
    if kept is not None:
        at = {name: n for n, name in enumerate(kept.names)}

        def reader(d: _Loaded) -> Callable[[], bytes]:
            return lambda: _segment(d, ip, settings, cache)

        plan = [
            at[name] if name in at else reader(d) for name, d in zip(names, loaded, strict=True)
        ]
        del at
        counts = update_counts(kept, plan, names, path)
        if counts is not kept:
            kept.close()
        if counts is not None:
            return counts, sum(not isinstance(p, int) for p in plan)
    segments = (_segment(d, ip, settings, cache) for d in loaded)
    return build_counts(segments, names, path), len(loaded)


def _chunk_lines(d: _Loaded, ip: dict[str, Any], settings: bytes, cache: ItemCache) -> bytes:
    """The item's chunk lines, as cached."""
    raw = cache.get_bytes(d.item.id, d.key, "lines")
    if raw is None:
        raw = _lines(_rederive(d, ip, settings, cache)[1])
    return raw


#: A chunk line's chunk key: canonical JSON escapes every quote inside a string, so
#: the pattern is found only where the member is (the first match of a line).
_KEY = re.compile(rb'"key":"([^"\\]*)"')


@dataclass(frozen=True)
class ChunkScan:
    """The distinct chunk keys of ``index/chunks/`` in file order: each one's id
    (:func:`arkai.search.vectors.key_id`) and the byte offset of its first line."""

    ids: Any
    offsets: Any

    def __len__(self) -> int:
        return len(self.ids)


def chunk_scan(parts: ChunkParts, cache: Path | None = None) -> ChunkScan:
    """The chunk keys of ``index/chunks/`` (no line is parsed): ≈ 40 bytes a chunk held,
    where a list and a set of key strings held ≈ 200. With ``cache`` (a file of the item
    cache, :class:`_PartKeys`), each part's keys are kept under the part's name — its
    content's digest, so a kept entry is never stale — and only a part not seen before is
    read: one part for a changed item, where every run read all 155 MB at 10,000 items."""
    from arkai.search.vectors import ID_DTYPE

    kept = _PartKeys.load(cache)
    ids: list[Any] = []
    starts: list[Any] = []
    base = 0
    for part in parts.parts:
        got = kept.get(part)
        if got is None:
            got = kept.put(part, *_read_keys(parts, part))
        ids.append(got[0])
        starts.append(got[1].astype(np.int64) + base)
        base += part.size
    kept.save(parts.parts)
    every = np.concatenate(ids) if ids else np.empty(0, dtype=ID_DTYPE)
    at = np.concatenate(starts) if starts else np.empty(0, dtype=np.int64)
    del ids, starts, kept
    # A key's later lines, found a block of the sorted order at a time (no sorted copy).
    order = np.argsort(every, kind="stable")
    later = np.zeros(len(every), dtype=bool)
    for lo in range(0, max(len(order) - 1, 0), 1 << 20):
        run = order[lo : lo + (1 << 20) + 1]
        later[run[1:][every[run[1:]] == every[run[:-1]]]] = True
    del order
    if later.any():
        return ChunkScan(every[~later], at[~later])
    return ChunkScan(every, at)


def _read_keys(parts: ChunkParts, part: Part) -> tuple[Any, Any]:
    """One part's key ids and the byte offset of each of its lines in the part, read."""
    from arkai.search.vectors import ID_DTYPE, key_id

    ids = bytearray()
    starts: list[int] = []
    for key, at in _keyed_lines(parts, part):
        ids += key_id(key)
        starts.append(at)
    return np.frombuffer(bytes(ids), dtype=ID_DTYPE), np.asarray(starts, dtype="<i8")


class _PartKeys:
    """Each chunk part's key ids and line offsets, by part name, in one sealed record of the
    item cache (:func:`arkai.adapters.itemcache.write_checked`): a JSON line of the parts'
    names and line counts, then each part's ids (32 bytes a line) and offsets (8). A damaged
    record, or one that does not add up, is not used (every part is read again)."""

    def __init__(self, path: Path | None, found: dict[str, tuple[Any, Any]]) -> None:
        self.path = path
        self.found = found
        self.changed = False

    @classmethod
    def load(cls, path: Path | None) -> _PartKeys:
        from arkai.search.vectors import ID_DTYPE

        body = None if path is None else read_checked(path)
        found: dict[str, tuple[Any, Any]] = {}
        if body is not None:
            head, _, rest = body.partition(b"\n")
            try:
                listed = [(str(name), int(lines)) for name, lines in json.loads(head)["parts"]]
            except (ValueError, KeyError, TypeError):
                listed = []
            width = ID_DTYPE.itemsize + 8
            if (
                listed
                and all(n >= 0 for _, n in listed)
                and (sum(n for _, n in listed) * width == len(rest))
            ):
                at = 0
                for name, n in listed:
                    ids = np.frombuffer(rest, dtype=ID_DTYPE, count=n, offset=at)
                    at += n * ID_DTYPE.itemsize
                    offsets = np.frombuffer(rest, dtype="<i8", count=n, offset=at)
                    at += n * 8
                    found[name] = (ids, offsets)
        return cls(path, found)

    def get(self, part: Part) -> tuple[Any, Any] | None:
        got = self.found.get(part.name)
        return got if got is not None and len(got[0]) == part.lines else None

    def put(self, part: Part, ids: Any, offsets: Any) -> tuple[Any, Any]:
        self.found[part.name] = (ids, offsets)
        self.changed = True
        return ids, offsets

    def save(self, parts: Sequence[Part]) -> None:
        """Written again (the listed parts only, in order) when a part was read or one went."""
        if self.path is None:
            return
        names = [p.name for p in parts]
        if not self.changed and set(names) == set(self.found):
            return
        head = canonjson.dumps_compact({"parts": [[n, len(self.found[n][0])] for n in names]})
        blocks: list[bytes | memoryview] = [head.encode("utf-8") + b"\n"]
        for n in names:
            ids, offsets = self.found[n]
            blocks += [byte_view(np.ascontiguousarray(ids)),
                       byte_view(np.ascontiguousarray(offsets, dtype="<i8"))]  # fmt: skip
        write_checked(self.path, *blocks)


def chunk_lines(parts: ChunkParts, offsets: Iterable[int]) -> list[tuple[str, str]]:
    """The (key, text) of each chunk line starting at ``offsets`` of the whole sequence (from
    :func:`chunk_scan`; only those lines are read and parsed)."""
    out: list[tuple[str, str]] = []
    for at, line in parts.read_at(int(a) for a in offsets):
        try:
            row = json.loads(line)
            out.append((str(row["key"]), str(row["text"])))
        except (ValueError, KeyError, TypeError) as exc:
            raise LibraryError(f"{parts.folder}: no chunk at byte {at} ({exc}); "
                               "run `arkai reindex --full`") from None  # fmt: skip
    return out


def _keyed_lines(parts: ChunkParts, part: Part) -> Iterator[tuple[str, int]]:
    """Each line of one part with its chunk key and its byte offset in the part."""
    at = 0
    with parts.open(part) as fh:
        for n, line in enumerate(fh, 1):
            m = _KEY.search(line)
            if m is None:
                raise LibraryError(f"{parts.folder / part.name}: line {n} has no chunk key; "
                                   "run `arkai reindex --full`")  # fmt: skip
            yield m.group(1).decode("utf-8"), at
            at += len(line)


#: The metadata fields the stage reads (the catalog's and the graph's); an item keeps only
#: these while every item is held (its whole ``metadata.json`` parsed: ≈ 3.4 KB an item).
_METADATA_USED = ("content_type", "created_at", "id", "published", "source_id", "tags",
                  "title", "url")  # fmt: skip


def _slim(item: Item) -> Item:
    m = item.metadata
    return replace(item, metadata={k: m[k] for k in _METADATA_USED if k in m})


def catalog_entry(d: _Loaded) -> dict[str, Any]:
    m = d.item.metadata
    return {
        "id": d.item.id,
        "content_type": m.get("content_type"),
        "url": m.get("url"),
        "title": d.item.title,
        "tags": list(m.get("tags") or []),
        "created_at": m.get("created_at"),
        "path": d.path,
        "published": m.get("published"),
        "source_id": m.get("source_id"),
        "claims": d.record.claims,
        "entities": d.record.entities,
        "chunks": d.record.chunks,
    }


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


#: The graph exports: for other tools, not DVC outputs, written while
#: ``index.graph.exports`` asks (:func:`graph_exports_wanted`).
EXPORTS = (GRAPH_JSON, GRAPHML)
#: ``index.graph.exports: auto`` writes the exports while the library holds at most this many
#: items: above, they are ≈ 16 KB an item rewritten whole on every run (165 MB at 10,000
#: items) for files nothing in arkai reads (docs/index-format.md, "The graph exports").
AUTO_EXPORT_ITEMS = 2_000


def graph_exports_wanted(ip: dict[str, Any], items: int, force: bool = False) -> bool:
    """Whether this run writes the graph exports: ``force`` (``arkai reindex
    --graph-exports``), else ``index.graph.exports`` — true, false, or ``auto`` (the
    default: while the library holds at most :data:`AUTO_EXPORT_ITEMS` items)."""
    value = ip["graph"].get("exports", "auto")
    if force:
        return True
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() == "auto":
        return items <= AUTO_EXPORT_ITEMS
    raise LibraryError(
        f"params.yaml: `index.graph.exports` must be true, false or auto, not {value!r}"
    )


#: Files whose bytes the ``inputs`` digest of the manifest determines.
DERIVED = (f"{CHUNKS}/", CATALOG, TOPICS, GRAPH_JSON, GRAPHML, RELATED, f"{LEXICAL}/")


def _pair(value: Any) -> list[str] | None:
    """A ``[key, digest]`` kept in ``inputs.json``, or None when it is not two strings."""
    if isinstance(value, list) and len(value) == 2 and all(type(v) is str for v in value):
        return [value[0], value[1]]
    return None


def _intact(out: Path, manifest: dict[str, Any], digests: FileDigests, exports: bool) -> bool:
    """True when the derived files are the ones the manifest lists, byte for byte (the
    graph exports among them when ``exports``; else none may be there)."""
    files = manifest.get("files")
    if not isinstance(files, dict):
        return False
    listed = {k: v for k, v in files.items() if k.startswith(DERIVED)}
    current = {k: v for k, v in _scan(out, digests).items() if k.startswith(DERIVED)}
    # Every derived file there (an index from before one was added lacks it).
    wanted = DERIVED if exports else tuple(d for d in DERIVED if d not in EXPORTS)
    present = all(any(k.startswith(d) for k in current) for d in wanted)
    return bool(listed) and listed == current and present


#: Folders of index/ that other stages write (the beliefs stage's vectors, the folder manifests of
#: extract, condense and site): not this stage's.
NOT_OURS = ("beliefs/", "manifests/")


def _scan(out: Path, digests: FileDigests, under: str = "") -> dict[str, str]:
    """The digests of this stage's files under ``out`` (not the manifest, no dotfiles; only
    those in its folder ``under`` when given)."""
    return digests.scan(out, skip=NOT_OURS, name_skip=MANIFEST, under=under)


def requested_embedder(ip: dict[str, Any]) -> str | None:
    """The embedder params ask for (``$ARKAI_EMBEDDER`` refines ``default``); None when off."""
    name = ip.get("embedder")
    if name is None or str(name).strip().lower() in ("", "none", "off", "false"):
        return None
    name = str(name).strip()
    if name == "default":
        name = os.environ.get("ARKAI_EMBEDDER") or name
    return name


def _listing(out: Path) -> ChunkParts:
    """``index/chunks/`` as this run wrote it."""
    listing = ChunkParts.load(out / CHUNKS)
    if listing is None:
        raise LibraryError(f"{out / CHUNKS}: no {LISTING} after the chunks were written")
    return listing


def _embed(
    out: Path,
    chunks: ChunkParts,
    keys: Path | None,
    ip: dict[str, Any],
    requested: str,
    previous: Any,
    full: bool,
    summary: IndexSummary,
    progress: ProgressFn | None,
    extract: dict[str, Any] | None = None,
    checks: Path | None = None,
) -> None:
    """Embed the chunks of ``chunks`` (``index/chunks/`` as just written) whose key the vector
    store lacks; prune the keys that are gone; then bring the ANN index (above
    ``index.ann.threshold``) in line with the store. ``checks``: the memo of the segments
    found intact (:func:`arkai.search.vectors.drop_damaged`; None: none is checked).

    The model is loaded only when something must be embedded: the store is opened under the
    model name the last run recorded in the manifest (``previous``) when params still ask for
    the same embedder. The parts are read for their keys (:func:`chunk_scan`, kept per part in
    ``keys``: only a part not seen before is read; ids and line
    offsets, not strings); the lines of the chunks to embed are then read by offset.
    """
    from arkai.search import embed, embedbatches
    from arkai.search.vectors import KeySnapshot, VectorStore, drop_damaged, record_intact

    folder = out / VECTORS
    store = None
    name, dim = "", 0
    if (
        not full
        and isinstance(previous, dict)
        and previous.get("requested") == requested
        and previous.get("name")
        and isinstance(previous.get("dim"), int)
    ):
        name, dim = str(previous["name"]), int(previous["dim"])
        store = VectorStore.load(folder, name, dim=dim)  # under the recipe it records
        drop_damaged(store, folder, checks)
    scan = chunk_scan(chunks, keys)
    old = store.snapshot() if store is not None else KeySnapshot.empty()
    missing = store is not None and bool((store.rows_of(scan.ids) < 0).any())
    # A store made by another recipe of the model is embedded again, whole. With chunks to
    # embed, the embedder says its recipe below; without, its factory does (no model loaded).
    if store is not None and not missing and store.recipe != embed.recipe_of(name):
        missing = True
    if store is None or missing:
        held = embed.held_embedders()
        embedder = embed.get_embedder(requested)
        recipe = embed.recipe_of(embedder)
        if (
            store is None
            or embedder.name != name
            or int(embedder.dim) != dim
            or store.recipe != recipe
        ):
            name, dim = embedder.name, int(embedder.dim)
            store = VectorStore.load(folder, name, dim=dim, recipe=recipe)
            drop_damaged(store, folder, checks)
            old = store.snapshot()
            if full:
                summary.pruned += store.prune([])
        lines = chunk_lines(chunks, scan.offsets[store.rows_of(scan.ids) < 0])
        todo, texts = [k for k, _ in lines], dict(lines)
        del lines
        batch = max(1, int(ip["batch_size"]))
        if progress:
            progress(0, len(todo), "embedding")
        # Here or as Ray tasks (extract.executor): the same batches, in the same order.
        for part, rows in embedbatches.encoded(embedder, todo, texts, batch, extract):
            store.add(part, rows)
            summary.embedded += len(part)
            if progress:
                progress(summary.embedded, len(todo), "embedding")
        # Nothing after this step embeds: a model loaded here is let go before the topic and
        # graph steps, which decide the stage's peak memory.
        del embedder, texts
        embed.release_embedders(keep=held)
    summary.reused = len(scan) - summary.embedded
    summary.pruned += store.prune(scan.ids)
    summary.embedder, summary.dim = name, dim
    if summary.embedded or summary.pruned or full or store.unsaved:
        store.save(folder)
    if checks is not None:
        record_intact(store, folder, checks)
    summary.ann = update_ann(folder, store, old, ip["ann"], full=full)


def update_ann(folder: Path, store: Any, old: Any, raw: Any, *, full: bool = False) -> str | None:
    """Build, update, keep or remove ``folder``'s ANN index for ``store`` (whose keys were
    ``old``, a :class:`~arkai.search.vectors.KeySnapshot`, when the index was last written);
    returns what was done (see :class:`IndexSummary`). A damaged or mismatched index is
    rebuilt; one that still matches an unchanged store is kept without being read into
    FAISS (≈ 700 MB at 100,000 items)."""
    from arkai.search.ann import AnnError, AnnIndex, AnnSettings

    settings = AnnSettings.from_params(raw)
    if len(store) < settings.threshold:
        return "removed" if AnnIndex.remove(folder) else None
    how = "built"
    if not full and (folder / "ann.json").exists():
        try:
            if old.sha256 == store.keys_sha256():
                meta = AnnIndex.check(folder, old)
                if meta.get("nprobe") == settings.nprobe and meta.get("dim") == store.dim:
                    return "kept"
            return AnnIndex.update_files(folder, store, old, settings)
        except AnnError:
            how = "rebuilt"
    AnnIndex.build_files(folder, store, settings)
    return how


def _rank_items(
    root: Path,
    out: Path,
    loaded: list[_Loaded],
    ip: dict[str, Any],
    settings: bytes,
    cache: ItemCache,
    synonyms: dict[str, list[str]],
    table: _PhraseTable,
    full: bool,
    kept: KeptEntries | None,
    written: list[str],
    high: dict[str, list[tuple[str, float]]],
    digests: FileDigests,
) -> tuple[int, int, int, int, int]:
    """The topic step's work after the document frequencies: each item's ranking — its
    entries as the last build kept them (``kept``, :class:`arkai.search.topics.KeptEntries`)
    when they were made under the same inputs key and ranking context, else kept in the
    rankings table or ranked again (:func:`_ranked_terms`) — then ``topics.json`` written and
    the entries kept for the next build (with the file's lines: a topic no changed item is in
    is copied from the last file, one a changed item is in patched from it:
    :meth:`TopicBuilder.lines_from`). Fills ``high`` with each item's high-relevance terms (the
    graph's). Returns the number of topics, of items ranked again, of items whose kept entries
    were taken and of topics whose line was copied and patched;
    :class:`KeptEntriesError` when a kept item's entries are not what they claim (before
    anything is written but the rankings table)."""
    builder = TopicBuilder(
        len(loaded), table.df(), synonyms, TopicSettings.from_params(ip["topics"]),
        keep_terms=False, folder=root / TEMP_DIR,
    )  # fmt: skip
    # Only each item's high-relevance terms go on (to the graph); the topic document is
    # written from the builder's entry file, never made whole.
    shape = _shape_digest(builder)
    bits = builder.settings.frequency_bits
    reranked = taken = 0
    intern = sys.intern
    # Every item's ranking in one table (10,000 entry files cost more to open and write than
    # the rankings); written once the items are ranked, so a stopped run leaves the last one
    # as it was.
    with builder:
        rankings = ItemTable(root, RANKINGS, RANKINGS_VERSION)
        for i, d in enumerate(loaded):
            frequencies = table.frequencies(i, bits)
            h = shape.copy()
            h.update(frequencies)
            context = "sha256:" + h.hexdigest()
            tag = f"{d.key} {context}"
            k = kept.match(d.item.id, tag) if kept is not None else None
            if k is not None and kept is not None:
                terms = _kept_high(kept.payloads[k])
                # Its ranking's row stays in the table, unread (a re-ranking reuses its
                # chunks); an item whose row is gone is ranked from the table as before.
                if terms is not None and rankings.retain(d.item.id, d.key):
                    builder.add_kept(d.item.id, kept, k)
                    high[d.item.id] = [(intern(t), s) for t, s in terms]
                    taken += 1
                    continue
            ranked = _ranked_terms(d, ip, settings, cache, rankings, builder, full,
                                   frequencies, context)  # fmt: skip
            builder.add_entries(d.item.id, ranked.entries, (tag, ranked.high))
            high[d.item.id] = ranked.high
            reranked += ranked.fresh
        builder.take_kept()
        rankings.save(prune=True)
        del rankings
        # The lines of the last topics.json no changed item is in are copied from it, when
        # the kept entries were kept with that file and it is still that file (its digest).
        made, path, lines = WrittenTopics(), out / TOPICS, None
        with contextlib.ExitStack() as stack:
            if kept is not None and kept.file is not None and not full:
                try:
                    fh = stack.enter_context(open_repo_file(path, out))
                    lines = builder.lines_from(kept, fh, digests.of(path, TOPICS))
                except (OSError, LibraryError):
                    lines = None
            if write_chunks_if_changed(path, builder.iter_json(lines=lines, written=made)):
                written.append(TOPICS)
        builder.keep(cache.folder / TOPIC_ENTRIES, made)
        copied, spliced = (0, 0) if lines is None else (lines.copied, lines.spliced)
        return builder.n_topics, reranked, taken, copied, spliced


def _kept_high(payload: Any) -> list[tuple[str, float]] | None:
    """The high-relevance terms and scores kept with an item's entries (``[[term, score],
    …]``), or None when the payload is not such a list."""
    if not isinstance(payload, list):
        return None
    out: list[tuple[str, float]] = []
    for pair in payload:
        if not (isinstance(pair, list) and len(pair) == 2 and type(pair[0]) is str
                and type(pair[1]) in (int, float)):  # fmt: skip
            return None
        out.append((pair[0], float(pair[1])))
    return out


def _graph(
    root: Path,
    out: Path,
    loaded: list[_Loaded],
    ip: dict[str, Any],
    high: dict[str, list[tuple[str, float]]],
    full: bool,
    summary: IndexSummary,
    info: dict[str, Any],
    quotes: Callable[[_Loaded], list[tuple[str, str]]],
    exports: bool,
    digests: FileDigests,
    last_related: list[str] | None,
) -> list[str]:
    """``graph.json``, ``graph.graphml`` (when ``exports``; else any there are removed, so
    none is ever left behind the library) and ``related.jsonl``: the RELATED_TO edges between
    items kept in one table (only a changed item's are recomputed), CITES counts kept
    incrementally (:mod:`arkai.search.citecache`: a transcript is searched again only for the
    needle texts it has not been searched for). ``high``: each item's high-relevance topic
    terms and their scores (emptied once the parts are assembled); ``quotes``: an item's
    quotes, asked for only when its graph part is made (the records hold their digest).
    ``last_related``: the last run's ``[key, digest]`` of ``related.jsonl``
    (:meth:`arkai.search.graphparts.RelatedInputs.key`), returned as this run's (the file is
    not made again when both hold)."""
    settings = GraphSettings.from_params(ip["graph"])
    needles = cite_needles((d.item.id, d.item.title, d.item.metadata.get("url") or None)
                           for d in loaded)  # fmt: skip
    found = update_cites(
        root,
        ((d.item.id, d.key, partial(_read_text, d.item.transcript, d.item.root)) for d in loaded),
        needles,
        full=full,
    )
    info["cites_searched"], info["cites_searched_new"] = found.searched, found.searched_new
    cites = found.cites
    del found, needles
    items = [
        GraphItem(
            content_id=d.item.id,
            title=d.item.title,
            path=d.path,
            content_type=str(d.item.metadata.get("content_type") or ""),
            url=d.item.metadata.get("url") or None,
            tags=[str(t) for t in d.item.metadata.get("tags") or []],
            quotes_digest=d.record.quotes_digest,
            mentions=d.record.mentions,
            made_from=d.key,  # the record, its quotes and mentions, are made from these
            cites=cites[node_id("content", d.item.id)],
            high_topics=high.get(d.item.id, []),
        )
        for d in loaded
    ]
    by_id = {d.item.id: d for d in loaded}
    nodes = {node_id("content", it.content_id): it for it in items}
    # A stale row is the normal case for a changed item, not a damaged cache
    # (IndexSummary.cache_rejected counts none of them).
    table = related_table(root)
    related = update_related(
        {n: features(it) for n, it in nodes.items()},
        {n: it.content_id for n, it in nodes.items()},
        table,
        settings.min_shared_entities,
        settings.max_related,
        full=full,
        union=root / RELATED_UNION,  # (the table saved there)
    )
    del table
    info["related_recomputed"] = related.changed
    info["related_neighbours_updated"] = related.merged + related.recomputed
    info["exports"] = exports

    def quotes_of(it: GraphItem) -> list[tuple[str, str]]:
        return quotes(by_id[it.content_id])

    # Each item's share of the files from the parts cache (only a changed item's is made),
    # joined by the edges between items: the bytes build_graph's writers give (tested). A part
    # read back holds where its text is in the parts file, read as the files are written.
    # Without the exports only the counts and related.jsonl are made: only the parts of items
    # whose part changed, came or went are looked at (the sums of the others kept).
    with PartStore(root, full=full) as parts:
        if exports:
            graph = graph_parts(items, settings, related.edges, parts, quotes_of)
            counts = (graph.nodes, graph.edges)
        else:
            counted = counted_parts(items, settings, related.edges, parts, quotes_of,
                                    root / SUMS, full=full)  # fmt: skip
            counts = (counted.nodes, counted.edges)
        info["graph_parts_built"], info["graph_parts_rejected"] = parts.built, parts.rejected
        del items, nodes, related
        # The parts' topic edges are made: each item's high terms are not needed again (≈ 300
        # bytes an item; the caller's dict is emptied).
        high.clear()
        if exports:
            # In pieces, never whole in memory.
            for name, pieces in ((GRAPH_JSON, iter_json(graph)), (GRAPHML, iter_graphml(graph))):
                if write_chunks_if_changed(out / name, pieces):
                    summary.written.append(name)
            lists = related_inputs(graph)
            del graph
        else:
            for name in (GRAPH_JSON, GRAPHML):
                if (out / name).is_file() or (out / name).is_symlink():
                    (out / name).unlink()
                    summary.written.append(name)
            lists = related_inputs_of(counted.links, counted.titles, counted.ids)
            del counted
    summary.nodes, summary.edges = counts
    info.update(nodes=summary.nodes, edges=summary.edges)
    # related.jsonl made again only when what it is made from changed: the key and the
    # file's digest as the last run left them (inputs.json) against the key now and the
    # file's digest now (its stat memo: a file edited since is read and differs).
    key, path = lists.key(), out / RELATED
    info["related_kept"] = (
        not full
        and last_related is not None
        and last_related[0] == key
        and path.is_file()
        and not path.is_symlink()
        and digests.of(path, RELATED) == last_related[1]
    )
    if info["related_kept"] and last_related is not None:
        return last_related
    h = hashlib.sha256()
    if write_chunks_if_changed(path, fed(lists.lines(), h)):
        summary.written.append(RELATED)
    return [key, DIGEST_PREFIX + h.hexdigest()]


def _write_chunks(
    out: Path,
    loaded: Sequence[_Loaded],
    ip: dict[str, Any],
    settings: bytes,
    cache: ItemCache,
    digests: FileDigests,
    written: list[str],
    known: str | None,
    full: bool,
) -> str:
    """Bring ``index/chunks/`` (the items' cached lines, in order, in parts:
    :mod:`arkai.adapters.chunkparts`) up to date. Returns the digest of the whole sequence.
    ``known``: the digest the last run recorded for the same item keys (the lines are a
    function of them) — when the listing still has it and every part its bytes, nothing
    else is read.

    Otherwise a part whose run of items (content IDs and inputs keys) the last run's layout
    (:class:`_Layout`) holds, and whose file still has its bytes, is kept as it is; any
    other run is written: an item's lines copied from an intact old part where its key is
    unchanged, else from the item cache. ``full``: every part written again from the cache."""
    folder = out / CHUNKS
    real_folder(folder)  # a link in its place removed first: nothing is read through it
    legacy = out / LEGACY_CHUNKS
    if legacy.is_file() or legacy.is_symlink():
        legacy.unlink()  # the one file of earlier versions (this stage's own output)
    try:
        listing = ChunkParts.load(folder)
    except LibraryError:
        listing = None  # written again below

    def intact(name: str) -> bool:
        path = folder / name
        st = stamp(path)
        return (
            st is not None
            and st[0] >= 0
            and digests.of(path, f"{CHUNKS}/{name}") == "sha256:" + name.removesuffix(".jsonl")
        )

    if (
        known is not None
        and listing is not None
        and listing.digest == known
        and all(intact(p.name) for p in listing.parts)
    ):
        return known
    old = None if full else _Layout.load(cache.folder / LAYOUT)
    kept: dict[tuple[tuple[str, str], ...], tuple[str, int]] = {}
    spans: dict[str, tuple[str, str, int, int]] = {}
    for name, lines, members in old.parts if old is not None else []:
        if not intact(name):
            continue
        kept[tuple((c, k) for c, k, _ in members)] = (name, lines)
        at = 0
        for c, k, n in members:
            spans[c] = (k, name, at, n)
            at += n
    parts: list[Part] = []
    layout: list[tuple[str, int, list[tuple[str, str, int]]]] = []
    made = 0
    for run in _runs(loaded):
        found = kept.get(tuple((d.item.id, d.key) for d in run))
        if found is not None:
            name, lines = found
            members = [(d.item.id, d.key, spans[d.item.id][3]) for d in run]
            parts.append(Part(name, lines, sum(n for _, _, n in members)))
            layout.append((name, lines, members))
            continue
        members = []

        def write(fh: BinaryIO, run: list[_Loaded] = run, members: list[Any] = members) -> None:
            for d in run:
                span = spans.get(d.item.id)
                raw = None
                if span is not None and span[0] == d.key:
                    raw = _span(folder / span[1], span[2], span[3], d.item.id)
                if raw is None:
                    raw = _chunk_lines(d, ip, settings, cache)
                fh.write(raw)
                members.append((d.item.id, d.key, len(raw)))

        part = write_part(folder, write)
        digests.record(folder / part.name, f"{CHUNKS}/{part.name}", part.sha256)
        parts.append(part)
        layout.append((part.name, part.lines, members))
        made += 1
    digest, listed = write_listing(folder, parts)
    if made or listed:
        written.append(f"{CHUNKS}/")
    _Layout(layout).save(cache.folder / LAYOUT)
    return digest


def _runs(loaded: Sequence[_Loaded]) -> Iterator[list[_Loaded]]:
    """The items in runs, one a part (:func:`arkai.adapters.chunkparts.ends_part`)."""
    run: list[_Loaded] = []
    for d in loaded:
        run.append(d)
        if ends_part(d.item.id):
            yield run
            run = []
    if run:
        yield run


def _span(path: Path, at: int, size: int, content_id: str) -> bytes | None:
    """An item's lines in an old part (intact: its bytes are its name's digest) where the
    layout says they are; None unless they are whole lines, each naming the item (a key of
    canonical JSON is never escaped, so the marker is found once a line and nowhere else) —
    the caller then takes them from the item cache."""
    with path.open("rb") as fh:
        fh.seek(at)
        raw = fh.read(size)
    marker = b'"content_id":' + canonjson.dumps(content_id).strip().encode("utf-8") + b","
    if len(raw) != size or not raw.endswith(b"\n") or raw.count(marker) != raw.count(b"\n"):
        return None
    return raw


@dataclass(frozen=True)
class _Layout:
    """The parts of ``index/chunks/`` as the last run wrote them (in the item cache folder,
    beside ``inputs.json``): per part its file name, its number of lines and (content ID,
    inputs key, byte length) per item, in order; a header line holds the digest of the
    rest, so a damaged or edited layout is not used (every part is then written again from
    the item cache)."""

    parts: list[tuple[str, int, list[tuple[str, str, int]]]]

    @classmethod
    def load(cls, path: Path) -> _Layout | None:
        body = read_checked(path)
        if body is None:
            return None
        try:
            doc = json.loads(body)
            if doc["version"] != LAYOUT_VERSION:
                return None
            parts = [(str(name), int(lines), [(str(c), str(k), int(n)) for c, k, n in members])
                     for name, lines, members in doc["parts"]]  # fmt: skip
            if any(n < 0 for _, _, members in parts for _, _, n in members):
                return None
            if not all(is_part_name(name) for name, _, _ in parts):
                return None  # a name with a folder in it: not one this stage wrote
            return cls(parts)
        except (ValueError, TypeError, KeyError):
            return None

    def save(self, path: Path) -> None:
        doc = {"parts": self.parts, "version": LAYOUT_VERSION}
        write_checked(path, canonjson.dumps_line(doc).encode("utf-8"))


#: The DVC stage :func:`run_index` runs as (``stages/index.py``): its items are listed from the
#: manifests the stages before it wrote, and its run sealed under this name
#: (:func:`_stage_listing`).
STAGE = "index"
#: The folders whose manifests the stage depends on (dvc.yaml) and plans from.
STAGE_FOLDERS = ("library", "extracted", "condensed")
#: Bump when what the stage's sealed result (:func:`_sealed_bytes`) holds changes.
SEALED_VERSION = 1


@dataclass
class _Listing:
    """The items a run works through: each read from its folder, or — an item whose files the
    manifests say are those of the stage's last complete run — as that run sealed it."""

    items: list[Item]
    keys: dict[str, str]
    """A sealed item's folder (absolute, as a string) → its inputs key then."""
    planned: str | None
    """The digest of the manifests the stage planned from (with its inputs); None outside
    the stage, or when they were missing. (Not the manifests: ≈ 12 MB at 10,000 items, read
    again to seal the run when it ends.)"""
    inputs: dict[str, Any]
    sealable: bool
    """Every item folder could be read: the run may be sealed when it completes."""


def _run_items(repo: Repo, settings: bytes, full: bool) -> _Listing:
    """The run's items (:func:`_slim`), sorted by path: :func:`_stage_listing` as the DVC
    stage, else every item read from its folder."""
    if repo.stage == STAGE and not full:
        return _stage_listing(repo, settings)
    return _Listing([_slim(i) for i in repo.items()], {}, None, {}, False)


def _stage_listing(repo: Repo, settings: bytes) -> _Listing:
    """The ``index`` stage's items, planned as the validate and beliefs stages plan theirs
    (:func:`arkai.adapters.manifest.changes`): only the item folders whose lines in the
    manifests of library/, extracted/ and condensed/ — the stage's DVC dependencies, written by
    the stages before it in the same ``dvc repro`` — differ from the last complete run's are
    read; every other item is as that run sealed it (its folder, the metadata the index uses
    and its inputs key), its files not looked at (issue 17: listing the library read 10,000
    ``metadata.json`` files and stamped 50,000 input files, ≈ 1 s a run). Without such a run
    (a fresh clone, other settings, a new arkai, a damaged seal), when a changed line belongs
    to no item, or when a changed folder cannot be read, every folder is read; a run that
    found one it could not read is not sealed (it is read again next time). A file changed
    after the manifests were written is seen by the next ``dvc repro``; ``arkai index`` reads
    every item."""
    inputs = {"stage": STAGE, "sealed": SEALED_VERSION, "arkai": arkai.__version__,
              "settings": settings.decode("utf-8")}  # fmt: skip
    plan = folder_manifests.planned(repo.root, STAGE, STAGE_FOLDERS, inputs)
    planned = None if plan is None else plan.now.digest
    sealed = None if plan is None else plan.sealed
    changes = None if plan is None or sealed is None else plan.changes
    rows = None if changes is None or sealed is None else _sealed_rows(sealed)
    if changes is not None and rows is not None:
        fresh, problems = load_items(repo.root, changes.folders)
        if not problems:
            lib = repo.root / LIBRARY
            items = [_slim(i) for i in fresh]
            keys: dict[str, str] = {}
            for folder, key, metadata in rows:
                if folder not in changes.folders:
                    item = Item(repo.root, lib / folder, metadata)
                    items.append(item)
                    keys[os.fspath(item.path)] = key
            items.sort(key=lambda i: i.path)
            return _Listing(items, keys, planned, inputs, True)
    del plan, sealed, changes, rows
    found, problems = repo.scan()
    return _Listing([_slim(i) for i in found], {}, planned, inputs, not problems)


def _sealed_bytes(loaded: Sequence[_Loaded]) -> bytes:
    """What the stage seals with its run: each item's folder (relative to library/), inputs
    key and the metadata the index uses."""
    rows = [[d.item.rel.as_posix(), d.key, d.item.metadata] for d in loaded]
    doc = {"version": SEALED_VERSION, "items": rows}
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _sealed_rows(sealed: folder_manifests.Sealed) -> list[tuple[str, str, dict[str, Any]]] | None:
    """What :func:`_sealed_bytes` wrote; None when it is not that (the seal's digest held, so
    only a result written by another version gets here: every folder is then read)."""
    try:
        doc = json.loads(sealed.result or b"")
        if doc["version"] != SEALED_VERSION:
            return None
        rows = [(str(f), str(k), m) for f, k, m in doc["items"]]
    except (ValueError, KeyError, TypeError):
        return None
    if not all(isinstance(m, dict) and isinstance(m.get("id"), str) for _, _, m in rows):
        return None
    return [(f, k, {x: m[x] for x in _METADATA_USED if x in m}) for f, k, m in rows]


#: The summary's fields the side steps set (:func:`_side_steps`).
_SIDE_FIELDS = ("lexical_rebuilt", "lexical_engine", "embedded", "reused", "pruned", "embedder",
                "dim", "ann", "shards")  # fmt: skip


@dataclass
class _Side:
    """What the side steps did: their summary fields, the files they changed (lexical and
    vectors, then shards), the cache entries they rejected, the manifest's ``lexical``
    and ``embedder.requested``, and the digests of their folders' files (:data:`SIDE_FOLDERS`,
    :meth:`FileDigests.entries`)."""

    summary: IndexSummary
    written: list[str]
    shards_written: list[str]
    rejected: int
    lexical: dict[str, Any]
    requested: str | None
    digests: dict[str, tuple[str, str]]


#: The folders of index/ the side steps write: the digests of their files for the manifest
#: are made there, beside the topic and graph steps (the BM25 matrix alone is ≈ 56 MB at
#: 10,000 items, ≈ 0.1 s to hash).
SIDE_FOLDERS = (LEXICAL, VECTORS, SHARDS_DIR)


def _embedding(progress: ProgressFn, done: int, total: int) -> None:
    progress(done, total, "embedding")


def _bm25_intact(record: Path, out: Path, digests: FileDigests) -> bool:
    """Whether the BM25 files under ``lexical/`` are the ones the lexical step last wrote (their
    digests in ``record``, kept beside the item cache; the stat memo: an unchanged file is not
    read). One damaged or deleted since — a bad pull, a disk error — is made again by the next
    run, not only by ``--full``. (Not the manifest's: a run that found them damaged wrote the
    manifest with what it found.)"""
    kept = read_own_json(record)
    listed = kept.get("files") if isinstance(kept, dict) else None
    if not isinstance(listed, dict) or not listed:
        return False
    for rel, digest in listed.items():
        path = out / str(rel)
        try:
            if path.is_symlink() or digests.of(path, str(rel)) != digest:
                return False
        except OSError:
            return False
    return True


def _side_steps(
    root: Path,
    out: Path,
    loaded: Sequence[_Loaded],
    items: Sequence[Item],
    ip: dict[str, Any],
    settings: bytes,
    log: events.RunLog,
    old_manifest: dict[str, Any],
    reuse: bool,
    chunks_digest: str,
    n_chunks: int,
    full: bool,
    extract_params: Any,
    digests: FileDigests,
    report: Callable[[int, int], None],
) -> _Side:
    """The lexical, vector and shard steps (run beside the topic and graph steps: they share
    no file), into a summary and an item cache reader of their own (its counts returned),
    then the digests of their folders' files (``digests``: the stage's memo as the fork
    copied it; its entries returned)."""
    summary, written, cache = IndexSummary(), [], ItemCache(root)
    # The BM25 index from the items' cached token segments (when the chunks changed).
    k1, b = float(ip["bm25"]["k1"]), float(ip["bm25"]["b"])
    lexical = {"k1": k1, "b": b, "chunks": chunks_digest, "n_docs": n_chunks}
    # With ``reuse`` the inputs are the last run's and the files its manifest lists: only a
    # BM25 file damaged since it was written is made again (that manifest lists what it found).
    rebuild_lexical = (
        full
        or (not reuse and old_manifest.get("lexical") != lexical)
        or not _bm25_intact(cache.folder / LEXICAL_FILES, out, digests)
    )

    with log.step("lexical") as info:
        if rebuild_lexical:
            from arkai.search.bm25 import write_index

            counts, info["segments_read"] = _term_counts(
                loaded, ip, settings, cache, cache.folder / LEXICAL_COUNTS, full
            )
            with counts:
                write_index(counts, out / LEXICAL, k1=k1, b=b)
            del counts  # every item's name and the frequencies (≈ 200 bytes an item)
            summary.lexical_rebuilt = True
            written.append(LEXICAL)
        info.update(rebuilt=summary.lexical_rebuilt, unchanged=reuse)
        # Above `index.lexical.threshold`: the tantivy engine beside it (search/lexindex.py).
        # Its parts are the items, named as in the term counts (the inputs key changes
        # with every input of the item's tokens): a changed item's documents replaced in
        # place.
        info["engine"] = summary.lexical_engine = update_engine(
            out / LEXICAL, chunks_digest, n_chunks, ip.get("lexical"),
            _part_names(loaded),
            lambda i: _segment(loaded[i], ip, settings, cache), full=full,
        )  # fmt: skip
        if info["engine"] not in (None, "kept") and LEXICAL not in written:
            written.append(LEXICAL)

    with log.step("vectors") as info:
        requested = requested_embedder(ip)
        if requested is None:
            # The folder is a DVC output (dvc.yaml): it exists, empty, when the lane is off.
            (out / VECTORS).mkdir(exist_ok=True)
            info["skipped"] = True
        else:
            previous = old_manifest.get("embedder")
            # The keys from index/chunks/ as just written; texts only of chunks to embed.
            _embed(out, _listing(out), None if full else cache.folder / PART_KEYS, ip,
                   requested, previous, full, summary, lambda n, total, _what: report(n, total),
                   extract_params, None if full else cache.folder / VECTOR_CHECKS)  # fmt: skip
            if summary.embedded or summary.pruned:
                written.append(VECTORS)
            info.update(
                embedded=summary.embedded,
                reused=summary.reused,
                pruned=summary.pruned,
                embedder=summary.embedder,
            )

    with log.step("shards") as info:
        # The item keys digest each item's condensed.json among its files: only items
        # whose key changed since the last build are read again.
        item_keys = {d.item.id: d.key for d in loaded}
        shards = shard_library(Repo.at(root), log, items, item_keys, full=full)
        summary.shards = shards.to_dict()
        info.update(summary.shards)
    hashed: list[str] = []
    for folder in SIDE_FOLDERS:
        found = _scan(out, digests, under=folder)
        hashed.extend(found)
        if folder == LEXICAL:  # as written now, or found intact above
            bm25 = {k: v for k, v in found.items() if k.startswith(f"{LEXICAL}/bm25.")}
            record = canonjson.dumps({"files": bm25}).encode("utf-8")
            write_if_changed(cache.folder / LEXICAL_FILES, record, fsync=False)
    return _Side(summary, written, [f"{SHARDS_DIR}/{f}" for f in shards.written],
                 cache.rejected, lexical, requested, digests.entries(hashed))  # fmt: skip


def run_index(
    repo: Repo,
    *,
    full: bool = False,
    progress: ProgressFn | None = None,
    graph_exports: bool = False,
) -> IndexSummary:
    """Build (or bring up to date) every file under ``index/``; see the module docstring.
    ``graph_exports``: write the graph exports whatever ``index.graph.exports`` says. As the
    DVC stage, the beliefs stage's build runs beside it where it can (:func:`_beliefs_beside`)."""
    # The temp files a killed run left beside the index's files and tables (a 29 MB one of
    # topics.json, a 56 MB one of the BM25 matrix): removed before this run writes its own.
    sweep_temps(repo.index, recursive=True)
    sweep_temps(repo.root / CACHE_DIR)
    beside = _beliefs_beside(repo)
    with beside if beside is not None else contextlib.nullcontext():
        summary = _run_index(repo, full=full, progress=progress, graph_exports=graph_exports)
        if beside is not None:
            # (What it reports: its statements embedded, a first build's long part.)
            shown = None if progress is None else partial(_beliefs_progress, progress)
            try:
                summary.beliefs_beside = beside.join(shown)
            except Exception as exc:  # (the beliefs stage builds, and says why)
                summary.beliefs_beside = f"failed: {exc}"
    return summary


#: The beliefs stage's script: where a library's pipeline has it, the index stage starts that
#: stage's build beside its own work (:func:`_beliefs_beside`).
BELIEFS_SCRIPT = "stages/beliefs.py"


def _beliefs_beside(repo: Repo) -> Beside[str] | None:
    """The beliefs stage's build (:func:`arkai.ops.memory.build`, as that stage runs it)
    started in a forked child, when this process is the ``index`` DVC stage of a pipeline
    that has the beliefs stage (running ``stages/beliefs.py``, not frozen), with two CPUs
    (:func:`arkai.adapters.beside.forking`) and extraction run locally (a Ray client hangs in
    a fork); else None.

    The beliefs stage needs nothing the condense and index stages write — its dependencies
    are the manifests of library/ and extracted/ that the extract stage wrote earlier in the
    same ``dvc repro``, memory/ and its parameters — and they read nothing it writes
    (beliefs/, index/beliefs/; :data:`NOT_OURS`). So its replay, ≈ 2 s at 10,000 items when
    a claim changed, runs while the index stage works (issue 17), and when DVC then runs the
    beliefs stage its build finds that replay standing, byte for byte what it would write
    (its ``kept`` step: ≈ 0.4 s). Should anything differ by then — a failure here, an input
    changed — the stage replays as it always does; a child still running when this stage
    fails is stopped (its files are written atomically, and a replay's log is saved after
    them, so a part-written state is never taken as standing)."""
    if repo.stage != STAGE or not forking():
        return None
    if executor_of(repo.params.get("extract") or {}) != "local":
        return None
    from arkai.ops.memory import STAGE as BELIEFS

    try:
        defined = dvc.stages(repo.root).get(BELIEFS)
    except (OSError, LibraryError):
        return None
    # The stage as the scaffold has it, and not frozen (DVC would not run it: its outputs are
    # left as they are).
    if (
        not isinstance(defined, dict)
        or defined.get("frozen")
        or BELIEFS_SCRIPT not in str(defined.get("cmd") or "")
        or not (repo.root / BELIEFS_SCRIPT).is_file()
    ):
        return None
    # Its run started here, before the fork and before this stage's own run (which is then
    # the latest run).
    log = events.start(repo.root, BELIEFS, started_by=STAGE)
    beside = Beside("index: the beliefs stage's build", partial(_build_beliefs, repo.root, log))
    try:
        beside.start()
    except OSError as exc:  # no fork to be had (out of memory, a process limit)
        log.emit("RunCompleted", status="failed", duration_ms=0, error=str(exc))
        return None
    return beside


def _build_beliefs(root: Path, log: events.RunLog, report: Callable[[int, int], None]) -> str:
    """The beliefs stage's build of the library at ``root`` in the run ``log`` (in
    :func:`_beliefs_beside`'s child); how many beliefs it holds."""
    from arkai.ops.memory import STAGE as BELIEFS
    from arkai.ops.memory import build

    result = build(Repo.at(root, stage=BELIEFS), started=log,
                   progress=lambda done, total, _what: report(done, total))  # fmt: skip
    return f"{result.beliefs} beliefs"


def _beliefs_progress(progress: ProgressFn, done: int, total: int) -> None:
    progress(done, total, "embedding beliefs")


def _run_index(
    repo: Repo,
    *,
    full: bool,
    progress: ProgressFn | None,
    graph_exports: bool,
) -> IndexSummary:
    """:func:`run_index`'s own work."""
    root = repo.root
    ip = index_params(repo.params)
    out = repo.index
    out.mkdir(parents=True, exist_ok=True)
    settings = _settings_key(ip)
    listed = _run_items(repo, settings, full)
    items = listed.items
    exports = graph_exports_wanted(ip, len(items), graph_exports)
    summary = IndexSummary(items=len(items))
    written = summary.written

    def put(name: str, data: bytes) -> None:
        if write_if_changed(out / name, data):
            written.append(name)

    with events.run(root, "index", items=len(items), full=full) as log:
        cache = ItemCache(root)
        digests = FileDigests(cache.folder / DIGESTS)
        # (Not read when the items are planned: a changed item's stamps changed, and the
        # memo's file, left as it is, serves a later run that reads every item.)
        memo = None if listed.keys else StatMemo(cache.folder / STAMPS, settings.decode("utf-8"))
        with log.step("chunks") as info:
            loaded: list[_Loaded] = []
            records = _Records(root, full)
            sealed_keys = listed.keys
            for n, item in enumerate(items, 1):
                sealed_key = sealed_keys.get(os.fspath(item.path))
                loaded.append(_load(item, ip, settings, cache, records, memo, full, sealed_key))
                if progress:
                    progress(n, len(items), item.title)
            loaded.sort(key=lambda d: d.path)
            records.table.save(prune=True)  # (kept: the graph step reads quotes from it)
            summary.cache_hits = records.hits
            cache.rejected += records.rejected
            cache.prune({d.item.id for d in loaded}, ITEM_PARTS)
            summary.chunks = sum(d.record.chunks for d in loaded)
            summary.claim_chunks = sum(d.record.claim_chunks for d in loaded)
            summary.transcript_chunks = summary.chunks - summary.claim_chunks
            # Kept beside the item cache, not in the manifest: the record keys digest the
            # items' files, extraction timestamps included, and the manifest is a function of
            # the index files alone (a clone that re-extracts the same claims writes the same
            # manifest).
            last = read_own_json(cache.folder / INPUTS)
            keys = _digest(canonjson.dumps([[d.item.id, d.key] for d in loaded]).encode("utf-8"))
            known = last.get("chunks") if not full and last.get("keys") == keys else None
            chunks_digest = _write_chunks(
                out, loaded, ip, settings, cache, digests, written, known, full
            )
            info.update(chunks=summary.chunks, cached=summary.cache_hits,
                        listed_from_seal=len(sealed_keys))  # fmt: skip
            # Nothing after this step asks the memo (an entry is a digest of files as they
            # are, right whether or not the run completes): saved and let go (≈ 450 bytes an
            # item held to the end before; issue 17).
            if memo is not None:
                memo.save()
            del memo

        with log.step("catalog") as info:
            catalog = {"version": CATALOG_VERSION, "items": [catalog_entry(d) for d in loaded]}
            catalog_text = canonjson.dumps(catalog).encode("utf-8")
            put(CATALOG, catalog_text)
            info["items"] = len(loaded)
            del catalog

        old_manifest = read_own_json(out / MANIFEST)
        synonyms = load_synonyms(root / SYNONYMS)
        # Everything lexical/, topics.json and the graph are functions of: when it equals the
        # last run's and those files are as that run left them, they are not rebuilt. The
        # catalog's text as written is hashed (≈ 500 bytes an item; encoding the catalog
        # again with the rest cost ≈ 0.3 s at 10,000 items), then let go.
        h = hashlib.sha256(canonjson.dumps_line({
            "settings": settings.decode("utf-8"),
            "params": {k: ip[k] for k in ("bm25", "chunks", "topics", "graph")},
            "synonyms": synonyms,
            "items": [d.key for d in loaded],
        }).encode("utf-8"))  # fmt: skip
        h.update(catalog_text)
        inputs = "sha256:" + h.hexdigest()
        del catalog_text
        reuse = (
            not full
            and last.get("inputs") == inputs
            and _intact(out, old_manifest, digests, exports)
        )
        old_counts = old_manifest.get("counts") or {}

        # The lexical, vector and shard steps read none of what topics and graph write, and
        # write none of what they read: with two CPUs they run in a forked child beside them
        # (arkai.adapters.beside; the same files either way, tested), their counts merged here.
        side = Beside(
            "index: lexical, vectors and shards",
            partial(_side_steps, root, out, loaded, items, ip, settings, log, old_manifest,
                    reuse, chunks_digest, summary.chunks, full, repo.params.get("extract"),
                    digests),
            # Not with embedding batches on Ray: its client (gRPC) hangs in a forked child.
            fork=executor_of(repo.params.get("extract") or {}) == "local",
        )  # fmt: skip
        embedding = None if progress is None else partial(_embedding, progress)
        with side:
            side.start(embedding)
            before = len(written)
            with log.step("topics") as info:
                if reuse:
                    summary.topics = int(old_counts.get("topics", 0))
                    info.update(topics=summary.topics, unchanged=True)
                else:
                    # The document frequencies (the IDF) from the kept phrase table (only changed
                    # items' phrases read), then each item's ranking: kept, or ranked again.
                    table = _PhraseTable.build(
                        loaded, lambda d: _phrases(d, ip, settings, cache),
                        cache.folder / PHRASE_TABLE, full,
                    )  # fmt: skip
                    kept = None if full else KeptEntries.read(cache.folder / TOPIC_ENTRIES)
                    high: dict[str, list[tuple[str, float]]] = {}
                    rank = partial(_rank_items, root, out, loaded, ip, settings, cache, synonyms,
                                   table, full)  # fmt: skip
                    try:
                        (summary.topics, info["reranked"], info["kept"],
                         info["lines_copied"], info["lines_patched"]) = rank(
                            kept, written, high, digests)  # fmt: skip
                    except KeptEntriesError:
                        # The kept entries were not what they claimed: ranked without them.
                        high.clear()
                        (summary.topics, info["reranked"], info["kept"],
                         info["lines_copied"], info["lines_patched"]) = rank(
                            None, written, high, digests)  # fmt: skip
                        info["kept_rejected"] = True
                    finally:
                        if kept is not None:
                            kept.close()
                    table.close()
                    del table
                    info["topics"] = summary.topics
                    if progress:
                        progress(1, 1, "topics")

            with log.step("graph") as info:
                related_made = _pair(last.get("related"))  # kept as it is when nothing changed
                if reuse:
                    summary.nodes = int(old_counts.get("nodes", 0))
                    summary.edges = int(old_counts.get("edges", 0))
                    info.update(nodes=summary.nodes, edges=summary.edges, unchanged=True)
                else:
                    related_made = _graph(
                        root, out, loaded, ip, high, full, summary, info,
                        lambda d: _quotes(d, ip, settings, cache, records), exports, digests,
                        _pair(last.get("related")),
                    )  # fmt: skip
                    del high
                    if progress:
                        progress(1, 1, "graph")
            done = side.join(embedding)
        for name in _SIDE_FIELDS:
            setattr(summary, name, getattr(done.summary, name))
        # In the steps' order: lexical and vectors, topics and graph, shards.
        written[before:] = done.written + written[before:] + done.shards_written
        cache.rejected += done.rejected
        summary.cache_rejected = cache.rejected
        digests.take(done.digests)

        with log.step("manifest"):
            manifest: dict[str, Any] = {
                "version": MANIFEST_VERSION,
                "counts": {
                    "items": summary.items,
                    "chunks": summary.chunks,
                    "transcript_chunks": summary.transcript_chunks,
                    "claim_chunks": summary.claim_chunks,
                    "topics": summary.topics,
                    "nodes": summary.nodes,
                    "edges": summary.edges,
                },
                "embedder": (
                    {"name": summary.embedder, "dim": summary.dim, "requested": done.requested}
                    if summary.embedder
                    else None
                ),
                "lexical": old_manifest.get("lexical") if reuse else done.lexical,
                "files": _scan(out, digests),
            }
            # No build time: the manifest is a function of the files, so a fresh clone's
            # rebuild gives the same bytes (and the same dvc.lock entry).
            write_json(out / MANIFEST, manifest)
            write_json(cache.folder / INPUTS, {"chunks": chunks_digest, "inputs": inputs,
                                               "items": len(loaded), "keys": keys,
                                               "related": related_made})  # fmt: skip
            digests.save()
            if listed.planned is not None and listed.sealable:
                folder_manifests.seal_as_planned(root, STAGE, STAGE_FOLDERS, listed.inputs,
                                                 listed.planned, len(loaded),
                                                 _sealed_bytes(loaded))  # fmt: skip
            elif listed.planned is not None:
                folder_manifests.unseal(root, STAGE)
    return summary
