"""``arkai search``: hybrid retrieval over ``index/`` (DESIGN §7, seed 003 "Query pipeline").

The plan for one query:

1. parse the markup (:func:`arkai.search.markup.parse_query`);
2. build a boolean mask over the chunks of ``index/chunks/``: ``in:``/``tag:``/dates from
   ``index/catalog.json``, ``asof:`` from git history (:mod:`arkai.adapters.history`), then
   phrases (must occur) and exclusions (must not), case-insensitive;
3. rank the allowed chunks in the lexical lane (BM25, ``index/lexical``) and/or the vector lane
   (the query embedded by the index's embedder, cosine against ``index/vectors``) — the model
   libraries are imported only when the vector lane runs;
4. fuse the lanes — steps 3 and 4 are :func:`arkai.search.pipeline.rank`, the one pipeline
   that ``arkai eval retrieval`` and ``bench/search.py`` measure too (both lanes score every
   candidate, z-normalised, equal weights, a bonus for each lane's top hit; a vector hit must
   reach the calibrated similarity floor), keeping each lane's rank and contribution for
   ``--explain``;
5. with the hooks of ``params.yaml`` (:mod:`arkai.search.hooks`): the ``expand`` hook's
   query variants run as extra lanes in step 3, and the ``rerank`` hook's scores are blended into
   the best chunks' fused scores (:func:`arkai.search.blend.blend_rerank`); a failing hook is a
   warning, never an error;
6. feedback votes for this query (``feedback/``, :mod:`arkai.ops.feedback`) move their items by
   a small, capped boost (:func:`arkai.search.blend.boost_feedback`);
7. group by item (best chunk first, up to three chunks per item), attach the item's claims that
   lie in each chunk (rejected ones left out) and a snippet around the query terms.

Reads only; nothing under ``library/``, ``extracted/`` or ``index/`` is written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from arkai.adapters.chunkparts import FOLDER as CHUNKS_FOLDER
from arkai.adapters.chunkparts import LISTING, ChunkParts
from arkai.adapters.layout import EVIDENCE, EXTRACTED, INDEX, LIBRARY, REVIEW, TRANSCRIPT
from arkai.adapters.params import load_params
from arkai.adapters.repo import Repo
from arkai.adapters.review import apply_review, is_rejected, load_review
from arkai.adapters.store import read_evidence, read_json
from arkai.core.itemdate import item_day
from arkai.errors import ArkaiError, InvalidInputError, LibraryError, NotFoundError
from arkai.model.evidence import EvidenceLine
from arkai.ops.feedback import feedback_path, net_votes
from arkai.search import pipeline
from arkai.search.blend import RERANK_TOP, blend_rerank, boost_feedback
from arkai.search.bm25 import BM25Index
from arkai.search.chunks import CLAIM_KIND, Chunk
from arkai.search.hooks import SearchHooks
from arkai.search.markup import Query, parse_query
from arkai.search.pipeline import LEXICAL, MIN_SIMILARITY, MODES, Corpus, Ranked, Variant
from arkai.search.pipeline import VECTOR as VECTOR_LANE
from arkai.search.snippet import make_snippet, mark
from arkai.search.text import tokenize

__all__ = [
    "MODES",
    "ClaimRef",
    "Hit",
    "ItemResult",
    "SearchIndex",
    "SearchResult",
    "load_index",
    "search",
]

CHUNKS_PER_ITEM = 3
SNIPPET_WIDTH = 240

BoolArray = npt.NDArray[np.bool_]


# -- the index -----------------------------------------------------------------------------


@dataclass
class SearchIndex:
    """The parts of ``index/`` that search reads, loaded once (lanes lazily)."""

    root: Path
    chunks: list[Chunk]
    """``index/chunks/``'s lines, in order (= BM25 document order)."""
    catalog: dict[str, dict[str, Any]]
    """Content ID → catalog entry."""
    manifest: dict[str, Any]
    """``index/manifest.json`` (empty when missing)."""
    _bm25: BM25Index | None = field(default=None, repr=False)
    _flat: dict[int, str] | None = field(default=None, repr=False)
    _content: npt.NDArray[np.int64] | None = field(default=None, repr=False)
    _vectors: Any = field(default=None, repr=False)
    """``(VectorStore, chunk → store row or -1)`` once the vector lane has run."""
    _corpora: dict[str, Corpus] = field(default_factory=dict, repr=False)
    """The pipeline's corpus per mode (it caches per-corpus work across queries)."""
    _everything: BoolArray | None = field(default=None, repr=False)

    @property
    def folder(self) -> Path:
        return self.root / INDEX

    def bm25(self) -> BM25Index:
        if self._bm25 is None:
            path = self.folder / "lexical"
            if not path.is_dir():
                raise _missing(self.root, "index/lexical")
            try:
                bm = BM25Index.load(path)
            except InvalidInputError as exc:
                raise LibraryError(str(exc), hint=_REBUILD) from None
            if bm.n_docs != len(self.chunks):
                raise LibraryError(
                    f"index/lexical has {bm.n_docs} documents but index/chunks/ has "
                    f"{len(self.chunks)} chunks",
                    hint=_REBUILD,
                )
            self._bm25 = bm
        return self._bm25

    def flat(self, i: int) -> str:
        """Chunk ``i``'s text, lower-cased, whitespace collapsed (for phrase tests)."""
        if self._flat is None:
            self._flat = {}
        text = self._flat.get(i)
        if text is None:
            text = self._flat[i] = " ".join(self.chunks[i].text.lower().split())
        return text

    def all_items_mask(self) -> BoolArray:
        """True for chunks of every catalog item (a copy: callers may change it)."""
        if self._everything is None:
            self._everything = self.item_mask(set(self.catalog))
        return self._everything.copy()

    def item_mask(self, allowed: set[str]) -> BoolArray:
        """True for chunks of the items in ``allowed``."""
        if self._content is None:
            ids = {cid: n for n, cid in enumerate(self.catalog)}
            self._content = np.asarray(
                [ids.get(c.content_id, -1) for c in self.chunks], dtype=np.int64
            )
        keep = np.zeros(len(self.catalog) + 1, dtype=bool)  # last slot: not in the catalog
        for n, cid in enumerate(self.catalog):
            keep[n] = cid in allowed
        return keep[self._content]

    def item_path(self, content_id: str) -> str:
        """The item folder relative to the repo root (``library/<type>/<Title (id)>``)."""
        path = str(self.catalog[content_id].get("path") or "")
        return path if path.startswith(LIBRARY + "/") else f"{LIBRARY}/{path}"


_REBUILD = "run `dvc repro` (or `arkai reindex`) to build the index"
_CACHE: dict[Path, tuple[tuple[float, ...], SearchIndex]] = {}


def _missing(root: Path, what: str) -> LibraryError:
    return LibraryError(f"no search index in {root}: {what} is missing", hint=_REBUILD)


def _stamp(folder: Path) -> tuple[float, ...]:
    out: list[float] = []
    for name in ("chunks/parts.json", "catalog.json", "lexical/bm25.json", "manifest.json"):
        try:
            out.append((folder / name).stat().st_mtime)
        except OSError:
            out.append(0.0)
    return tuple(out)


def _read_chunks(root: Path, folder: Path) -> list[Chunk]:
    """Every chunk of ``index/chunks/``. An index run that replaces the parts while they are
    read (it removes the old ones once its listing is written) makes a listed part go
    missing: the parts are then read once more, under the new listing."""
    for again in (False, True):
        parts = ChunkParts.load(folder)
        if parts is None:
            raise _missing(root, f"index/{CHUNKS_FOLDER}/{LISTING}")
        try:
            return _parse_chunks(parts)
        except LibraryError:
            now = ChunkParts.load(folder)
            if again or now is None or now.digest == parts.digest:
                raise
    raise AssertionError("unreachable")


def _parse_chunks(parts: ChunkParts) -> list[Chunk]:
    chunks: list[Chunk] = []
    for n, line in enumerate(parts.iter_lines(), 1):
        if not line.strip():
            continue
        try:
            chunks.append(Chunk.from_dict(json.loads(line)))
        except (ValueError, KeyError, TypeError) as exc:
            raise LibraryError(
                f"{parts.folder}: line {n}: bad chunk ({exc})", hint=_REBUILD
            ) from None
    return chunks


def load_index(root: Path) -> SearchIndex:
    """Read ``index/`` (cached per process until its files change)."""
    folder = root / INDEX
    stamp = _stamp(folder)
    cached = _CACHE.get(root)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    catalog = read_json(folder / "catalog.json")
    if catalog is None:
        raise _missing(root, "index/catalog.json")
    chunks = _read_chunks(root, folder / CHUNKS_FOLDER)
    entries = catalog.get("items")
    if not isinstance(entries, list):
        raise LibraryError(f"{folder / 'catalog.json'}: 'items' must be a list", hint=_REBUILD)
    index = SearchIndex(
        root=root,
        chunks=chunks,
        catalog={str(e["id"]): e for e in entries if isinstance(e, dict) and "id" in e},
        manifest=read_json(folder / "manifest.json") or {},
    )
    _CACHE[root] = (stamp, index)
    return index


# -- results -------------------------------------------------------------------------------


@dataclass
class ClaimRef:
    """A claim of the item that lies in a hit's lines (or whose own chunk was the hit)."""

    evidence_id: str
    claim: str
    quote: str
    line: int
    link: str
    timestamp: str | None
    status: str
    """Resolution status: ``resolved`` or ``ambiguous``."""
    matched: bool = False
    """True when the claim's own chunk was ranked (not only its lines)."""
    verdict: str | None = None
    page: int | None = None
    """The PDF page of the quote (``page`` in JSON only when known)."""

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in vars(self).items() if k != "page"} | _page_field(self.page)


def _page_field(page: int | None) -> dict[str, int]:
    """``{"page": N}`` for a PDF page, nothing otherwise (so other items' JSON is unchanged)."""
    return {} if page is None else {"page": page}


@dataclass
class Hit:
    """One chunk of an item that matched."""

    chunk: int
    """Position of the chunk in ``index/chunks/``'s lines."""
    kind: str
    """``transcript`` or ``claim``."""
    start_line: int
    end_line: int
    link: str
    """``library/…/transcript.md#L<start_line>``."""
    timestamp: str | None
    text: str
    """The whole chunk text."""
    snippet: str
    highlights: list[tuple[int, int]]
    """Character ranges of the query terms in ``snippet``."""
    score: float
    evidence_id: str | None = None
    claims: list[ClaimRef] = field(default_factory=list)
    explain: list[dict[str, Any]] = field(default_factory=list)
    """Per ranked chunk folded into this hit: its fused score and each lane's rank, raw
    score and contribution."""
    page: int | None = None
    """The PDF page the chunk starts on."""

    @property
    def marked_snippet(self) -> str:
        return mark(self.snippet, self.highlights)

    def to_dict(self, *, explain: bool = False) -> dict[str, Any]:
        # The chunk's index and whole text stay internal; ``explain`` only when asked for.
        hidden = {"chunk", "text", "page"} | (set() if explain else {"explain"})
        out = {k: v for k, v in vars(self).items() if k not in hidden} | _page_field(self.page)
        return out | {
            "highlights": [list(h) for h in self.highlights],
            "score": round(self.score, 6),
            "claims": [c.to_dict() for c in self.claims],
        }


_BEST_FIELDS = ("start_line", "end_line", "link", "timestamp", "snippet")


@dataclass
class ItemResult:
    """One item with its best hits, best first."""

    rank: int
    content_id: str
    title: str
    path: str
    content_type: str
    score: float
    hits: list[Hit]

    @property
    def best(self) -> Hit:
        return self.hits[0]

    def to_dict(self, *, explain: bool = False) -> dict[str, Any]:
        # Where the best hit is, at the top level too (most callers want only that).
        best = {k: getattr(self.best, k) for k in _BEST_FIELDS} | _page_field(self.best.page)
        out = {k: v for k, v in vars(self).items() if k != "hits"} | best
        hits = [h.to_dict(explain=explain) for h in self.hits]
        return out | {"score": round(self.score, 6), "hits": hits}


@dataclass
class SearchResult:
    """What :func:`search` returns."""

    query: Query
    mode: str
    k: int
    results: list[ItemResult]
    lanes: dict[str, int]
    """Candidates each lane returned."""
    allowed_chunks: int
    """Chunks left after filters, phrases and exclusions."""
    asof: dict[str, Any] | None = None
    """``{"commit", "committed_at", "items"}`` when ``asof:`` was used."""
    warnings: list[str] = field(default_factory=list)
    explain: bool = False
    min_similarity: float | None = None
    """The similarity a vector hit needs (None: the vector lane did not run)."""
    answer_floor: float | None = None
    """The similarity the best passage needs when no word matched."""
    best_similarity: float | None = None
    """The best cosine any allowed passage had, above the floor or not."""
    unreadable: list[str] = field(default_factory=list)
    """Items whose files could not be read (named with the problem): their claims are left
    out of these results; the CLI exits non-zero after showing the rest."""
    hooks: dict[str, Any] = field(default_factory=dict)
    """What the hooks and feedback did (``expand``, ``rerank``, ``feedback``; for ``--explain``)."""

    def to_dict(self) -> dict[str, Any]:
        floor = (
            {
                "floor": {
                    "min_similarity": self.min_similarity,
                    "answer_floor": self.answer_floor,
                    "best": self.best_similarity,
                }
            }
            if self.explain and self.min_similarity is not None
            else {}
        )
        return {
            "unreadable": self.unreadable,
            "query": self.query.to_dict(),
            "mode": self.mode,
            "k": self.k,
            "lanes": self.lanes,
            **floor,
            "allowed_chunks": self.allowed_chunks,
            "asof": self.asof,
            "warnings": self.warnings,
            **({"hooks": self.hooks} if self.explain else {}),
            "results": [r.to_dict(explain=self.explain) for r in self.results],
        }


# -- filters -------------------------------------------------------------------------------


def matches_filters(entry: dict[str, Any], q: Query) -> bool:
    """Whether a catalog entry passes ``in:``, ``tag:``, ``after:`` and ``before:``."""
    ctype = str(entry.get("content_type") or "").lower().strip("/")

    def in_type(t: str) -> bool:
        return ctype == t or ctype.startswith(t + "/")

    if q.types and not any(in_type(t) for t in q.types):
        return False
    if any(in_type(t) for t in q.exclude_types):
        return False
    tags = {" ".join(str(t).lower().split()) for t in entry.get("tags") or []}
    if not set(q.tags) <= tags or tags & set(q.exclude_tags):
        return False
    if q.after or q.before:
        when = item_day(entry)
        if when is None:
            return False
        if q.after and when < q.after.start:
            return False
        if q.before and when >= q.before.start:
            return False
    return True


def _asof(root: Path, q: Query) -> tuple[set[str], dict[str, Any]]:
    from arkai.adapters.history import library_at  # pygit2 only when asof: is used

    assert q.asof is not None
    snap = library_at(root, q.asof.end_utc())
    if snap is None:
        return set(), {"date": q.asof.text, "commit": None, "committed_at": None, "items": 0}
    info = {
        "date": q.asof.text,
        "commit": snap.commit,
        "committed_at": snap.committed_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "items": len(snap.items),
    }
    return set(snap.items), info


def _containing(index: SearchIndex, words: str, within: BoolArray) -> BoolArray:
    """Chunks (among ``within``) whose text contains every word of ``words`` (by stem), or,
    for words that are all stopwords, contains them as whole words."""
    bm = index.bm25()
    tokens = tokenize(words)
    if not tokens:
        pat = re.compile(r"\b" + r"\s+".join(map(re.escape, words.split())) + r"\b")
        out = np.zeros(len(index.chunks), dtype=bool)
        for i in np.flatnonzero(within):
            out[i] = bool(pat.search(index.flat(int(i))))
        return out
    out = within.copy()
    for tok in set(tokens):
        tid = bm.vocab.get(tok)
        has = np.zeros(len(index.chunks), dtype=bool)
        if tid is not None:
            has[bm.matrix.indices[bm.matrix.indptr[tid] : bm.matrix.indptr[tid + 1]]] = True
        out &= has
    return out


def _with_phrase(index: SearchIndex, phrase: str, within: BoolArray) -> BoolArray:
    cand = _containing(index, phrase, within)
    out = np.zeros(len(index.chunks), dtype=bool)
    for i in np.flatnonzero(cand):
        out[i] = phrase in index.flat(int(i))
    return out


def build_mask(index: SearchIndex, q: Query) -> tuple[BoolArray, dict[str, Any] | None]:
    """The chunks a query may return, and the ``asof:`` snapshot info (if any)."""
    info = None
    if q.has_filters:
        allowed = {cid for cid, e in index.catalog.items() if matches_filters(e, q)}
        if q.asof is not None:
            ids, info = _asof(index.root, q)
            allowed &= ids
        mask = index.item_mask(allowed)
    else:
        mask = index.all_items_mask()
    for phrase in q.phrases:
        mask &= _with_phrase(index, phrase, mask)
    for term in q.exclude_terms:
        mask &= ~_containing(index, term, mask)
    for phrase in q.exclude_phrases:
        mask &= ~_with_phrase(index, phrase, mask)
    return mask, info


# -- lanes ---------------------------------------------------------------------------------


def embedder_name(index: SearchIndex) -> str:
    """The embedder the vectors were made with: the manifest's, else the store's own record,
    else ``default``."""
    emb = index.manifest.get("embedder")
    if isinstance(emb, dict):
        emb = emb.get("name")
    if not emb:
        meta = read_json(index.folder / "vectors" / "meta.json") or {}
        emb = meta.get("model")
    return str(emb) if emb else "default"


def _vector_store(index: SearchIndex) -> tuple[Any, npt.NDArray[np.int64]]:
    """The vector store and, per chunk, its row there (-1: not embedded)."""
    if index._vectors is None:
        from arkai.search.vectors import VectorStore, key_ids  # numpy only; no model library

        folder = index.folder / "vectors"
        hint = (
            "set `index.embedder` in params.yaml (not `none`) and run `dvc repro` "
            "(or `arkai reindex`), or search with --mode lexical"
        )
        if not (folder / "meta.json").is_file():
            raise LibraryError(f"no vector index in {index.root}: index/vectors is missing",
                               hint=hint)  # fmt: skip
        name = embedder_name(index)
        try:
            store = VectorStore.load(folder, name)
        except InvalidInputError as exc:
            raise LibraryError(str(exc), hint=hint) from None
        if store.damage is not None:
            raise LibraryError(
                f"index/vectors is damaged: {store.damage}",
                hint="run `arkai reindex` (or `dvc repro`) to write it again",
            )
        if len(store) == 0 and index.chunks:
            raise LibraryError(
                f"index/vectors holds no vectors made by the embedder {name!r}", hint=hint
            )
        rows = store.rows_of(key_ids(c.key for c in index.chunks))
        index._vectors = (store, rows)
    store, rows = index._vectors
    return store, rows


def _ann_index(index: SearchIndex, store: Any, warnings: list[str]) -> Any:
    """The ANN index the index stage wrote beside the store (above ``index.ann.threshold``),
    or ``None``: none there, or one that does not match the store — then the vector lane scans
    exactly, with a warning naming the file, rather than answer from a wrong index."""
    folder = index.folder / "vectors"
    if not (folder / "ann.json").exists():
        return None
    from arkai.search.ann import AnnError, AnnIndex

    try:
        return AnnIndex.load(folder, store.snapshot(), store.dim)
    except AnnError as exc:
        warnings.append(f"{exc}; exact vector scan instead ({_REBUILD})")
        return None


def _lexical_engine(index: SearchIndex, bm: BM25Index, warnings: list[str]) -> Any:
    """The lexical engine the index stage wrote beside the BM25 index (above
    ``index.lexical.threshold``), or ``None``: none there, or one that does not match the
    chunks — then the lexical lane runs exactly, with a warning naming the file."""
    folder = index.folder / "lexical"
    if not (folder / "engine.json").exists():
        return None
    from arkai.search.lexindex import EngineError, LexicalEngine

    chunks = (index.manifest.get("lexical") or {}).get("chunks")
    try:
        return LexicalEngine.load(folder, bm, chunks if isinstance(chunks, str) else None)
    except EngineError as exc:
        warnings.append(f"{exc}; exact lexical lane instead ({_REBUILD})")
        return None


def _query_vector(index: SearchIndex, text: str) -> npt.NDArray[np.float32]:
    # Imported here: the model libraries (torch, onnxruntime) load only for this lane.
    from arkai.search.embed import get_embedder

    embedder = get_embedder(embedder_name(index))
    return np.asarray(embedder.encode([text], kind="query"), dtype=np.float32).reshape(-1)


def _corpus(index: SearchIndex, mode: str, warnings: list[str]) -> Corpus:
    """The chunks as the pipeline's corpus, with the lanes ``mode`` needs."""
    lexical = index.bm25() if mode in ("hybrid", LEXICAL) else None
    if mode == "hybrid" and not (index.folder / "vectors" / "meta.json").is_file():
        warnings.append("index/vectors is missing: lexical lane only")
        mode = LEXICAL
    corpus = index._corpora.get(mode)
    if corpus is None:
        if mode == LEXICAL:
            corpus = Corpus(lexical)
        else:
            store, rows = _vector_store(index)
            corpus = Corpus(lexical, store, rows, _ann_index(index, store, warnings))
        if lexical is not None:
            corpus.engine = _lexical_engine(index, lexical, warnings)
        index._corpora[mode] = corpus
    return corpus


# -- ranking and grouping ------------------------------------------------------------------


def _item_claims(root: Path, item_path: str) -> list[EvidenceLine]:
    """The item's claims with an exact-match span (``resolved`` / ``ambiguous``: inexact spans
    are unverified and never cited), current reviews applied, rejected ones left out."""
    rel = Path(item_path).relative_to(LIBRARY)
    lines = read_evidence(root / EXTRACTED / rel / EVIDENCE)
    lines = apply_review(lines, load_review(root / item_path / REVIEW, root))
    return [
        ln
        for ln in lines
        if ln.verified and ln.span is not None and ln.span.line and not is_rejected(ln)
    ]


def _claim_ref(ev: EvidenceLine, transcript: str, matched: bool) -> ClaimRef:
    assert ev.span is not None and ev.span.line is not None
    return ClaimRef(
        evidence_id=ev.id,
        claim=ev.claim,
        quote=ev.quote,
        line=ev.span.line,
        link=f"{transcript}#L{ev.span.line}",
        timestamp=ev.span.video_timestamp,
        status=ev.status,
        matched=matched,
        verdict=ev.verdict.verdict if ev.verdict else None,
        page=ev.span.page,
    )


def _explained(r: Ranked, chunk: Chunk) -> dict[str, Any]:
    return {"chunk": r.doc, "kind": chunk.kind, "score": r.score, "lanes": r.lanes}


class _Grouper:
    """Collects ranked chunks into per-item hits (claims folded into covering chunks)."""

    def __init__(self, index: SearchIndex, q: Query, k: int, per_item: int) -> None:
        self.index, self.q, self.k, self.per_item = index, q, k, per_item
        self.items: dict[str, list[Hit]] = {}
        self.claims: dict[str, dict[str, EvidenceLine]] = {}
        self.unreadable: list[str] = []
        self.snippets: dict[int, str] = {}
        """Chunk → a snippet the rerank hook gave (shown instead of the built-in one)."""

    def _claims_of(self, cid: str) -> dict[str, EvidenceLine]:
        if cid not in self.claims:
            path = self.index.item_path(cid)
            try:
                lines = _item_claims(self.index.root, path)
            except (ArkaiError, OSError) as exc:
                self.unreadable.append(str(exc))  # skip this item's claims, go on
                lines = []
            self.claims[cid] = {ev.id: ev for ev in lines}
        return self.claims[cid]

    def _hit(self, r: Ranked, chunk: Chunk, transcript: str) -> Hit:
        """A hit without its snippet: :meth:`results` makes snippets for the hits kept."""
        return Hit(
            chunk=r.doc,
            kind=chunk.kind,
            start_line=chunk.start_line,
            end_line=chunk.end_line,
            link=f"{transcript}#L{chunk.start_line}",
            timestamp=chunk.timestamp,
            text=chunk.text,
            snippet="",
            highlights=[],
            score=r.score,
            evidence_id=chunk.evidence_id,
            explain=[_explained(r, chunk)],
            page=chunk.page,
        )

    def add(self, r: Ranked) -> None:
        chunk = self.index.chunks[r.doc]
        cid = chunk.content_id
        if cid not in self.items and len(self.items) >= self.k:
            return
        claims = self._claims_of(cid)
        if chunk.kind == CLAIM_KIND and chunk.evidence_id not in claims:
            return  # rejected (or gone) since the index was built
        hits = self.items.get(cid, [])
        transcript = f"{self.index.item_path(cid)}/{TRANSCRIPT}"
        if chunk.kind == CLAIM_KIND:
            eid = str(chunk.evidence_id)
            for h in hits:  # already shown: a covering chunk or the same claim
                if h.evidence_id == eid or (
                    h.kind != CLAIM_KIND and h.start_line <= chunk.start_line <= h.end_line
                ):
                    for c in h.claims:
                        c.matched = c.matched or c.evidence_id == eid
                    h.explain.append(_explained(r, chunk))
                    return
            if len(hits) >= self.per_item:
                return
            hit = self._hit(r, chunk, transcript)
            hit.claims = [_claim_ref(claims[eid], transcript, True)]
            self.items.setdefault(cid, hits).append(hit)
            return
        hit = self._hit(r, chunk, transcript)
        inside = [
            _claim_ref(ev, transcript, False)
            for ev in claims.values()
            if ev.span is not None and chunk.start_line <= (ev.span.line or 0) <= chunk.end_line
        ]
        hit.claims = sorted(inside, key=lambda c: (c.line, c.evidence_id))
        # Claim hits this chunk covers are folded into it, at the best one's place.
        folded = [
            n for n, h in enumerate(hits)
            if h.kind == CLAIM_KIND and chunk.start_line <= h.start_line <= chunk.end_line
        ]  # fmt: skip
        if folded:
            matched = {hits[n].evidence_id for n in folded}
            for c in hit.claims:
                c.matched = c.evidence_id in matched
            hit.score = max(hit.score, *(hits[n].score for n in folded))
            hit.explain = [e for n in folded for e in hits[n].explain] + hit.explain
            hits[folded[0]] = hit
            for n in reversed(folded[1:]):
                del hits[n]
            return
        if len(hits) >= self.per_item:
            return
        self.items.setdefault(cid, hits).append(hit)

    def results(self) -> list[ItemResult]:
        out = []
        for rank, (cid, hits) in enumerate(self.items.items(), 1):
            entry = self.index.catalog[cid]
            for hit in hits:
                given = self.snippets.get(hit.chunk)  # from the rerank hook
                if given is not None:
                    hit.snippet, hit.highlights = given, []
                    continue
                snip = make_snippet(hit.text, self.q.terms, self.q.phrases, width=SNIPPET_WIDTH)
                hit.snippet, hit.highlights = snip.text, list(snip.highlights)
            out.append(
                ItemResult(
                    rank=rank,
                    content_id=cid,
                    title=str(entry.get("title") or cid),
                    path=self.index.item_path(cid),
                    content_type=str(entry.get("content_type") or ""),
                    score=max(h.score for h in hits),
                    hits=hits,
                )
            )
        return out


# -- the operation -------------------------------------------------------------------------


def search(
    repo: Repo,
    query: str | Query,
    *,
    k: int = 10,
    mode: str = "hybrid",
    explain: bool = False,
    per_item: int = CHUNKS_PER_ITEM,
    candidates: int | None = None,
    min_similarity: float = MIN_SIMILARITY,
    hooks: bool = True,
) -> SearchResult:
    """Search the library; the ``k`` best items, each with up to ``per_item`` hits.

    ``hooks``: run the expand and rerank hooks of ``params.yaml`` and apply feedback votes
    (False: the built-in pipeline alone).

    Raises :class:`NotFoundError` when nothing matches, :class:`LibraryError` when the index
    is missing, :class:`InvalidInputError` for bad markup or an ``asof:`` without history.
    """
    root = repo.root
    if mode not in MODES:
        raise InvalidInputError(f"unknown search mode {mode!r}", hint=f"use one of {MODES}")
    if k < 1 or per_item < 1:
        raise InvalidInputError("k and chunks per item must be at least 1")
    q = query if isinstance(query, Query) else parse_query(query)
    if not q.text:
        raise InvalidInputError(
            f"no search terms in {q.raw!r}",
            hint="add words to look for; `arkai library --type T --tag T` lists items by filter",
        )
    index = load_index(root)
    mask, asof = build_mask(index, q)
    warnings = list(q.warnings)
    corpus = _corpus(index, mode, warnings)
    mode_run = mode if corpus.store is not None or mode == LEXICAL else LEXICAL
    config = SearchHooks.from_params(load_params(root), root) if hooks else SearchHooks()
    info: dict[str, Any] = {}
    expansion = config.expand(q.text, mode_run, warnings)
    variants = [] if expansion is None else _variants(index, expansion.lex, expansion.vec)
    ranking = pipeline.rank(
        corpus,
        q.text,
        mode=mode_run,
        query_vec=lambda: _query_vector(index, q.text),
        mask=mask,
        depth=candidates or max(100, 10 * k * per_item),
        min_similarity=min_similarity,
        variants=variants,
    )
    if expansion is not None:
        info["expand"] = {**expansion.to_dict(), "lanes": ranking.variants}
    grouper = _Grouper(index, q, k, per_item)
    ranked = _rerank(index, q, config, ranking.ranked, grouper, warnings, info)
    if hooks:
        ranked = _feedback(index, q, ranked, warnings, info)
    for r in ranked:
        grouper.add(r)
    results = grouper.results()
    if not results:
        why = " (after filters)" if q.has_filters or q.phrases or q.exclude_terms else ""
        floor = (
            f"; no word matched and no passage reached the similarity floor "
            f"{ranking.answer_floor:g} (best {ranking.best_similarity:.3f})"
            if ranking.best_similarity is not None
            else ""
        )
        raise NotFoundError(
            f"no results for {q.raw!r}{why}{floor}",
            hint="try other words or fewer filters"
            + ("" if mode == "hybrid" else ", or the hybrid mode"),
        )
    return SearchResult(
        query=q,
        mode=mode,
        k=k,
        results=results,
        lanes=ranking.found,
        allowed_chunks=int(mask.sum()),
        asof=asof,
        warnings=warnings,
        explain=explain,
        min_similarity=ranking.min_similarity if VECTOR_LANE in ranking.found else None,
        answer_floor=ranking.answer_floor,
        best_similarity=ranking.best_similarity,
        unreadable=grouper.unreadable,
        hooks=info,
    )


# -- hooks and feedback --------------------------------------------------------------------


def _variants(index: SearchIndex, lex: tuple[str, ...], vec: tuple[str, ...]) -> list[Variant]:
    def embed(text: str) -> Callable[[], npt.NDArray[np.float32]]:
        return lambda: _query_vector(index, text)

    return [Variant(LEXICAL, t) for t in lex] + [Variant(VECTOR_LANE, t, embed(t)) for t in vec]


def candidate_key(chunk: Chunk) -> str:
    """How a chunk is named to the rerank hook: ``<content id>:L<start>-<end>`` (a claim's
    chunk: ``…#<evidence id>``)."""
    key = f"{chunk.content_id}:L{chunk.start_line}-{chunk.end_line}"
    return f"{key}#{chunk.evidence_id}" if chunk.kind == CLAIM_KIND else key


def _rerank(
    index: SearchIndex,
    q: Query,
    config: SearchHooks,
    ranked: list[Ranked],
    grouper: _Grouper,
    warnings: list[str],
    info: dict[str, Any],
) -> list[Ranked]:
    if config.rerank_cmd is None or not ranked:
        return ranked
    keys: dict[str, int] = {}
    candidates = []
    for r in ranked[:RERANK_TOP]:
        chunk = index.chunks[r.doc]
        key = candidate_key(chunk)
        keys[key] = r.doc
        entry = index.catalog.get(chunk.content_id, {})
        candidates.append({"key": key, "item": chunk.content_id,
                           "title": str(entry.get("title") or ""),
                           "snippet": chunk.text[:1000], "score": round(r.score, 6)})  # fmt: skip
    got = config.rerank(q.text, candidates, warnings)
    if got is None:
        return ranked
    grouper.snippets = {keys[k]: v for k, v in got.snippets.items()}
    info["rerank"] = {"candidates": len(candidates), "scores": got.scores,
                      "snippets": sorted(got.snippets)}  # fmt: skip
    return blend_rerank(ranked, {keys[k]: v for k, v in got.scores.items()})


def _feedback(
    index: SearchIndex, q: Query, ranked: list[Ranked], warnings: list[str], info: dict[str, Any]
) -> list[Ranked]:
    votes = net_votes(index.root, q.raw, warnings)
    if not votes:
        return ranked
    info["feedback"] = {"file": str(feedback_path(index.root, q.raw).relative_to(index.root)),
                        "votes": votes}  # fmt: skip
    net = {r.doc: votes[c] for r in ranked if (c := index.chunks[r.doc].content_id) in votes}
    return boost_feedback(ranked, net)
