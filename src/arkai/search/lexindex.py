"""The lexical lane above a size threshold: a tantivy index proposes candidates (DESIGN §7).

Below ``index.lexical.threshold`` chunks the lexical lane sums every query term's postings
over all documents (:meth:`arkai.search.bm25.BM25Index.scores`). From the threshold on, the
index stage also writes a tantivy index of the very tokens the BM25 index holds (each
document's stems joined by spaces, indexed with tantivy's whitespace tokenizer, term
frequencies only), and the lane asks it for its best ``candidates × depth`` documents — a
top-k search that skips postings blocks which cannot reach the top (block-max WAND) — then
scores those candidates exactly from the BM25 matrix: the lane's scores and the fusion's are
the exact lane's, bit for bit; only the candidate set comes from the engine. Differences
between tantivy's BM25 and ours (its idf is the same Lucene formula; it stores each document's
length in one byte, so long documents' lengths are approximate; its scores carry a constant
factor ``k1 + 1``) can only move a document across the candidate boundary, which the
oversampling covers (docs/index-format.md, "The lexical engine at scale", has the overlap).

Files, in ``index/lexical/``: ``engine/`` (tantivy's segment files and ``docs.npy``, each
tantivy document's position in the BM25 index) and ``engine.json``, written last: format,
engine, settings, the chunk set's digest (``index/manifest.json``'s ``lexical.chunks``), the
number of documents and the SHA-256 of every file in ``engine/``. At search time a record
that does not match the chunk set or the BM25 index, or a file whose SHA-256 differs, is
refused with an :class:`EngineError` naming the file; the caller then runs the exact lane, so
a damaged or stale engine never gives wrong results silently. ``tantivy`` is imported only
here, only when an engine index is built or read.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from arkai.adapters.fs import atomic_write, atomic_write_text
from arkai.errors import InvalidInputError, LibraryError
from arkai.search.bm25 import BM25Index, Shape, load_shape, top_k
from arkai.search.termcounts import decode_segment

__all__ = [
    "ENGINE",
    "ENGINE_DIR",
    "ENGINE_META",
    "EngineError",
    "LexicalEngine",
    "LexicalSettings",
    "exact_scores",
    "query_terms",
    "update_engine",
]

FORMAT = 1
ENGINE = "tantivy-bm25"
ENGINE_DIR = "engine"
ENGINE_META = "engine.json"
DOCS_FILE = "docs.npy"
_FIELD, _POS = "t", "pos"
#: tantivy's indexing memory budget (its writer splits segments beyond it).
HEAP_BYTES = 512_000_000
#: With a filter, the engine is asked for this many times the candidates the filter would keep
#: on average (at most), before the exact lane takes over.
MAX_OVERSAMPLE = 16
#: Terms whose document frequency is compared with the BM25 index's when the engine is loaded.
CHECK_TERMS = 16

I64 = npt.NDArray[np.int64]
F32 = npt.NDArray[np.float32]
ScoreAt = Callable[[Sequence[int]], list[float]]


class EngineError(LibraryError):
    """The lexical engine index is missing, damaged or does not match the BM25 index."""


@dataclass(frozen=True)
class LexicalSettings:
    """``index.lexical`` in params.yaml."""

    threshold: int = 200_000
    """Chunks from which the engine index is built and used (below: the exact lane only)."""
    candidates: int = 2
    """The engine proposes ``candidates × depth`` documents, which are scored exactly."""

    @classmethod
    def from_params(cls, raw: Any) -> LexicalSettings:
        if raw is None:
            return cls()
        if not isinstance(raw, dict):
            raise InvalidInputError("params.yaml: `index.lexical` must be a mapping")
        unknown = set(raw) - {"threshold", "candidates"}
        if unknown:
            raise InvalidInputError(f"params.yaml: unknown `index.lexical` keys {sorted(unknown)}")
        try:
            out = cls(**{k: int(v) for k, v in raw.items()})
        except (TypeError, ValueError):
            raise InvalidInputError(
                "params.yaml: `index.lexical` values must be integers"
            ) from None
        if out.threshold < 1 or out.candidates < 1:
            raise InvalidInputError(
                "params.yaml: `index.lexical` needs threshold >= 1 and candidates >= 1"
            )
        return out


def _tantivy() -> Any:
    import tantivy

    return tantivy


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return "sha256:" + h.hexdigest()


def _engine_files(folder: Path) -> list[Path]:
    """The files of ``engine/`` a record covers (tantivy's lock files are not content)."""
    return sorted(p for p in folder.iterdir() if p.is_file() and not p.name.endswith(".lock"))


def _schema() -> Any:
    tantivy = _tantivy()
    sb = tantivy.SchemaBuilder()
    sb.add_text_field(_FIELD, tokenizer_name="whitespace", index_option="freq")
    sb.add_unsigned_field(_POS, fast=True)
    return sb.build()


def exact_scores(bm: BM25Index, weights: Mapping[int, float], docs: Sequence[int]) -> list[float]:
    """The BM25 score of each document in ``docs`` for the query term weights ``weights``:
    the values :meth:`BM25Index.scores` gives those documents (summed in the same order, in
    float64, then rounded to float32), read from the postings by binary search."""
    d = np.asarray(docs, dtype=np.int64)
    acc = np.zeros(len(d), dtype=np.float64)
    m = bm.matrix
    for tid, w in weights.items():
        lo, hi = int(m.indptr[tid]), int(m.indptr[tid + 1])
        if hi <= lo:
            continue
        row = m.indices[lo:hi]
        at = np.searchsorted(row, d)
        ok = at < len(row)
        ok[ok] = row[at[ok]] == d[ok]
        vals = m.data[lo + at[ok]]
        acc[ok] += vals * np.float32(w) if w != 1.0 else vals
    return acc.astype(np.float32).tolist()


class LexicalEngine:
    """A tantivy index over a :class:`BM25Index`'s documents, addressed by position."""

    def __init__(self, index: Any, docmap: list[I64], meta: dict[str, Any]) -> None:
        self.index = index
        self.searcher = index.searcher()
        self.schema = index.schema
        self.docmap = docmap
        self.meta = meta

    @property
    def count(self) -> int:
        return int(self.searcher.num_docs)

    # -- building ---------------------------------------------------------------------

    @classmethod
    def build(
        cls,
        folder: Path,
        segments: Iterable[bytes],
        *,
        chunks: str,
        settings: LexicalSettings,
    ) -> LexicalEngine:
        """Index the documents of ``segments`` (:func:`arkai.search.termcounts.encode_segment`
        outputs in document order, as the BM25 index is built) into ``folder/engine`` and
        write ``folder/engine.json`` recording the chunk set digest ``chunks``."""
        tantivy = _tantivy()
        LexicalEngine.remove(folder)
        tmp = folder / (ENGINE_DIR + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        index = tantivy.Index(_schema(), path=str(tmp))
        writer = index.writer(heap_size=HEAP_BYTES, num_threads=1)
        n = 0
        for raw in segments:
            terms, lens, local = decode_segment(raw)
            words = np.asarray(terms, dtype=object)[local]
            ends = np.cumsum(lens)
            for lo, hi in zip((ends - lens).tolist(), ends.tolist(), strict=True):
                doc = tantivy.Document()
                doc.add_text(_FIELD, " ".join(words[lo:hi]))
                doc.add_unsigned(_POS, n)
                writer.add_document(doc)
                n += 1
        writer.commit()
        writer.wait_merging_threads()
        del writer
        index.reload()
        docmap = _docmap(index, n)
        flat = np.full(sum(len(x) for x in docmap) + len(docmap), -1, dtype=np.int64)
        # docs.npy: per segment ordinal, its length then its documents' positions.
        at = 0
        for seg in docmap:
            flat[at] = len(seg)
            flat[at + 1 : at + 1 + len(seg)] = seg
            at += 1 + len(seg)
        atomic_write(tmp / DOCS_FILE, lambda fh: np.save(fh, flat), fsync=False)
        for lock in tmp.glob("*.lock"):
            lock.unlink()
        target = folder / ENGINE_DIR
        tmp.rename(target)
        files = {p.name: _file_digest(p) for p in _engine_files(target)}
        meta = {
            "format": FORMAT,
            "engine": ENGINE,
            "tantivy": _version(),
            "chunks": chunks,
            "n_docs": n,
            "candidates": settings.candidates,
            "files": files,
        }
        text = json.dumps(meta, indent=2, sort_keys=True) + "\n"
        atomic_write_text(folder / ENGINE_META, text, fsync=False)
        return cls(tantivy.Index.open(str(target)), docmap, meta)

    # -- reading ----------------------------------------------------------------------

    @classmethod
    def load(cls, folder: Path, bm: BM25Index | Shape, chunks: str | None) -> LexicalEngine:
        """The engine in ``folder`` for ``bm`` (built from the chunk set digested ``chunks``;
        checked against the index's :class:`arkai.search.bm25.Shape`, which is all a caller
        that does not query needs to give); :class:`EngineError` naming the file when it is
        missing, damaged or built for other documents."""
        shape = bm.shape() if isinstance(bm, BM25Index) else bm
        meta_path, target = folder / ENGINE_META, folder / ENGINE_DIR
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise EngineError(
                f"{meta_path}: cannot read the lexical engine record ({exc})"
            ) from None
        if (
            not isinstance(meta, dict)
            or meta.get("format") != FORMAT
            or meta.get("engine") != ENGINE
        ):
            raise EngineError(f"{meta_path}: not a {ENGINE} record of format {FORMAT}")
        if chunks is None or meta.get("chunks") != chunks or meta.get("n_docs") != shape.n_docs:
            raise EngineError(f"{meta_path}: the engine was built for other chunks than the index")
        files = meta.get("files")
        if not isinstance(files, dict) or not files:
            raise EngineError(f"{meta_path}: lists no engine files")
        try:
            present = {p.name for p in _engine_files(target)}
        except OSError as exc:
            raise EngineError(f"{target}: cannot read the lexical engine ({exc})") from None
        if present != set(files):
            raise EngineError(f"{target}: its files differ from those {meta_path.name} lists")
        for name, digest in sorted(files.items()):
            if _file_digest(target / name) != digest:
                raise EngineError(f"{target / name}: damaged (its SHA-256 differs from "
                                  f"{meta_path.name})")  # fmt: skip
        tantivy = _tantivy()
        try:
            index = tantivy.Index.open(str(target))
            with (target / DOCS_FILE).open("rb") as fh:
                flat = np.load(fh)
        except (OSError, ValueError) as exc:
            raise EngineError(f"{target}: tantivy cannot open it ({exc})") from None
        engine = cls(index, _split_docmap(flat, target), meta)
        engine._check(shape, target)
        return engine

    def _check(self, shape: Shape, target: Path) -> None:
        """Refuse an engine whose documents or document frequencies differ from those of the
        BM25 index of ``shape``."""
        n_docs, terms, df = shape.n_docs, shape.terms, shape.df
        if self.count != n_docs or len(self.docmap) != self.searcher.num_segments:
            raise EngineError(f"{target}: holds {self.count} documents in "
                              f"{self.searcher.num_segments} segments, the BM25 index "
                              f"{n_docs}")  # fmt: skip
        every = np.concatenate(self.docmap) if self.docmap else np.zeros(0, dtype=np.int64)
        if len(every) != n_docs or not np.array_equal(np.sort(every), np.arange(n_docs)):
            raise EngineError(f"{target / DOCS_FILE}: does not map onto the BM25 documents")
        picks = np.linspace(0, len(terms) - 1, min(CHECK_TERMS, len(terms))).astype(int)
        for i in sorted(set(picks.tolist()) | {int(np.argmax(df))} if len(df) else set()):
            t = terms[i]
            if int(self.searcher.doc_freq(_FIELD, t)) != int(df[i]):
                raise EngineError(f"{target}: term {t!r} is in {self.searcher.doc_freq(_FIELD, t)}"
                                  f" documents there, in {int(df[i])} in the BM25 "
                                  "index")  # fmt: skip

    @staticmethod
    def remove(folder: Path) -> bool:
        """Delete the engine (below the threshold); True when there was one."""
        gone = False
        meta = folder / ENGINE_META
        if meta.exists():
            meta.unlink()  # first: a half-removed engine is never trusted
            gone = True
        for name in (ENGINE_DIR, ENGINE_DIR + ".tmp"):
            if (folder / name).exists():
                shutil.rmtree(folder / name)
                gone = True
        return gone

    # -- search -----------------------------------------------------------------------

    def candidates(self, terms: Mapping[str, float], k: int) -> I64:
        """The BM25 positions of the engine's best ``k`` documents for ``terms`` (query term
        → weight), in the engine's order."""
        if not terms or k <= 0:
            return np.zeros(0, dtype=np.int64)
        tantivy = _tantivy()
        clauses = []
        for t, w in terms.items():
            q = tantivy.Query.term_query(self.schema, _FIELD, t)
            clauses.append(
                (tantivy.Occur.Should, q if w == 1.0 else tantivy.Query.boost_query(q, w))
            )
        query = clauses[0][1] if len(clauses) == 1 else tantivy.Query.boolean_query(clauses)
        hits = self.searcher.search(query, limit=int(k), count=False).hits
        docmap = self.docmap
        return np.asarray([docmap[a.segment_ord][a.doc] for _, a in hits], dtype=np.int64)

    def search(
        self,
        bm: BM25Index,
        query: str,
        depth: int,
        allowed: npt.NDArray[np.bool_] | None = None,
    ) -> tuple[list[tuple[int, float]], ScoreAt] | None:
        """The lexical lane's best ``depth`` (document, exact BM25 score) pairs, best first,
        ties by lower index, and the lane's score of any document; ``None`` when the engine
        cannot answer for ``allowed`` (too few allowed candidates): run the exact lane."""
        weights = bm.term_weights(query)
        terms = query_terms(bm, query)

        def at(docs: Sequence[int]) -> list[float]:
            return exact_scores(bm, weights, docs)

        n = bm.n_docs
        share = 1.0
        if allowed is not None and not allowed.all():
            kept = int(allowed.sum())
            if not kept:
                return [], at
            share = n / kept
            if share > MAX_OVERSAMPLE:
                return None
        want = int(min(n, depth * int(self.meta.get("candidates", 2)) * math.ceil(share)))
        cand = self.candidates(terms, want)
        exhausted = len(cand) < want
        if allowed is not None:
            cand = cand[allowed[cand]]
        # In document order, so that equal scores are ranked by document as the exact lane does
        # (tantivy orders its ties by its own addresses).
        cand = np.unique(cand)
        vals = np.asarray(at(cand.tolist()), dtype=np.float32)
        found = [(int(cand[i]), s) for i, s in top_k(vals, depth)]
        if len(found) < depth and not exhausted:
            return None
        return found, at


def query_terms(bm: BM25Index, query: str) -> dict[str, float]:
    """The query's known terms with their multiplicity (as :meth:`BM25Index.term_weights`)."""
    out: dict[str, float] = {}
    for t in bm.tokenizer(query):
        if t in bm.vocab:
            out[t] = out.get(t, 0.0) + 1.0
    return out


def _docmap(index: Any, n: int) -> list[I64]:
    """Per segment ordinal, the BM25 position of each of its documents (from the fast field)."""
    tantivy = _tantivy()
    searcher = index.searcher()
    hits = searcher.search(
        tantivy.Query.all_query(), limit=max(1, n), count=False, order_by_field=_POS,
        order=tantivy.Order.Desc,
    ).hits  # fmt: skip
    sizes = [0] * searcher.num_segments
    for _, a in hits:
        sizes[a.segment_ord] = max(sizes[a.segment_ord], a.doc + 1)
    out = [np.full(s, -1, dtype=np.int64) for s in sizes]
    for pos, a in hits:
        out[a.segment_ord][a.doc] = int(pos)
    return out


def _split_docmap(flat: npt.NDArray[Any], where: Path) -> list[I64]:
    out: list[I64] = []
    at = 0
    while at < len(flat):
        size = int(flat[at])
        if size < 0 or at + 1 + size > len(flat):
            raise EngineError(f"{where / DOCS_FILE}: not a document map")
        out.append(np.asarray(flat[at + 1 : at + 1 + size], dtype=np.int64))
        at += 1 + size
    return out


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tantivy")
    except PackageNotFoundError:  # pragma: no cover - tantivy imported without metadata
        return "unknown"


def update_engine(
    folder: Path,
    chunks: str,
    n_docs: int,
    raw: Any,
    segments: Callable[[], Iterable[bytes]],
) -> str | None:
    """Build, keep or remove ``folder``'s engine for the BM25 index there (``n_docs``
    documents of the chunk set digested ``chunks``; ``segments()`` gives its token segments);
    returns what was done: ``built``, ``rebuilt`` (after a stale or damaged one), ``kept``,
    ``removed`` or ``None`` (below the threshold, none there)."""
    settings = LexicalSettings.from_params(raw)
    if n_docs < settings.threshold:
        return "removed" if LexicalEngine.remove(folder) else None
    how = "built"
    if (folder / ENGINE_META).exists():
        try:
            # Its terms and row pointers: the index's weights are not read (≈ 560 MB at
            # 100,000 items).
            engine = LexicalEngine.load(folder, load_shape(folder), chunks)
        except (EngineError, InvalidInputError):
            how = "rebuilt"
        else:
            if engine.meta.get("candidates") != settings.candidates:
                meta = {**engine.meta, "candidates": settings.candidates}
                text = json.dumps(meta, indent=2, sort_keys=True) + "\n"
                atomic_write_text(folder / ENGINE_META, text, fsync=False)
            return "kept"
    LexicalEngine.build(folder, segments(), chunks=chunks, settings=settings)
    return how
