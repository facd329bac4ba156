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

Files, in ``index/lexical/``: ``engine/`` (tantivy's segment files, ``docs.npy``: each
tantivy document's position in the BM25 index, and ``parts.json``: the items whose documents
it holds, in order) and ``engine.json``, written last: format, engine, settings, the chunk
set's digest (``index/manifest.json``'s ``lexical.chunks``), the number of documents and the
SHA-256 of every file in ``engine/``. When items change, the engine is updated in place — the
changed items' documents deleted, their new ones added — until the documents so changed
reach ``index.lexical.rebuild_fraction`` of it; then it is built again. At search time a record
that does not match the chunk set or the BM25 index, or a file whose SHA-256 differs, is
refused with an :class:`EngineError` naming the file; the caller then runs the exact lane, so
a damaged or stale engine never gives wrong results silently. ``tantivy`` is imported only
here, only when an engine index is built or read.
"""

from __future__ import annotations

import errno
import hashlib
import json
import math
import os
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
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

FORMAT = 2
ENGINE = "tantivy-bm25"
ENGINE_DIR = "engine"
ENGINE_META = "engine.json"
DOCS_FILE = "docs.npy"
PARTS_FILE = "parts.json"
_FIELD, _ITEM, _UID = "t", "part", "uid"
#: New parts' segments kept between counting and indexing them, up to this many bytes (read
#: again beyond).
READ_AGAIN = 16 << 20
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
    rebuild_fraction: float = 0.2
    """Build the engine again (not in place) when the documents added and deleted since it was
    built would exceed this share of it: tantivy counts a deleted document in its statistics
    until a merge drops it, so the candidates drift from a fresh build's."""

    @classmethod
    def from_params(cls, raw: Any) -> LexicalSettings:
        if raw is None:
            return cls()
        if not isinstance(raw, dict):
            raise InvalidInputError("params.yaml: `index.lexical` must be a mapping")
        unknown = set(raw) - {"threshold", "candidates", "rebuild_fraction"}
        if unknown:
            raise InvalidInputError(f"params.yaml: unknown `index.lexical` keys {sorted(unknown)}")
        try:
            out = cls(**{k: type(getattr(cls(), k))(v) for k, v in raw.items()})
        except (TypeError, ValueError):
            raise InvalidInputError("params.yaml: `index.lexical` values must be numbers") from None
        if out.threshold < 1 or out.candidates < 1:
            raise InvalidInputError(
                "params.yaml: `index.lexical` needs threshold >= 1 and candidates >= 1"
            )
        if not 0.0 < out.rebuild_fraction <= 1.0:
            raise InvalidInputError(
                "params.yaml: `index.lexical.rebuild_fraction` must be in (0, 1]"
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
        names: Sequence[str],
        segment: Callable[[int], bytes],
        *,
        chunks: str,
        settings: LexicalSettings,
    ) -> LexicalEngine:
        """Index the documents of the parts ``names`` into ``folder/engine`` and write
        ``folder/engine.json`` recording the chunk set digest ``chunks``. Part ``i``'s
        documents are the token segment ``segment(i)``
        (:func:`arkai.search.termcounts.encode_segment`), the parts in document order as the
        BM25 index is built; the index stage's parts are its items, named by ID and inputs key,
        so that :meth:`update` can replace one."""
        tantivy = _tantivy()
        _unique(names)
        LexicalEngine.remove(folder)
        tmp = folder / (ENGINE_DIR + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        index = tantivy.Index(_schema(), path=str(tmp))
        parts, uid = _write_parts(index, names, segment, {}, [], 0)
        return cls._finish(
            folder, tmp, index, parts,
            {"chunks": chunks, "candidates": settings.candidates, "next_uid": uid, "churn": 0},
        )  # fmt: skip

    @classmethod
    def update(
        cls,
        folder: Path,
        names: Sequence[str],
        segment: Callable[[int], bytes],
        *,
        chunks: str,
        settings: LexicalSettings,
    ) -> LexicalEngine | None:
        """Bring ``folder``'s engine, built (or updated) for other parts, to the parts
        ``names`` in place, as :meth:`build` would index them: the documents of parts no longer
        named are deleted, those of new parts added (only their segments are read), the kept
        parts' documents placed at their new positions. ``None`` when it should be built
        again instead: the documents added and deleted since it was built would exceed
        ``settings.rebuild_fraction`` of its documents (:class:`LexicalSettings`). Raises
        :class:`EngineError` when the engine is missing or damaged; the record is removed
        before tantivy's files change, so an update that does not finish leaves no engine that
        is trusted."""
        meta = _read_meta(folder)
        target = folder / ENGINE_DIR
        engine = cls._open(folder, meta)
        old = _Parts.read(target)
        _unique(names)
        at = {name: n for n, name in enumerate(old.names)}
        names_set = set(names)
        gone = [n for n, name in enumerate(old.names) if name not in names_set]
        budget = settings.rebuild_fraction * old.total() - int(meta["churn"])
        removed = sum(old.docs[n] for n in gone)
        fresh: dict[int, bytes | None] = {}
        added = held = 0
        for i, name in enumerate(names):
            if name in at:
                continue
            raw = segment(i)
            added += _count(raw)
            if removed + added > budget:
                return None
            # Kept to be indexed below while they are few; read again beyond READ_AGAIN bytes.
            held += len(raw)
            fresh[i] = raw if held <= READ_AGAIN else None
        if removed + added > budget:
            return None
        (folder / ENGINE_META).unlink()
        kept = {name: (old.first[n], old.docs[n]) for name, n in at.items() if name in names_set}
        parts, uid = _write_parts(
            engine.index, names, segment, kept, [old.names[n] for n in gone],
            int(meta["next_uid"]), fresh,
        )  # fmt: skip
        churn = int(meta["churn"]) + removed + added
        return cls._finish(
            folder, target, engine.index, parts,
            {"chunks": chunks, "candidates": settings.candidates, "next_uid": uid,
             "churn": churn},
        )  # fmt: skip

    @classmethod
    def _finish(
        cls, folder: Path, target: Path, index: Any, parts: _Parts, record: dict[str, Any]
    ) -> LexicalEngine:
        """Write the document map and the parts into ``target`` (moved to ``folder/engine``
        when it is another folder), then the record: ``folder/engine.json``."""
        tantivy = _tantivy()
        index.reload()
        docmap = _docmap(index, parts.positions(int(record["next_uid"])), target)
        flat = np.full(sum(len(x) for x in docmap) + len(docmap), -1, dtype=np.int64)
        # docs.npy: per segment ordinal, its length then its documents' positions (-1: deleted).
        at = 0
        for seg in docmap:
            flat[at] = len(seg)
            flat[at + 1 : at + 1 + len(seg)] = seg
            at += 1 + len(seg)
        atomic_write(target / DOCS_FILE, lambda fh: np.save(fh, flat), fsync=False)
        parts.write(target)
        for lock in target.glob("*.lock"):
            lock.unlink()
        final = folder / ENGINE_DIR
        if target != final:
            target.rename(final)
        files = {p.name: _file_digest(p) for p in _engine_files(final)}
        meta = {
            "format": FORMAT,
            "engine": ENGINE,
            "tantivy": _version(),
            "n_docs": parts.total(),
            "files": files,
            **record,
        }
        text = json.dumps(meta, indent=2, sort_keys=True) + "\n"
        atomic_write_text(folder / ENGINE_META, text, fsync=False)
        return cls(tantivy.Index.open(str(final)), docmap, meta)

    # -- reading ----------------------------------------------------------------------

    @classmethod
    def load(cls, folder: Path, bm: BM25Index | Shape, chunks: str | None) -> LexicalEngine:
        """The engine in ``folder`` for ``bm`` (built from the chunk set digested ``chunks``;
        checked against the index's :class:`arkai.search.bm25.Shape`, which is all a caller
        that does not query needs to give); :class:`EngineError` naming the file when it is
        missing, damaged or built for other documents."""
        shape = bm.shape() if isinstance(bm, BM25Index) else bm
        meta = _read_meta(folder)
        if chunks is None or meta.get("chunks") != chunks or meta.get("n_docs") != shape.n_docs:
            raise EngineError(f"{folder / ENGINE_META}: the engine was built for other chunks "
                              "than the index")  # fmt: skip
        engine = cls._open(folder, meta)
        engine._check(shape, folder / ENGINE_DIR)
        return engine

    @classmethod
    def _open(cls, folder: Path, meta: dict[str, Any]) -> LexicalEngine:
        """The engine its record ``meta`` describes, its files' SHA-256 checked."""
        meta_path, target = folder / ENGINE_META, folder / ENGINE_DIR
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
        return cls(index, _split_docmap(flat, target), meta)

    def _check(self, shape: Shape, target: Path) -> None:
        """Refuse an engine whose documents or document frequencies differ from those of the
        BM25 index of ``shape``."""
        n_docs, terms, df = shape.n_docs, shape.terms, shape.df
        if self.count != n_docs or len(self.docmap) != self.searcher.num_segments:
            raise EngineError(f"{target}: holds {self.count} documents in "
                              f"{self.searcher.num_segments} segments, the BM25 index "
                              f"{n_docs}")  # fmt: skip
        every = np.concatenate(self.docmap) if self.docmap else np.zeros(0, dtype=np.int64)
        every = every[every >= 0]  # a deleted document's place
        if len(every) != n_docs or not np.array_equal(np.sort(every), np.arange(n_docs)):
            raise EngineError(f"{target / DOCS_FILE}: does not map onto the BM25 documents")
        picks = np.linspace(0, len(terms) - 1, min(CHECK_TERMS, len(terms))).astype(int)
        for i in sorted(set(picks.tolist()) | {int(np.argmax(df))} if len(df) else set()):
            t = terms[i]
            there = self.doc_freq(t)
            if there != int(df[i]):
                raise EngineError(f"{target}: term {t!r} is in {there} documents there, in "
                                  f"{int(df[i])} in the BM25 index")  # fmt: skip

    def doc_freq(self, term: str) -> int:
        """The documents holding ``term``, deleted ones not counted (tantivy's own document
        frequency counts them until a merge drops them)."""
        q = _tantivy().Query.term_query(self.schema, _FIELD, term)
        return int(self.searcher.search(q, limit=1, count=True).count)

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
                _remove_tree(folder / name)
                gone = True
        for left in folder.glob(ENGINE_DIR + ".gone-*"):  # one a run that stopped left
            _remove_tree(left)
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


def _docmap(index: Any, pos_of: I64, target: Path) -> list[I64]:
    """Per segment ordinal, the BM25 position of each of its documents: ``pos_of`` of the
    number it was added with (its fast field); -1 where a document is deleted."""
    tantivy = _tantivy()
    searcher = index.searcher()
    hits = searcher.search(
        tantivy.Query.all_query(), limit=max(1, int(searcher.num_docs)), count=False,
        order_by_field=_UID, order=tantivy.Order.Desc,
    ).hits  # fmt: skip
    sizes = [0] * searcher.num_segments
    for _, a in hits:
        sizes[a.segment_ord] = max(sizes[a.segment_ord], a.doc + 1)
    out = [np.full(s, -1, dtype=np.int64) for s in sizes]
    for uid, a in hits:
        pos = int(pos_of[uid]) if 0 <= uid < len(pos_of) else -1
        if pos < 0:
            raise EngineError(f"{target}: document {uid} is in no part of {PARTS_FILE}")
        out[a.segment_ord][a.doc] = pos
    return out


@dataclass
class _Parts:
    """The parts an engine indexes, in document order: each one's name, the number its first
    document was added with (its documents are numbered on from there) and its documents."""

    names: list[str]
    first: list[int]
    docs: list[int]

    def total(self) -> int:
        return sum(self.docs)

    def positions(self, next_uid: int) -> I64:
        """The BM25 position of the document added with each number below ``next_uid``."""
        out = np.full(next_uid, -1, dtype=np.int64)
        at = 0
        for first, n in zip(self.first, self.docs, strict=True):
            out[first : first + n] = np.arange(at, at + n)
            at += n
        return out

    def write(self, target: Path) -> None:
        text = json.dumps({"names": self.names, "first": self.first, "docs": self.docs})
        atomic_write_text(target / PARTS_FILE, text + "\n", fsync=False)

    @classmethod
    def read(cls, target: Path) -> _Parts:
        path = target / PARTS_FILE
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            out = cls(list(raw["names"]), list(raw["first"]), list(raw["docs"]))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise EngineError(f"{path}: cannot read the engine's parts ({exc})") from None
        if not len(out.names) == len(out.first) == len(out.docs) or not all(
            isinstance(x, int) and x >= 0 for x in out.first + out.docs
        ):
            raise EngineError(f"{path}: not a list of parts")
        return out


def _schema() -> Any:
    """Each document's tokens (``t``), the part it belongs to (``part``: deleted by that term
    when the part changes) and the number it was added with (``uid``, a fast field)."""
    tantivy = _tantivy()
    sb = tantivy.SchemaBuilder()
    sb.add_text_field(_FIELD, tokenizer_name="whitespace", index_option="freq")
    sb.add_text_field(_ITEM, tokenizer_name="raw", index_option="basic")
    sb.add_unsigned_field(_UID, fast=True)
    return sb.build()


def _remove_tree(path: Path, tries: int = 5) -> None:
    """Delete an engine's folder: renamed aside first, so that a reader of it still open in this
    process — whose thread reloads it when its meta file changes, taking a lock file in it
    (tantivy) — finds no folder of that name rather than one half deleted; then deleted, again
    after a moment when a file appeared in it meanwhile (a loaded machine's CI once failed
    "Directory not empty" here)."""
    trash = path
    if not path.name.startswith(ENGINE_DIR + ".gone-"):
        trash = path.with_name(f"{ENGINE_DIR}.gone-{os.getpid()}-{time.monotonic_ns()}")
        os.rename(path, trash)
    for attempt in range(tries):
        try:
            shutil.rmtree(trash)
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            if exc.errno != errno.ENOTEMPTY or attempt == tries - 1:
                raise
            time.sleep(0.02 * (attempt + 1))


def _write_parts(
    index: Any,
    names: Sequence[str],
    segment: Callable[[int], bytes],
    kept: Mapping[str, tuple[int, int]],
    deleted: Sequence[str],
    uid: int,
    held: dict[int, bytes | None] | None = None,
) -> tuple[_Parts, int]:
    """One writer's work, committed: the documents of the parts ``deleted`` deleted, those
    of every part of ``names`` not in ``kept`` added (its segment from ``held`` when there,
    else ``segment(i)``), numbered from ``uid``; the parts in order and the next number.
    ``kept``: name → (first number, documents) of a part whose documents stay."""
    held = held if held is not None else {}
    writer = index.writer(heap_size=HEAP_BYTES, num_threads=1)
    for name in deleted:
        writer.delete_documents_by_term(_ITEM, name)
    first, docs = [], []
    for i, name in enumerate(names):
        if name in kept:
            at, n = kept[name]
        else:
            raw = held.pop(i, None)
            at, n = uid, _add(writer, name, segment(i) if raw is None else raw, uid)
            uid += n
        first.append(at)
        docs.append(n)
    writer.commit()
    writer.wait_merging_threads()
    del writer
    return _Parts(list(names), first, docs), uid


def _add(writer: Any, name: str, raw: bytes, uid: int) -> int:
    """Add part ``name``'s documents (its token segment ``raw``), numbered from ``uid``;
    returns how many."""
    tantivy = _tantivy()
    terms, lens, local = decode_segment(raw)
    words = np.asarray(terms, dtype=object)[local]
    ends = np.cumsum(lens)
    n = 0
    for lo, hi in zip((ends - lens).tolist(), ends.tolist(), strict=True):
        doc = tantivy.Document()
        doc.add_text(_FIELD, " ".join(words[lo:hi]))
        doc.add_text(_ITEM, name)
        doc.add_unsigned(_UID, uid + n)
        writer.add_document(doc)
        n += 1
    return n


def _count(raw: bytes) -> int:
    """The documents of a token segment."""
    return len(decode_segment(raw)[1])


def _unique(names: Sequence[str]) -> None:
    if len(set(names)) != len(names):
        raise ValueError("the lexical engine's parts must have distinct names")


def _read_meta(folder: Path) -> dict[str, Any]:
    """``folder``'s engine record, of this format."""
    meta_path = folder / ENGINE_META
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EngineError(f"{meta_path}: cannot read the lexical engine record ({exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("engine") != ENGINE:
        raise EngineError(f"{meta_path}: not a {ENGINE} record of format {FORMAT}")
    if not isinstance(meta.get("next_uid"), int) or not isinstance(meta.get("churn"), int):
        raise EngineError(f"{meta_path}: not a {ENGINE} record of format {FORMAT}")
    return meta


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
    names: Sequence[str],
    segment: Callable[[int], bytes],
    *,
    full: bool = False,
) -> str | None:
    """Build, update, keep or remove ``folder``'s engine for the BM25 index there (``n_docs``
    documents of the chunk set digested ``chunks``, from the parts ``names`` whose token
    segments ``segment(i)`` gives: :meth:`LexicalEngine.build`); returns what was done:
    ``built``, ``updated`` (in place, from an engine of other parts: :meth:`LexicalEngine.update`),
    ``rebuilt`` (after a damaged one, or one that could not be updated), ``kept``, ``removed``
    or ``None`` (below the threshold, none there). ``full``: built (again) whatever is there."""
    settings = LexicalSettings.from_params(raw)
    if n_docs < settings.threshold:
        return "removed" if LexicalEngine.remove(folder) else None
    if full or not (folder / ENGINE_META).exists():
        there = (folder / ENGINE_META).exists()
        LexicalEngine.build(folder, names, segment, chunks=chunks, settings=settings)
        return "rebuilt" if there else "built"
    shape: Shape | None = None
    try:
        # Its terms and row pointers: the index's weights are not read (≈ 560 MB at 100,000
        # items).
        shape = load_shape(folder)
        engine = LexicalEngine.load(folder, shape, chunks)
    except (EngineError, InvalidInputError):
        pass
    else:
        if engine.meta.get("candidates") != settings.candidates:
            meta = {**engine.meta, "candidates": settings.candidates}
            text = json.dumps(meta, indent=2, sort_keys=True) + "\n"
            atomic_write_text(folder / ENGINE_META, text, fsync=False)
        return "kept"
    if shape is not None:  # else unreadable: there is nothing to check an update against
        try:
            updated = LexicalEngine.update(folder, names, segment, chunks=chunks,
                                           settings=settings)  # fmt: skip
            if updated is not None:
                # Checked as a search process would check it: the same documents and
                # document frequencies as the BM25 index just written.
                got = updated.meta["n_docs"]
                if got != n_docs:
                    raise EngineError(f"{folder / ENGINE_META}: {got} documents after the "
                                      f"update, {n_docs} in the index")  # fmt: skip
                updated._check(shape, folder / ENGINE_DIR)
                return "updated"
        except (EngineError, InvalidInputError, OSError, ValueError, RuntimeError):
            pass  # damaged, of another format or not finished: built again below
    LexicalEngine.build(folder, names, segment, chunks=chunks, settings=settings)
    return "rebuilt"
