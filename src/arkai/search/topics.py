"""The topic index (``index/topics.json``, seed 001 "Stage 5: Index"): term → items → chunks.

Terms per item are TF-IDF keyphrases (scikit-learn ``TfidfVectorizer``'s defaults over the
items' transcripts, 1–3-word phrases that never cross a stopword, punctuation or a line end,
computed by :class:`TopicBuilder` from per-item phrase counts and the library's document
frequencies, so the index stage caches an item's counts) — the ``top_terms`` best per item —
plus the names of the item's entities (``entities.json``). Relevance comes from the phrase's
TF-IDF rank in its item: ``high`` for the first ``high_rank`` terms (when their score is at
least ``high_min_score``), ``medium`` up to ``medium_rank``, ``low`` after that. Each item
entry lists the chunks whose stemmed text contains the term — their numbers within the item
(0-based, in the item's order in ``index/chunks/``: :func:`chunk_offsets` turns them into
positions in the file), so one item's entries depend on that item alone — and, for an item
the ``condense`` stage has chunked, ``condensed_chunks``: the numbers of its condensed
chunks (``chunk`` in ``condensed.json`` and the shards, 1-based within the item — the seed's
``chunks: [1, 3]``) whose text contains it.

``synonyms.yaml`` (``term: [synonym, …]``, user-edited) is merged in symmetrically: every
member of a group lists the others. :func:`lookup_topic` expands a query with them and matches
terms stemming-insensitively; :func:`grep_library` is the fallback for terms not in the index.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import json
import math
import re
import tempfile
import unicodedata
from array import array
from collections import Counter
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import numpy.typing as npt
import yaml

from arkai.adapters.fs import read_into, read_repo_file
from arkai.adapters.itemcache import checked_head, open_checked, write_checked_parts
from arkai.adapters.layout import iter_items
from arkai.core import canonjson
from arkai.core.grammar import parse_line
from arkai.core.hashing import source_digest
from arkai.errors import LibraryError, NotFoundError
from arkai.search.termcounts import sorted_rank
from arkai.search.text import STOPWORDS as TEXT_STOPWORDS
from arkai.search.text import tokenize

#: 2: ``chunks`` are numbers within the item (1: positions in ``index/chunks/``, which every
#: item before a changed one's chunk count shifted).
TOPICS_VERSION = 2
RELEVANCES = ("high", "medium", "low")
_RANK = {r: i for i, r in enumerate(RELEVANCES)}

_FILLERS = frozenset(
    """um uh erm er ah oh hmm yeah yes okay ok gonna wanna gotta like just really actually
    lot lots kind sort thing things don doesn didn isn wasn aren weren won wouldn couldn
    shouldn haven hasn hadn ll ve let lets dr mr mrs ms use used uses using say says said
    going know think want got make good great right way bit little pretty maybe sure thank
    thanks today tonight""".split()  # noqa: SIM905
)


@cache
def stopwords() -> frozenset[str]:
    """sklearn's English list, less a few content nouns it contains, plus speech fillers and
    the halves of contractions (tokens split at apostrophes). Loaded on first use: importing
    scikit-learn costs over a second, which every CLI command would otherwise pay."""
    content = {"system", "bill", "fire", "interest", "computer", "mill"}
    return (_sklearn_stop_words() - content) | _FILLERS | TEXT_STOPWORDS


def _sklearn_stop_words() -> frozenset[str]:
    """scikit-learn's English list, read from its module file: importing the ``sklearn``
    package for this one constant costs about a second (its ``__init__`` loads SciPy), which
    an index run that re-analyses a single changed item would otherwise pay."""
    import importlib.util

    spec = importlib.util.find_spec("sklearn")
    if spec is not None and spec.origin:
        path = Path(spec.origin).parent / "feature_extraction" / "_stop_words.py"
        sub = importlib.util.spec_from_file_location("_arkai_sklearn_stop_words", path)
        if path.is_file() and sub is not None and sub.loader is not None:
            module = importlib.util.module_from_spec(sub)
            sub.loader.exec_module(module)
            words = getattr(module, "ENGLISH_STOP_WORDS", None)
            if isinstance(words, frozenset):
                return words
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


_SEGMENT = re.compile(r"[.!?;:,()\[\]{}\"“”…|/\\]+|\s[-–—]+\s|\n")
_WORD = re.compile(r"[^\W\d_]+")


@dataclass(frozen=True, slots=True)
class TopicSettings:
    top_terms: int = 15
    high_rank: int = 5
    medium_rank: int = 10
    high_min_score: float = 0.05
    #: Phrases of two or three words must occur at least this often in an item.
    min_phrase_count: int = 2
    #: The IDF's counts (the number of items, each phrase's document frequency) rounded down
    #: to this many significant bits (:func:`rounded`): exact below ``2 ** frequency_bits``;
    #: 0 keeps them exact.
    frequency_bits: int = 5

    @classmethod
    def from_params(cls, p: Mapping[str, Any] | None) -> TopicSettings:
        p = p or {}
        d = cls()
        bits = int(p.get("frequency_bits", d.frequency_bits))
        if not 0 <= bits <= 62:
            raise ValueError(f"frequency_bits: {bits} is not between 0 and 62")
        return cls(
            top_terms=int(p.get("top_terms", d.top_terms)),
            high_rank=int(p.get("high_rank", d.high_rank)),
            medium_rank=int(p.get("medium_rank", d.medium_rank)),
            high_min_score=float(p.get("high_min_score", d.high_min_score)),
            min_phrase_count=int(p.get("min_phrase_count", d.min_phrase_count)),
            frequency_bits=bits,
        )


def rounded(counts: Any, bits: int) -> np.ndarray:
    """Non-negative integer ``counts`` rounded down to their ``bits`` most significant bits, as
    ``int64``: a count below ``2 ** bits`` is kept, one above loses at most a ``2 ** -(bits -
    1)`` part of itself (with 5 bits: 99 → 96, 1,000 → 992, 10,001 → 9,728); ``bits`` 0
    keeps every count.

    What the topic IDF is computed from (:class:`_Scores`), so that one item's edit, which
    moves each of its new or lost phrases' document frequency by one, changes the rounded
    frequency of few of them: the items that have a phrase whose rounded frequency stayed
    are not ranked again (their ranking is kept under the digest of those frequencies). A
    phrase in ``d`` items moves to another rounded value on about one edit in
    ``d / 2 ** bits``, so an edit ranks again about ``2 ** bits`` items per such phrase
    instead of all ``d`` (docs/index-format.md, "The IDF's counts rounded")."""
    values = np.asarray(counts, dtype=np.int64)
    if bits <= 0 or values.size == 0:
        return values
    # frexp's exponent is the bit length of an integer below 2**53 (exact as a float64).
    length = np.frexp(values.astype(np.float64))[1].astype(np.int64)
    shift = np.maximum(length - bits, 0)
    return (values >> shift) << shift


def rounded_count(count: int, bits: int) -> int:
    """One count :func:`rounded`."""
    return int(rounded(np.array([count], dtype=np.int64), bits)[0])


@dataclass(frozen=True, slots=True)
class TopicInput:
    """What the topic index needs of one item."""

    content_id: str
    text: str
    """The transcript."""
    chunks: Sequence[str] = ()
    """The texts of the item's chunks, in its ``index/chunks/`` order."""
    entities: Sequence[str] = ()
    """Entity names from ``entities.json``."""
    condensed: Sequence[tuple[int, str]] = ()
    """(chunk number within the item, chunk text) of the item's condensed chunks."""


@dataclass(frozen=True, slots=True)
class Term:
    term: str
    score: float
    relevance: str
    chunks: tuple[int, ...]
    source: str
    """``keyphrase`` or ``entity``."""
    condensed: tuple[int, ...] = ()
    """Numbers of the item's condensed chunks that contain the term."""


@dataclass
class TopicIndex:
    doc: dict[str, Any]
    """The ``topics.json`` document."""
    terms: dict[str, list[Term]] = field(default_factory=dict)
    """Content ID → its terms, best first."""


# -- text ---------------------------------------------------------------------------------


@lru_cache(maxsize=1 << 17)
def normalize_term(term: str) -> str:
    """Lower-cased (case-folded), NFC, whitespace collapsed: the key of a topic. Memoised:
    the index stage normalises every item's entity names on each run."""
    return " ".join(unicodedata.normalize("NFC", term).casefold().split())


@lru_cache(maxsize=1 << 17)
def stem_key(term: str) -> str:
    """Stopword-free, stemmed form of a term (``"Hives"`` and ``"hive"`` share it)."""
    return " ".join(tokenize(term))


def clean_transcript(text: str) -> str:
    """The transcript without what repeats on every line: timestamps, speaker labels, chat
    message headers and Markdown heading marks."""
    out = []
    for line in text.split("\n"):
        parsed = parse_line(line)
        if parsed.kind != "chat_header":
            out.append(parsed.text)
    return "\n".join(out)


def phrases(text: str) -> list[str]:
    """1–3-word phrases of ``text``: runs of non-stopwords inside one clause, lower-cased."""
    out: list[str] = []
    for segment in _SEGMENT.split(text.lower()):
        run: list[str] = []
        for word in [*_WORD.findall(segment), ""]:
            if len(word) < 2 or word in stopwords():
                for n in (1, 2, 3):
                    out.extend(" ".join(run[i : i + n]) for i in range(len(run) - n + 1))
                run = []
            else:
                run.append(word)
    return out


def _analyze(text: str) -> list[str]:
    return phrases(clean_transcript(text))


# -- building -----------------------------------------------------------------------------


def _relevance(rank: int, score: float, s: TopicSettings) -> str:
    if rank < s.high_rank and score >= s.high_min_score:
        return "high"
    if rank < s.medium_rank:
        return "medium"
    return "low"


def _chunks_with(key: str, chunk_keys: Sequence[tuple[int, str]]) -> tuple[int, ...]:
    if not key:
        return ()
    needle = f" {key} "
    return tuple(i for i, text in chunk_keys if needle in text)


class _ChunkFinder:
    """:func:`_chunks_with` over one item's chunks, faster: a chunk whose tokens lack one of
    the key's words cannot hold the key, so only the chunks that have them all (by a word →
    chunks map built once per item) are searched for the phrase."""

    def __init__(self, chunk_keys: Sequence[tuple[int, str]]) -> None:
        self.chunk_keys = chunk_keys
        self.where: dict[str, set[int]] | None = None

    def __call__(self, key: str) -> tuple[int, ...]:
        if not key:
            return ()
        if self.where is None:
            self.where = {}
            for n, (_, text) in enumerate(self.chunk_keys):
                for word in text.split():
                    self.where.setdefault(word, set()).add(n)
        words = key.split()
        found = self.where.get(words[0], set())
        for word in words[1:]:
            found = found & self.where.get(word, set())
        if len(words) > 1:
            needle = f" {key} "
            found = {n for n in found if needle in self.chunk_keys[n][1]}
        return tuple(self.chunk_keys[n][0] for n in sorted(found))


@dataclass(frozen=True, slots=True)
class ItemTerms:
    """What the topic index needs of one item, all of it from the item's own files — so the
    index stage caches it per item (``ops/index.py``) and never re-analyses an unchanged
    transcript."""

    content_id: str
    counts: Mapping[str, int]
    """Phrase → how often the item's analysed transcript has it (the TF-IDF count row)."""
    chunk_stems: Sequence[str]
    """:func:`stem_key` of each of the item's chunks, in the item's chunk order."""
    entities: Sequence[str] = ()
    condensed: Sequence[tuple[int, str]] = ()
    """(condensed chunk number, :func:`stem_key` of its text)."""


def item_terms(
    content_id: str,
    text: str,
    chunk_texts: Iterable[str],
    entities: Iterable[str] = (),
    condensed: Iterable[tuple[int, str]] = (),
) -> ItemTerms:
    """The :class:`ItemTerms` of one item (the only place its transcript is analysed)."""
    return ItemTerms(
        content_id=content_id,
        counts=dict(sorted(Counter(_analyze(text)).items())),
        chunk_stems=[stem_key(t) for t in chunk_texts],
        entities=list(entities),
        condensed=[(n, stem_key(t)) for n, t in condensed],
    )


def document_frequencies(items: Iterable[ItemTerms]) -> tuple[int, Counter[str]]:
    """(number of items, phrase → number of items that have it): the IDF's only global input."""
    return phrase_frequencies(it.counts.keys() for it in items)


def phrase_frequencies(items: Iterable[Iterable[str]]) -> tuple[int, Counter[str]]:
    """:func:`document_frequencies` from each item's distinct phrases (the keys of its
    :attr:`ItemTerms.counts`)."""
    n = 0
    df: Counter[str] = Counter()
    for phrases in items:
        n += 1
        df.update(phrases)
    return n, df


class _Scores:
    """One item's phrases by TF-IDF: raw count × smoothed IDF (``ln((1 + n) / (1 + df)) + 1``),
    L2-normalised over the item's phrases — scikit-learn's ``TfidfVectorizer`` defaults, with
    the norm summed exactly (``math.fsum``) so a score depends on nothing but the item's counts
    and the document frequencies, and ``n`` and ``df`` :func:`rounded` to the settings'
    ``frequency_bits`` (exact below ``2 ** frequency_bits``, as scikit-learn's). Phrases of
    two or three words that occur fewer than ``min_phrase_count`` times are not ranked (they
    still count in the norm).

    Computed as arrays, each product and quotient the same IEEE operation as one float at a
    time (so the same bits): an item has thousands of phrases and a run that changes the
    number of items ranks every item again. ``frequencies``: the phrases' document
    frequencies in ``counts``' order, when the caller has them as an array."""

    def __init__(
        self,
        counts: Mapping[str, int],
        df: Mapping[str, int],
        n: int,
        s: TopicSettings,
        frequencies: np.ndarray | None = None,
    ) -> None:
        n = rounded_count(n, s.frequency_bits)
        self.counts, self.df, self.n, self.s = counts, df, n, s
        terms = list(counts)
        size = len(terms)
        count = np.fromiter(counts.values(), dtype=np.float64, count=size)
        if frequencies is None or len(frequencies) != size:
            frequencies = np.fromiter((df[t] for t in terms), dtype=np.int64, count=size)
        frequencies = rounded(frequencies, s.frequency_bits)
        values, where = np.unique(frequencies, return_inverse=True)
        self.idf = {d: math.log((1 + n) / (1 + d)) + 1.0 for d in values.tolist()}
        raw = count * np.array(list(self.idf.values()), dtype=np.float64)[where]
        self.norm = math.sqrt(math.fsum((raw * raw).tolist())) if size else 1.0
        scores = raw / self.norm
        short = np.flatnonzero(count < s.min_phrase_count).tolist()
        dropped = [i for i in short if " " in terms[i]]
        if dropped:
            keep = np.ones(size, dtype=bool)
            keep[dropped] = False
            terms = [terms[i] for i in np.flatnonzero(keep).tolist()]
            scores = scores[keep]
        self.terms, self.scores = terms, scores

    def __len__(self) -> int:
        return len(self.terms)

    def score(self, phrase: str) -> float:
        """A phrase's score (0.0 for one the item does not rank): the same operations as
        the array's."""
        count = self.counts.get(phrase)
        if count is None or (" " in phrase and count < self.s.min_phrase_count):
            return 0.0
        d = rounded_count(int(self.df[phrase]), self.s.frequency_bits)
        idf = self.idf.get(d)
        if idf is None:
            idf = math.log((1 + self.n) / (1 + d)) + 1.0
        return float(count) * idf / self.norm

    def best_first(self, head: int) -> Iterator[tuple[str, float]]:
        """(phrase, score) best first (ties by phrase), sorted lazily: the best ``head`` by a
        partial selection, the rest only when a caller reads past them."""
        terms, size = self.terms, len(self.terms)
        scores: list[float] = self.scores.tolist()

        def key(i: int) -> tuple[float, str]:
            return -scores[i], terms[i]

        partial = 0 < head < size
        if partial:
            # Every phrase scoring below the head-th best is after all of the head best.
            kth = np.partition(self.scores, size - head)[size - head]
            order = sorted(np.flatnonzero(self.scores >= kth).tolist(), key=key)[:head]
        else:
            order = sorted(range(size), key=key)
        for i in order:
            yield terms[i], scores[i]
        if partial:
            for i in sorted(range(size), key=key)[head:]:
                yield terms[i], scores[i]


#: A term's stem key → (its chunks, its condensed chunks) in one item: what an earlier
#: ranking of the same item found (:func:`rank_item`'s ``known``).
ChunkMap = Mapping[str, tuple[Sequence[int], Sequence[int]]]


def rank_item(
    it: ItemTerms,
    df: Mapping[str, int],
    n: int,
    settings: TopicSettings,
    known: ChunkMap | None = None,
    frequencies: np.ndarray | None = None,
) -> list[Term]:
    """One item's terms, best first, with the numbers of its chunks (0-based, in the item's
    chunk order) and condensed chunks that hold each: a function of the item's
    :class:`ItemTerms`, ``n``, the frequencies of its phrases and ``settings`` alone.
    ``known``: chunks found for stem keys by an earlier ranking of the same item (which
    chunks hold a term does not depend on the library), so only new terms are searched.
    ``frequencies``: the document frequencies of ``it.counts``' phrases in their order, as
    an integer array (the same values as ``df`` gives; the index stage has them so)."""
    s, known = settings, known or {}
    scores = _Scores(it.counts, df, n, s, frequencies)
    in_chunks = _ChunkFinder(list(enumerate(f" {k} " for k in it.chunk_stems)))
    condensed_keys = [(c, f" {k} ") for c, k in it.condensed]

    def where(key: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
        hit = known.get(key)
        if hit is not None:
            return tuple(hit[0]), tuple(hit[1])
        return in_chunks(key), _chunks_with(key, condensed_keys)

    # Only ranks below these matter (a later rank is "low" whatever it is): just the best
    # `head` phrases are sorted unless the terms are not chosen from among them.
    head = max(64, 4 * s.top_terms, s.high_rank, s.medium_rank)
    rank_of: dict[str, int] = {}
    terms: dict[str, Term] = {}
    chosen = 0
    stems: set[str] = set()
    # Every run of words inside a chosen phrase, shorter than it: a term that is one is a
    # part of a phrase already chosen.
    parts: set[str] = set()
    for rank, (term, score) in enumerate(scores.best_first(head)):
        if rank < head:
            rank_of[term] = rank
        if chosen >= s.top_terms:
            if rank >= head - 1:
                break
            continue
        words = term.split()
        key = stem_key(term)
        if not key or key in stems or " ".join(words) in parts:
            continue  # an inflection of a term, or a part of a phrase, already chosen
        chosen += 1
        stems.add(key)
        size = len(words)
        parts.update(" ".join(words[i : i + w]) for w in range(1, size)
                     for i in range(size - w + 1))  # fmt: skip
        found, condensed = where(key)
        terms[term] = Term(
            term, round(score, 6), _relevance(rank, score, s), found, "keyphrase", condensed
        )
    for name in sorted({k for k in map(normalize_term, it.entities) if k}):
        if name in terms:
            continue
        analyzed = _as_phrase(name)
        rank = rank_of.get(analyzed, len(scores) + s.medium_rank)
        score = scores.score(analyzed)
        found, condensed = where(stem_key(name))
        terms[name] = Term(
            name, round(score, 6), _relevance(rank, score, s), found, "entity", condensed
        )
    return sorted(terms.values(), key=lambda t: (_RANK[t.relevance], -t.score, t.term))


def build_topics(
    items: Sequence[TopicInput],
    synonyms: Mapping[str, Sequence[str]] | None = None,
    settings: TopicSettings | None = None,
) -> TopicIndex:
    """The topic index over ``items`` (any order; the result does not depend on it)."""
    stats = [item_terms(it.content_id, it.text, it.chunks, it.entities, it.condensed)
             for it in items]  # fmt: skip
    n, df = document_frequencies(stats)
    with TopicBuilder(n, df, synonyms, settings) as builder:
        for it in stats:
            builder.add(it)
        return builder.result()


#: One item's entry under a term as ``topics.json`` holds it, in compact canonical JSON
#: (:func:`entry_json`): a function of the item's ranking alone, since its chunk numbers are
#: the item's own — so the index stage keeps it with the ranking and writes the file from the
#: kept text, never decoding or encoding the entry of an item that was not ranked again.
EntryJson = str

#: Entry text read back per batch of topics (:class:`_EntryFile`): the most a batch holds.
TOPIC_BATCH_BYTES = 16 << 20

#: The span of the entry file read at a time.
_READ_SPAN = 4 << 20

#: ``topics.json`` is written a piece at a time: ``batch`` topics, or fewer when their lines
#: reach this many characters (a few hundred topics hold every entry of a library).
_PIECE_CHARS = 1 << 20


class _EntryFile:
    """The topic entries added to a :class:`TopicBuilder`, in an unnamed temporary file (in
    ``folder``; the system's by default): each entry's JSON text written as it is added,
    its term, relevance, item and place in arrays (≈ 21 bytes an entry). Read back topic by
    topic in the file's order (terms sorted; a topic's entries by relevance, then content
    ID, then text), :data:`TOPIC_BATCH_BYTES` of text at a time — one pass over the file a
    batch. (Held as strings in per-term lists, the entries of 10,000 items were ≈ 60 MB of
    the index stage's topic step, growing with the library; issue 17.)"""

    def __init__(self, folder: Path | None) -> None:
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
        self._fh = tempfile.TemporaryFile(prefix="arkai-topics-", dir=folder)  # noqa: SIM115
        self._terms: dict[str, int] = {}
        self._items: dict[str, int] = {}
        self._term, self._item, self._len = array("i"), array("i"), array("i")
        self._rank = array("b")
        self._at = array("q")
        self._size = 0
        self.marks: dict[str, tuple[str, Any]] = {}
        """Per item the caller's tag and payload (:meth:`TopicBuilder.add_entries`)."""
        self._spans: dict[str, tuple[int, int]] = {}
        """Per item its entries (first, end) in the arrays."""
        self._twice: set[str] = set()
        """Items given more than once (their entries are not one span: never kept)."""
        self._pending: list[tuple[str, int]] = []
        """Items whose entries are copied from :attr:`_source` (by their index there) when
        the entries are first read (:meth:`_take_kept`)."""
        self._source: KeptEntries | None = None
        self._kept: set[str] = set()
        """Items added with their kept entries (:meth:`add_kept`)."""

    def __len__(self) -> int:
        """The number of topics (terms with an entry)."""
        self._take_kept()
        return len(self._terms)

    def close(self) -> None:
        self._fh.close()

    def _item_of(self, content_id: str) -> int:
        """The item's number (a new one for an item not given before)."""
        if content_id in self._items:
            self._twice.add(content_id)
        else:
            self._items[content_id] = len(self._items)
        return self._items[content_id]

    def add(
        self,
        content_id: str,
        entries: Iterable[tuple[str, str, EntryJson]],
        mark: tuple[str, Any] | None = None,
    ) -> None:
        item = self._item_of(content_id)
        first = len(self._term)
        if mark is not None:
            self.marks[content_id] = mark
        parts: list[bytes] = []
        for term, relevance, text in entries:
            data = text.encode("utf-8")
            self._term.append(self._terms.setdefault(term, len(self._terms)))
            self._rank.append(_RANK[relevance])
            self._item.append(item)
            self._at.append(self._size)
            self._len.append(len(data))
            self._size += len(data)
            parts.append(data)
        self._fh.write(b"".join(parts))
        self._spans[content_id] = (first, len(self._term))

    def add_kept(self, content_id: str, source: KeptEntries, k: int) -> None:
        """The item's entries as ``source`` (the last build's) holds them at its index ``k``,
        with their tag and payload: copied in with every other such item's, a span of the
        file at a time, when the entries are first read."""
        if self._source is not None and self._source is not source:
            raise ValueError("the kept entries of one build come from one source")
        self._source = source
        self._item_of(content_id)
        self._kept.add(content_id)
        self._pending.append((content_id, k))
        self.marks[content_id] = (source.tags[k], source.payloads[k])

    def _take_kept(self) -> None:
        """The pending kept items' entries appended: their text copied from the source's
        file (adjacent spans read as one), their terms, items and places in the arrays."""
        pending, src = self._pending, self._source
        if not pending or src is None:
            return
        self._pending = []
        ks = np.array([k for _, k in pending], dtype=np.int64)
        lo, hi = src.first[ks], src.end[ks]
        counts = hi - lo
        has = counts > 0
        # Each item's bytes: from its first entry's start to its last entry's end.
        start, end = np.zeros(len(ks), np.int64), np.zeros(len(ks), np.int64)
        start[has] = src.at[lo[has]]
        end[has] = src.at[hi[has] - 1] + src.lens[hi[has] - 1]
        order = np.argsort(start, kind="stable")
        moved = np.zeros(len(ks), dtype=np.int64)  # each item's new place minus its old
        fd = src.fh.fileno()
        i = 0
        while i < len(order):
            a = int(order[i])
            if not has[a]:
                i += 1
                continue
            run_start, run_end = int(start[a]), int(end[a])
            j = i + 1
            while (
                j < len(order)
                and int(start[order[j]]) == run_end
                and (run_end - run_start < _READ_SPAN)
            ):
                run_end = int(end[order[j]])
                j += 1
            buf = bytearray(run_end - run_start)
            if not read_into(fd, memoryview(buf), src.base + run_start):
                raise KeptEntriesError("the kept topic entries were cut short")
            for b in order[i:j]:
                # Every entry of the item names it (they go into topics.json unread).
                cid = pending[int(b)][0]
                block = bytes(buf[int(start[b]) - run_start : int(end[b]) - run_start])
                if block.count(b'"content_id":') != int(counts[b]) or block.count(
                    b'"content_id":' + canonjson.dumps_compact(cid).encode("utf-8") + b","
                ) != int(counts[b]):
                    raise KeptEntriesError(f"{cid}: kept topic entries that are not its own")
            self._fh.write(buf)
            moved[order[i:j]] = self._size - run_start
            self._size += run_end - run_start
            i = j
        sel = np.repeat(lo - np.cumsum(np.concatenate([[0], counts[:-1]])), counts) + np.arange(
            int(counts.sum()), dtype=np.int64
        )
        used = np.unique(src.term[sel])
        remap = np.zeros(len(src.terms), dtype=np.int32)
        for u in used.tolist():
            remap[u] = self._terms.setdefault(src.terms[u], len(self._terms))
        base = len(self._term)
        self._term.frombytes(remap[src.term[sel]].astype(np.int32).tobytes())
        self._rank.frombytes(src.rank[sel].astype(np.int8).tobytes())
        self._len.frombytes(src.lens[sel].astype(np.int32).tobytes())
        self._at.frombytes((src.at[sel] + np.repeat(moved, counts)).astype(np.int64).tobytes())
        items = np.array([self._items[cid] for cid, _ in pending], dtype=np.int32)
        self._item.frombytes(np.repeat(items, counts).astype(np.int32).tobytes())
        ends = base + np.cumsum(counts)
        for (cid, _), first, stop in zip(
            pending, (ends - counts).tolist(), ends.tolist(), strict=True
        ):
            self._spans[cid] = (first, stop)

    def changed_terms(self) -> set[str] | None:
        """The terms whose ``topics.json`` line may differ from the one the kept entries'
        build wrote: those of every entry of an item not added with its kept entries (ranked
        again, new) and those the kept entries gave an item not added with them (changed or
        gone) — every other item's entries are the ones that line was made from. None when no
        kept entries were given or an item was given twice."""
        src = self._source
        if src is None or self._twice:
            return None
        self._take_kept()
        names = list(self._terms)
        term = np.frombuffer(self._term, np.int32)
        out: set[str] = set()
        for cid, (first, stop) in self._spans.items():
            if cid not in self._kept:
                out.update(names[t] for t in np.unique(term[first:stop]).tolist())
        for cid, k in src.index.items():
            if cid not in self._kept:
                old = src.term[int(src.first[k]) : int(src.end[k])]
                out.update(src.terms[t] for t in np.unique(old).tolist())
        return out

    def _arrays(self) -> tuple[array[int], ...]:
        return self._term, self._rank, self._len, self._at

    def save(self, path: Path, written: WrittenTopics | None = None) -> None:
        """Keep these entries for the next build (:class:`KeptEntries`): those of each item
        given once with a tag, and the text of them all, in one checked record. ``written``:
        the ``topics.json`` made from them (its digest and each topic's line), kept when
        every item's entries are (a later build copies the lines no changed item is in)."""
        self._take_kept()
        self._fh.flush()
        terms = list(self._terms)
        items = [[cid, tag, payload, *self._spans[cid]]
                 for cid, (tag, payload) in self.marks.items()
                 if cid in self._spans and cid not in self._twice]  # fmt: skip
        head: dict[str, Any] = {"format": KEPT_FORMAT, "terms": terms, "items": items,
                                "entries": len(self._term), "size": self._size}  # fmt: skip
        if written is not None and len(items) == len(self._items):
            lines = [[t, a, b] for t, (a, b) in written.lines.items()]
            head["file"] = {"sha256": written.sha256, "lines": lines, "code": _writer_code()}
        fd = self._fh.fileno()

        def fill(put: Callable[[bytes | memoryview], None]) -> None:
            put(json.dumps(head, separators=(",", ":")).encode("ascii") + b"\n")
            for arr, dtype in zip(self._arrays(), _KEPT_DTYPES, strict=True):
                put(np.asarray(arr).astype(dtype).tobytes())
            done = 0
            while done < self._size:
                buf = bytearray(min(_READ_SPAN, self._size - done))
                if not read_into(fd, memoryview(buf), done):
                    raise OSError("the temporary file of topic entries was cut short")
                put(memoryview(buf))
                done += len(buf)

        write_checked_parts(path, fill)

    def topics(
        self, budget: int | None = None, lines: TopicLines | None = None
    ) -> Iterator[tuple[str, str | bytes]]:
        """Each topic's term and its object (``{"items":[…]}``, joined from the entries'
        text: the bytes ``canonjson.dumps_compact`` gives the decoded object), terms sorted.
        ``lines``: a topic it holds a line of (one no changed item is in) comes as that
        line's bytes, its entries not read."""
        self._take_kept()
        self._fh.flush()
        budget = TOPIC_BATCH_BYTES if budget is None else budget
        names = list(self._terms)
        if not names:
            return
        terms = sorted(names)
        lens = np.frombuffer(self._len, np.int32)
        at = np.frombuffer(self._at, np.int64)
        splice = _Splice.of(self, lines, terms)
        sort: _Sorted | None = None

        def sorted_entries() -> _Sorted:
            """Every entry in the writer's order (made when a topic is first made from its
            entries: a build whose changed topics are all patched never sorts them)."""
            nonlocal sort
            if sort is None:
                sort = _Sorted.of(self, names, lens)
            return sort

        def made(ks: list[int]) -> dict[int, str]:
            """The objects of the topics at places ``ks``, joined from their entries read in
            one pass over the file."""
            order, bounds, tied = (s := sorted_entries()).order, s.bounds, s.tied
            picked = np.concatenate([order[int(bounds[k]) : int(bounds[k + 1])] for k in ks])
            texts = self._read(picked, at, lens)
            out, lo = {}, 0
            for k in ks:
                a, b = int(bounds[k]), int(bounds[k + 1])
                mine = texts[lo : lo + b - a]
                for start, stop in _runs(tied[a:b]):
                    mine[start:stop] = sorted(mine[start:stop])
                out[k] = '{"items":[' + ",".join(mine) + "]}"
                lo += b - a
            return out

        # The topics made from their entries (all, or those ``lines`` holds no line of), a
        # batch at a time: the topics in order whose entries' text fits the budget (one at
        # least). Each batch is one pass over the entries' file, so the copied topics do not
        # cut the batches short.
        todo = [k for k in range(len(terms)) if not _given(lines, splice, terms[k])]
        size = np.diff(sorted_entries().spent) if todo else np.zeros(0, np.int64)
        batch: dict[int, str] = {}
        i = 0
        for k, term in enumerate(terms):
            if lines is not None and lines.holds(term):
                line = lines.line(term)
                # Not the term's line (a forged place): made from its entries alone.
                yield (term, line) if line is not None else (term, made([k])[k])
                continue
            if splice is not None and splice.covers(term):
                line = splice.line(k, term)
                yield (term, line) if line is not None else (term, made([k])[k])
                continue
            if k not in batch:
                # Let go before the next batch is read (else two batches' texts are held at
                # once: ≈ 24 MB more at 10,000 items).
                batch.clear()
                j, total = i + 1, int(size[todo[i]])
                while j < len(todo) and total + int(size[todo[j]]) <= budget:
                    total += int(size[todo[j]])
                    j += 1
                batch = made(todo[i:j])
                i = j
            yield term, batch.pop(k)

    def _read(self, picked: npt.NDArray[np.int32], at: Any, lens: Any) -> list[str]:
        """The texts of entries ``picked``, in that order: read in spans of the file in the
        order they lie there."""
        out: list[str] = [""] * len(picked)
        by_place = np.argsort(at[picked], kind="stable")
        starts = at[picked][by_place]
        ends = starts + lens[picked][by_place]
        fd = self._fh.fileno()
        i = 0
        while i < len(by_place):
            j = max(i + 1, int(np.searchsorted(starts, starts[i] + _READ_SPAN)))
            base, end = int(starts[i]), int(ends[i:j].max())
            buf = bytearray(end - base)
            if not read_into(fd, memoryview(buf), base):
                raise OSError("the temporary file of topic entries was cut short")
            for k in range(i, j):
                out[int(by_place[k])] = buf[int(starts[k]) - base : int(ends[k]) - base].decode(
                    "utf-8"
                )
            i = j
        return out


@dataclass
class _Sorted:
    """An entry file's entries in the writer's order: by term, relevance, then item (held
    while the topics are read: the order, four bytes an entry, the ties, one; per topic its
    first entry and the text before it)."""

    order: npt.NDArray[np.int32]
    bounds: npt.NDArray[np.int64]
    tied: npt.NDArray[np.bool_]
    """Two entries of one item under one term at one relevance (not what a ranking gives,
    but what ``add_entries`` may be given): ordered by their text."""
    spent: npt.NDArray[np.int64]

    @classmethod
    def of(cls, entries: _EntryFile, names: list[str], lens: npt.NDArray[np.int32]) -> _Sorted:
        # Each entry's term and item by their places in sort order (four bytes an entry); the
        # ranks are let go (at 10,000 items they and an eight-byte order were ≈ 29 bytes an
        # entry, ≈ 9 MB).
        term_rank = sorted_rank(names).astype(np.int32)[np.frombuffer(entries._term, np.int32)]
        item_rank = sorted_rank(list(entries._items)).astype(np.int32)[
            np.frombuffer(entries._item, np.int32)
        ]
        rank = np.frombuffer(entries._rank, np.int8)
        order = np.lexsort((item_rank, rank, term_rank)).astype(np.int32)
        ranked = term_rank[order]
        del term_rank
        bounds = np.searchsorted(ranked, np.arange(len(names) + 1))
        tied = np.zeros(len(order), dtype=bool)
        tied[1:] = np.diff(ranked) == 0
        del ranked
        tied[1:] &= np.diff(rank[order]) == 0
        tied[1:] &= np.diff(item_rank[order]) == 0
        del item_rank
        spent = np.concatenate([[0], np.cumsum(lens[order], dtype=np.int64)])[bounds]
        return cls(order, bounds, tied, spent)


def _given(lines: TopicLines | None, splice: _Splice | None, term: str) -> bool:
    """Whether a topic's line comes copied or patched (not made from its entries)."""
    return lines is not None and (lines.holds(term) or (splice is not None and splice.covers(term)))


class _Splice:
    """The lines of the topics a changed item is in, patched: the last file's line of such a
    topic (:meth:`TopicLines.old_line`) holds the entries of the last build's items
    (:attr:`TopicLines.source`) in the order the writer puts them — relevance, then content
    ID — so where each entry is follows from the kept record's lengths, without reading the
    line. The entries of the items not added with their kept entries (changed, gone) are cut
    out, those items' new ones are put in by the same order, and the line is the bytes
    :meth:`_EntryFile.topics` would join from every entry (tested against it; an item's
    entries at one relevance are in their text's order in both). A topic whose line cannot
    be patched so — none in the last file, a place that does not hold its line or a line not
    of the lengths the record gives — is made from its entries."""

    def __init__(self, lines: TopicLines, src: KeptEntries, kept: Container[str]) -> None:
        """``kept``: the content IDs of the items added with their kept entries."""
        self.lines = lines
        self.src = src
        # Each kept entry's item (its index in the record), and each item's place among the
        # record's content IDs sorted.
        item = np.full(len(src.term), -1, dtype=np.int64)
        counts = src.end - src.first
        before = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        item[np.repeat(src.first - before, counts) + np.arange(int(counts.sum()))] = np.repeat(
            np.arange(len(counts)), counts
        )
        self.cids = [""] * len(src.first)
        for cid, k in src.index.items():
            self.cids[k] = cid
        self.sorted_cids = sorted(self.cids)
        cid_rank = sorted_rank(self.cids)
        self.item = item
        self.key = np.where(item >= 0, src.rank.astype(np.int64) * (2 * len(self.cids) + 2)
                            + 2 * cid_rank[np.maximum(item, 0)] + 1, -1)  # fmt: skip
        order = np.lexsort((self.key, src.term))
        self.order = order
        self.bounds = np.searchsorted(src.term[order], np.arange(len(src.terms) + 1))
        self.term_of = {t: n for n, t in enumerate(src.terms)}
        self.kept_items = np.array([c in kept for c in self.cids], dtype=bool)
        """Per item of the record, whether it was added with its kept entries."""
        self.fresh: dict[int, list[tuple[int, str, str]]] = {}
        """Per topic (this build's term number) its new entries: (relevance rank, content
        ID, text), in the writer's order (filled by :meth:`of`)."""

    @classmethod
    def of(cls, entries: _EntryFile, lines: TopicLines | None, terms: list[str]) -> _Splice | None:
        """The patcher of ``entries``' topics whose last line ``lines`` holds, with their new
        entries (those of the items not added with their kept entries: read in one pass over
        the entries' file); None when there is none to patch."""
        src = lines.source if lines is not None else None
        if lines is None or src is None or not lines.old or src is not entries._source:
            return None
        self = cls(lines, src, entries._kept)
        if np.any(self.item < 0):
            return None  # (an entry of no item: not a record a file was kept with)
        place = {t: k for k, t in enumerate(terms) if self.covers(t)}
        if not place:
            return None
        self.fresh = {k: [] for k in place.values()}
        spans = [(cid, a, b) for cid, (a, b) in entries._spans.items() if cid not in entries._kept]
        if spans:
            every = np.concatenate([np.arange(a, b, dtype=np.int64) for _, a, b in spans])
            texts = entries._read(every, np.frombuffer(entries._at, np.int64),
                                  np.frombuffer(entries._len, np.int32))  # fmt: skip
            names = list(entries._terms)
            term_of, rank = entries._term, entries._rank
            n = 0
            for cid, a, b in spans:
                for e in range(a, b):
                    k = place.get(names[term_of[e]])
                    if k is not None:
                        self.fresh[k].append((rank[e], cid, texts[n]))
                    n += 1
        for got in self.fresh.values():
            got.sort()
        return self

    def covers(self, term: str) -> bool:
        return term in self.lines.old and not self.lines.holds(term)

    def line(self, k: int, term: str) -> bytes | None:
        """The topic's line, patched; None when it cannot be (then it is made)."""
        t = self.term_of.get(term)
        fresh = self.fresh.get(k)
        if t is None or fresh is None:
            return None
        idx = self.order[int(self.bounds[t]) : int(self.bounds[t + 1])]
        key = self.key[idx]  # (an item's entries at one relevance lie in the text's order)
        old = self.lines.old_line(term)
        head = _topic_line(term, '{"items":[').encode("utf-8")
        if old is None or not old.startswith(head):
            return None
        lens = self.src.lens[idx].astype(np.int64)
        body = len(old) - len(head) - 2
        if body != int(lens.sum()) + max(len(idx) - 1, 0):
            return None
        starts = len(head) + np.concatenate([[0], np.cumsum(lens + 1)[:-1]]).astype(np.int64)
        keep = self.kept_items[self.item[idx]]
        # Where each new entry goes: before the first kept entry of a greater (relevance,
        # content ID); an item's own old entries are cut out, so its place among them is moot.
        width = 2 * len(self.cids) + 2
        wanted = [r * width + 2 * bisect.bisect_left(self.sorted_cids, cid) for r, cid, _ in fresh]
        places: list[int] = np.searchsorted(key, np.asarray(wanted, np.int64), "left").tolist()
        cuts = sorted({0, len(idx), *places, *(np.flatnonzero(np.diff(keep)) + 1).tolist()})
        pieces: list[bytes] = []
        j = 0
        for a, b in itertools.pairwise(cuts):
            while j < len(fresh) and places[j] == a:
                pieces.append(fresh[j][2].encode("utf-8"))
                j += 1
            if keep[a]:
                pieces.append(old[int(starts[a]) : int(starts[b - 1] + lens[b - 1])])
        while j < len(fresh):
            pieces.append(fresh[j][2].encode("utf-8"))
            j += 1
        self.lines.spliced += 1
        return head + b",".join(pieces) + b"]}"


class KeptEntriesError(ValueError):
    """Kept entries (:class:`KeptEntries`) found not to be what they claim as they are
    copied: the caller builds without them."""


#: The record of :meth:`_EntryFile.save` (:class:`KeptEntries`).
KEPT_FORMAT = 1
#: Its arrays after the head line: each entry's term, relevance, length and place.
_KEPT_DTYPES = ("<i4", "<i1", "<i4", "<i8")


@dataclass(eq=False)
class KeptEntries:
    """The topic entries of the last build, kept for the next (:meth:`TopicBuilder.keep`):
    per item its caller's tag and payload and its entries — their terms, relevances and
    text — so an item whose tag is the same is added without its entries being read or made
    again (:meth:`TopicBuilder.add_kept`). One record checked whole when read (a digest over
    it; the text is hashed a piece at a time and read again, a span at a time, when copied);
    kept open while used. Each item's entries are checked to name it as they are copied."""

    terms: list[str]
    index: dict[str, int]
    """Content ID → the item's index."""
    tags: list[str]
    payloads: list[Any]
    first: npt.NDArray[np.int64]
    end: npt.NDArray[np.int64]
    term: npt.NDArray[np.int32]
    rank: npt.NDArray[np.int8]
    lens: npt.NDArray[np.int32]
    at: npt.NDArray[np.int64]
    fh: BinaryIO
    base: int
    """Where the entries' text starts in the file."""
    file: tuple[str, dict[str, tuple[int, int]]] | None = None
    """The ``topics.json`` made from these entries when every item's entries are here: its
    SHA-256 and each topic's line (:class:`WrittenTopics`)."""

    def close(self) -> None:
        self.fh.close()

    def match(self, content_id: str, tag: str) -> int | None:
        """The item's index when it is kept under ``tag``."""
        k = self.index.get(content_id)
        return k if k is not None and self.tags[k] == tag else None

    @classmethod
    def read(cls, path: Path) -> KeptEntries | None:
        """The record at ``path``; None when it is missing, damaged or not one."""
        return open_checked(path, cls._checked)

    @classmethod
    def _checked(cls, fh: BinaryIO) -> KeptEntries | None:
        head = checked_head(fh, KEPT_FORMAT)
        if head is None:
            return None
        digest, h, doc = head
        m, size, terms, items = doc["entries"], doc["size"], doc["terms"], doc["items"]
        if not (type(m) is int and type(size) is int and m >= 0 and size >= 0
                and isinstance(terms, list) and all(type(t) is str for t in terms)
                and isinstance(items, list)):  # fmt: skip
            return None
        arrays = []
        for dtype in _KEPT_DTYPES:
            data = fh.read(m * np.dtype(dtype).itemsize)
            if len(data) != m * np.dtype(dtype).itemsize:
                return None
            h.update(data)
            arrays.append(np.frombuffer(data, dtype).astype(np.dtype(dtype).newbyteorder("=")))
        base = fh.tell()
        left = size
        while left:
            piece = fh.read(min(left, _READ_SPAN))
            if not piece:
                return None
            h.update(piece)
            left -= len(piece)
        if fh.read(1) or "sha256:" + h.hexdigest() != digest:
            return None
        term, rank, lens, at = arrays
        if m and (term.min() < 0 or term.max() >= len(terms) or rank.min() < 0
                  or rank.max() >= len(RELEVANCES) or lens.min() <= 0 or at.min() < 0
                  or int((at + lens).max()) > size):  # fmt: skip
            return None
        index: dict[str, int] = {}
        tags: list[str] = []
        payloads: list[Any] = []
        first, end = np.zeros(len(items), np.int64), np.zeros(len(items), np.int64)
        for k, row in enumerate(items):
            cid, tag, payload, a, b = row
            if not (type(cid) is str and type(tag) is str and type(a) is int
                    and type(b) is int and 0 <= a <= b <= m and cid not in index):  # fmt: skip
                return None
            index[cid] = k
            tags.append(tag)
            payloads.append(payload)
            first[k], end[k] = a, b
        return cls(terms, index, tags, payloads, first, end, term, rank, lens, at, fh, base,
                   _written_file(doc.get("file")))  # fmt: skip


def _writer_code() -> str:
    """The digest of this module's source, kept with a file's lines: lines another version of
    the writer made are not copied (the first build after an upgrade writes every line)."""
    return source_digest(__name__, "arkai.core.canonjson")


def _written_file(doc: Any) -> tuple[str, dict[str, tuple[int, int]]] | None:
    """A kept record's ``file`` (``{"sha256": …, "lines": [[term, start, end], …], "code":
    …}``), or None when it is missing, not of that form or written by other code (then no
    line is copied)."""
    if not isinstance(doc, dict) or type(doc.get("sha256")) is not str:
        return None
    if doc.get("code") != _writer_code():
        return None
    lines = doc.get("lines")
    if not isinstance(lines, list):
        return None
    spans: dict[str, tuple[int, int]] = {}
    for row in lines:
        if not (isinstance(row, list) and len(row) == 3 and type(row[0]) is str
                and type(row[1]) is int and type(row[2]) is int and 0 <= row[1] < row[2]
                and row[0] not in spans):  # fmt: skip
            return None
        spans[row[0]] = (row[1], row[2])
    return doc["sha256"], spans


def _runs(tied: npt.NDArray[np.bool_]) -> Iterator[tuple[int, int]]:
    """(start, stop) of each run of entries tied with the one before (the run's first is
    the one before the first tied)."""
    at = np.flatnonzero(tied)
    if not len(at):
        return
    breaks = np.flatnonzero(np.diff(at) != 1) + 1
    for group in np.split(at, breaks):
        yield int(group[0]) - 1, int(group[-1]) + 1


def entry_json(content_id: str, t: Term, condensed: bool) -> EntryJson:
    """The ``topics.json`` entry of ``t`` (a term of :func:`rank_item`'s ranking of the item
    ``content_id``); ``condensed``: the item has condensed chunks (then ``condensed_chunks``
    is listed)."""
    out: dict[str, Any] = {"content_id": content_id, "relevance": t.relevance,
                           "chunks": list(t.chunks)}  # fmt: skip
    if condensed:
        out["condensed_chunks"] = list(t.condensed)
    return canonjson.dumps_compact(out)


class TopicBuilder:
    """The topic index from per-item statistics, one item at a time (any order): ``n`` and
    ``df`` are :func:`document_frequencies` over all the items that will be added.
    ``keep_terms``: keep each item's ranked terms for :meth:`result` (``TopicIndex.terms``);
    a caller that only writes the file (:meth:`iter_json`) need not. The entries go to a
    temporary file in ``folder`` (:class:`_EntryFile`; the system's temporary folder by
    default): ``close`` it, or use the builder as a context manager."""

    def __init__(
        self,
        n: int,
        df: Mapping[str, int],
        synonyms: Mapping[str, Sequence[str]] | None = None,
        settings: TopicSettings | None = None,
        *,
        keep_terms: bool = True,
        folder: Path | None = None,
    ) -> None:
        self.n, self.df = n, df
        self.synonyms = synonyms or {}
        self.settings = settings or TopicSettings()
        self.keep_terms = keep_terms
        self.terms: dict[str, list[Term]] = {}
        self._entries = _EntryFile(folder)

    def __enter__(self) -> TopicBuilder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._entries.close()

    @property
    def n_topics(self) -> int:
        """Terms with an entry (the topics of :meth:`result`)."""
        return len(self._entries)

    def add(self, it: ItemTerms) -> None:
        """Rank one item and add it."""
        self.add_ranked(it.content_id, self.rank(it), bool(it.condensed))

    def rank(
        self, it: ItemTerms, known: ChunkMap | None = None, frequencies: np.ndarray | None = None
    ) -> list[Term]:
        """The item's terms, best first (:func:`rank_item` under this builder's
        frequencies and settings)."""
        return rank_item(it, self.df, self.n, self.settings, known, frequencies)

    def add_ranked(self, content_id: str, ranked: Sequence[Term], condensed: bool) -> None:
        """Add one item's :func:`rank_item` result; ``condensed``: whether the item has
        condensed chunks (its entries then list ``condensed_chunks``)."""
        if self.keep_terms:
            self.terms[content_id] = list(ranked)
        self.add_entries(content_id, [(t.term, t.relevance, entry_json(content_id, t, condensed))
                                      for t in ranked])  # fmt: skip

    def add_entries(
        self,
        content_id: str,
        entries: Iterable[tuple[str, str, EntryJson]],
        mark: tuple[str, Any] | None = None,
    ) -> None:
        """Add one item's entries as :func:`entry_json` made them: (term, relevance, JSON).
        ``mark``: a tag (what the entries were made from) and a payload (JSON) to keep them
        under for the next build (:meth:`keep`, :meth:`add_kept`)."""
        self._entries.add(content_id, entries, mark)

    def add_kept(self, content_id: str, kept: KeptEntries, k: int) -> None:
        """Add one item's entries as the last build kept them (``kept.match`` gave ``k``),
        with their tag and payload; none of them is read or made again."""
        self._entries.add_kept(content_id, kept, k)

    def take_kept(self) -> None:
        """Copy in the entries of the items added with :meth:`add_kept` now (else they are
        when first read): :class:`KeptEntriesError` when they are not what they claim."""
        self._entries._take_kept()

    def keep(self, path: Path, written: WrittenTopics | None = None) -> None:
        """Keep the entries of the items added with a mark (or kept) for the next build, in
        the record at ``path`` (:meth:`KeptEntries.read`); ``written``: the ``topics.json``
        :meth:`iter_json` made (kept with them, see :meth:`lines_from`)."""
        self._entries.save(path, written)

    def lines_from(self, kept: KeptEntries, fh: BinaryIO, sha256: str) -> TopicLines | None:
        """The lines of the ``topics.json`` open at ``fh`` (its SHA-256 ``sha256``) that
        :meth:`iter_json` may copy: when ``kept`` (the entries added with :meth:`add_kept`)
        was kept with that file, each topic's line but those of :meth:`changed_terms` (those
        are patched, :class:`TopicLines`). None when it was not."""
        file = kept.file
        changed = self._entries.changed_terms()
        if file is None or changed is None or file[0] != sha256:
            return None
        spans = {t: span for t, span in file[1].items() if t not in changed}
        old = {t: span for t, span in file[1].items() if t in changed}
        return TopicLines(fh, spans, old, kept) if spans or old else None

    def result(self) -> TopicIndex:
        """The index of every item added so far."""
        doc = {
            "version": TOPICS_VERSION,
            "topics": {t: json.loads(text) for t, text in self._entries.topics()},
            "synonyms": merge_synonyms(self.synonyms),
        }
        return TopicIndex(doc=doc, terms=self.terms)

    def iter_json(
        self,
        batch: int = 2048,
        lines: TopicLines | None = None,
        written: WrittenTopics | None = None,
    ) -> Iterator[bytes]:
        """``topics.json`` of :meth:`result`'s document, in pieces, the document never made:
        each topic's line is joined from its entries' kept text, or copied from ``lines``
        (:meth:`lines_from`). ``written``: filled with each line's place and the digest of
        the whole as the pieces are given."""
        return _topics_json(merge_synonyms(self.synonyms), self._entries.topics(lines=lines),
                            TOPICS_VERSION, batch, written)  # fmt: skip


def iter_topics_json(doc: Mapping[str, Any], batch: int = 2048) -> Iterator[bytes]:
    """``topics.json`` in pieces (a few thousand terms each), never the whole file in memory:
    the top level as :func:`arkai.core.canonjson.dumps` writes it (two-space indent, keys
    sorted), each topic on a line of its own in compact canonical JSON
    (``"term": {"items":[…]}``). The standard library writes compact JSON in C, several times
    faster than its indented encoder, and the file is less than half the size; a topic per line
    still diffs line by line. A document of another shape than :meth:`TopicBuilder.result`'s
    is written by ``canonjson``."""
    topics = doc.get("topics")
    if set(doc) != {"synonyms", "topics", "version"} or not isinstance(topics, dict):
        yield canonjson.dumps(doc).encode("utf-8")
        return
    yield from _topics_json(
        doc["synonyms"], ((t, canonjson.dumps_compact(topics[t])) for t in sorted(topics)),
        doc["version"], batch,
    )  # fmt: skip


def _topics_json(
    synonyms: Any,
    topics: Iterable[tuple[str, str | bytes]],
    version: Any,
    batch: int,
    written: WrittenTopics | None = None,
) -> Iterator[bytes]:
    """The writer of :func:`iter_topics_json`: ``topics`` each term (sorted) and its object
    in compact canonical JSON, or its whole line's bytes (copied). ``written``: each line's
    place (its bytes without the separator) and the digest of the pieces."""
    digest = hashlib.sha256()
    pos = 0

    def give(data: bytes) -> bytes:
        nonlocal pos
        digest.update(data)
        pos += len(data)
        return data

    parts = ["{\n", '  "synonyms": ', _pad(canonjson.dumps(synonyms)[:-1], "  "), ",\n"]
    pending = iter(topics)
    first = next(pending, None)
    if first is None:
        yield give(("".join(parts) + '  "topics": {},\n').encode("utf-8"))
    else:
        yield give(("".join(parts) + '  "topics": {\n').encode("utf-8"))
        out: list[bytes] = []
        size = 0
        for term, value in itertools.chain([first], pending):
            if out and (len(out) == batch or size >= _PIECE_CHARS):
                yield give(b",\n".join(out) + b",\n")
                out, size = [], 0
            line = value if isinstance(value, bytes) else _topic_line(term, value).encode("utf-8")
            if written is not None:
                at = pos + size + 2 * len(out)  # the lines before it in this piece, each ",\n"
                written.lines[term] = (at, at + len(line))
            out.append(line)
            size += len(line)
        yield give(b",\n".join(out) + b"\n")
        yield give(b"  },\n")
    yield give(('  "version": ' + json.dumps(version) + "\n}\n").encode("utf-8"))
    if written is not None:
        written.sha256 = "sha256:" + digest.hexdigest()


def _topic_line(term: str, text: str) -> str:
    return f"    {canonjson.dumps_compact(term)}: {text}"


@dataclass
class WrittenTopics:
    """What :meth:`TopicBuilder.iter_json` wrote: each topic's line (where its bytes are in
    the file, the separator after it left out) and the file's SHA-256 (``sha256:…``)."""

    lines: dict[str, tuple[int, int]] = field(default_factory=dict)
    sha256: str = ""


class TopicLines:
    """Lines of the last ``topics.json`` (open at ``fh``) that a build copies: per term where
    its line is (:attr:`KeptEntries.file`). A line is given only when it is the term's —
    it opens with the term as the writer writes it — else the topic is made from its
    entries.

    ``old``: where the lines of the other topics are, those a changed item is in, and
    ``source`` the kept entries that file was made from: such a line is patched — the
    entries of the items not kept cut out, the new ones put in their places — instead of
    made from every entry again (:class:`_Splice`; at 10,000 items one changed item's
    topics were ≈ 400 lines of ≈ 400 entries each, read and joined again)."""

    def __init__(
        self,
        fh: BinaryIO,
        spans: Mapping[str, tuple[int, int]],
        old: Mapping[str, tuple[int, int]] | None = None,
        source: KeptEntries | None = None,
    ) -> None:
        self.fh, self.spans = fh, spans
        self.old = old or {}
        self.source = source
        self.copied = 0
        self.spliced = 0

    def holds(self, term: str) -> bool:
        return term in self.spans

    def line(self, term: str) -> bytes | None:
        return self._read(term, self.spans.get(term), count=True)

    def old_line(self, term: str) -> bytes | None:
        """The last file's line of a topic a changed item is in (None: it had none, or the
        place does not hold the term's line)."""
        return self._read(term, self.old.get(term), count=False)

    def _read(self, term: str, span: tuple[int, int] | None, *, count: bool) -> bytes | None:
        if span is None:
            return None
        a, b = span
        buf = bytearray(b - a)
        opening = _topic_line(term, "").encode("utf-8")
        if not read_into(self.fh.fileno(), memoryview(buf), a) or not buf.startswith(opening):
            return None
        self.copied += count
        return bytes(buf)


def _pad(text: str, pad: str) -> str:
    return text.replace("\n", "\n" + pad)


@lru_cache(maxsize=1 << 14)
def _as_phrase(name: str) -> str:
    """An entity name in the TF-IDF vocabulary's form (its words, stopwords dropped)."""
    words = [w for w in _WORD.findall(name.lower()) if len(w) >= 2 and w not in stopwords()]
    return " ".join(words)


# -- synonyms -----------------------------------------------------------------------------


def load_synonyms(path: Path) -> dict[str, list[str]]:
    """``synonyms.yaml`` as ``{term: [synonym, …]}``; a missing or empty file is ``{}``."""
    data = read_repo_file(path, path.parent, missing_ok=True)
    if data is None:
        return {}
    try:
        raw = yaml.safe_load(data.decode("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise LibraryError(f"{path}: not valid YAML ({exc})") from None
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise LibraryError(f"{path}: expected a mapping `term: [synonym, …]`")
    out: dict[str, list[str]] = {}
    for key, value in raw.items():
        if value is None:
            value = []
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str | int | float) for v in value):
            raise LibraryError(f"{path}: {key}: expected a list of synonyms")
        out[str(key)] = [str(v) for v in value]
    return out


def merge_synonyms(raw: Mapping[str, Iterable[str]]) -> dict[str, list[str]]:
    """Normalised, symmetric synonym map: each member of a group maps to all the others."""
    groups: dict[str, set[str]] = {}
    for term, syns in raw.items():
        members = {normalize_term(term), *(normalize_term(s) for s in syns)} - {""}
        for m in list(members):
            members |= groups.get(m, set())
        for m in members:
            groups[m] = members
    return {t: sorted(g - {t}) for t, g in sorted(groups.items()) if len(g) > 1}


# -- reading ------------------------------------------------------------------------------


def _read(path: Path) -> dict[str, Any]:
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise NotFoundError(
            f"{path}: no topic index", hint="run `arkai reindex` (or `dvc repro`) first"
        ) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LibraryError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(obj, dict):
        raise LibraryError(f"{path}: expected a JSON object")
    return obj


def chunk_offsets(catalog_items: Iterable[Any]) -> dict[str, int]:
    """Content ID → the position in ``index/chunks/`` of the item's first chunk, from the
    items of ``catalog.json`` (the file's order, each with its chunk count): what turns the
    chunk numbers of ``topics.json`` (within the item) into positions in the file. Entries
    that are not an item with a whole chunk count are left out (so are the items after one:
    their positions would be guesses)."""
    out: dict[str, int] = {}
    position = 0
    for e in catalog_items:
        cid = e.get("id") if isinstance(e, dict) else None
        count = e.get("chunks") if isinstance(e, dict) else None
        if not isinstance(cid, str) or type(count) is not int or count < 0:
            break
        out[cid] = position
        position += count
    return out


def lookup_topic(index_dir: Path, term: str) -> list[dict[str, Any]]:
    """Items indexed under ``term``, its synonyms, or any term with the same stems.

    One hit per item: ``{content_id, title, path, relevance, chunks, condensed_chunks, terms,
    via}`` — the best relevance over the matched terms, the union of their chunks (positions in
    ``index/chunks/``, from the item's own chunk numbers and ``catalog.json``; none for an item
    the catalog does not list) and of their condensed chunks (numbers within the item), the
    matched terms, and ``via`` = ``exact`` | ``stem`` | ``synonym``
    (the closest way any of them matched). Best relevance first, then exact before stem
    before synonym, then content ID. Title and path come from ``catalog.json`` when present.
    """
    doc = _read(index_dir / "topics.json")
    topics: dict[str, Any] = doc.get("topics") or {}
    synonyms: dict[str, list[str]] = doc.get("synonyms") or {}
    by_stem: dict[str, list[str]] = {}
    for t in topics:
        by_stem.setdefault(stem_key(t), []).append(t)
    for t in synonyms:
        by_stem.setdefault(stem_key(t), []).append(t)
    q = normalize_term(term)
    if not q:
        return []
    qstem = stem_key(q)
    # The query, the terms sharing its stems, then every synonym of either.
    matched: dict[str, str] = {q: "exact"}
    for t in by_stem.get(qstem, []) if qstem else []:
        matched.setdefault(t, "stem")
    for t in list(matched):
        for syn in synonyms.get(t, []):
            matched.setdefault(syn, "synonym")
            for t2 in by_stem.get(stem_key(syn), []) if stem_key(syn) else []:
                matched.setdefault(t2, "synonym")
    catalog: dict[str, dict[str, Any]] = {}
    offsets: dict[str, int] = {}
    cat_path = index_dir / "catalog.json"
    if cat_path.is_file():
        listed = _read(cat_path).get("items")
        listed = listed if isinstance(listed, list) else []
        catalog = {str(e.get("id")): e for e in listed if isinstance(e, dict)}
        offsets = chunk_offsets(listed)
    # Version 1 files held positions in index/chunks/ already.
    local = doc.get("version") != 1
    order = {"exact": 0, "stem": 1, "synonym": 2}
    hits: dict[str, dict[str, Any]] = {}
    for t, via in matched.items():
        for entry in (topics.get(t) or {}).get("items", []):
            cid = str(entry["content_id"])
            rel = str(entry.get("relevance", "low"))
            hit = hits.setdefault(
                cid,
                {"content_id": cid, "relevance": rel, "chunks": set(), "terms": set(), "via": via,
                 "condensed_chunks": set()},
            )  # fmt: skip
            if _RANK.get(rel, 2) < _RANK.get(hit["relevance"], 2):
                hit["relevance"] = rel
            if order[via] < order[hit["via"]]:
                hit["via"] = via
            chunks = [int(c) for c in entry.get("chunks", [])]
            if not local:
                hit["chunks"].update(chunks)
            elif cid in offsets:
                hit["chunks"].update(offsets[cid] + c for c in chunks)
            hit["condensed_chunks"].update(int(c) for c in entry.get("condensed_chunks", []))
            hit["terms"].add(t)
    out = []
    for hit in hits.values():
        entry = catalog.get(hit["content_id"], {})
        out.append(
            {
                **hit,
                "chunks": sorted(hit["chunks"]),
                "condensed_chunks": sorted(hit["condensed_chunks"]),
                "terms": sorted(hit["terms"]),
                "title": entry.get("title"),
                "path": entry.get("path"),
            }
        )
    out.sort(key=lambda h: (_RANK.get(h["relevance"], 2), order[h["via"]], h["content_id"]))
    return out


def grep_library(root: Path, term: str, limit: int = 20) -> list[dict[str, Any]]:
    """Case-insensitive search of every ``transcript.md``: ``{content_id, line, text}`` for
    the first ``limit`` matching lines (items in path order, lines in order)."""
    needle = term.casefold().strip()
    out: list[dict[str, Any]] = []
    if not needle or limit <= 0:
        return out
    for item in iter_items(root):
        data = item.read("transcript.md", missing_ok=True)
        if data is None:
            continue
        text = data.decode("utf-8", errors="replace")
        for n, line in enumerate(text.split("\n"), 1):
            if needle in line.casefold():
                out.append({"content_id": item.id, "line": n, "text": line})
                if len(out) >= limit:
                    return out
    return out
