"""Retrieval evaluation on BEIR-format data (DESIGN §7).

A BEIR folder holds ``corpus.jsonl`` (``{"_id", "title", "text"}`` per line),
``queries.jsonl`` (``{"_id", "text"}``) and ``qrels/<split>.tsv`` (``query-id corpus-id score``
with a header line). :func:`load_beir` reads it, skipping malformed lines and naming each as
``file:line`` in :attr:`BeirData.problems`.

Metrics follow the usual trec_eval conventions: a document is relevant when its qrels score
is positive; nDCG@10 uses the graded score as the gain and ``1 / log2(rank + 1)`` as the
discount, against the ideal ordering of that query's judged documents; recall@100 is the
share of a query's relevant documents in its first 100 results; MRR@10 is the reciprocal
rank of the first relevant document within the first 10 (0 if none). Each is averaged over
the queries that have at least one relevant document.

:func:`run_eval` builds the lanes once and reports those metrics, queries per second and
index build time for each requested mode (``lexical``, ``vector``, ``rrf``, ``hybrid``);
every mode runs through :func:`arkai.search.pipeline.rank`, the pipeline ``arkai search``
runs (``rrf`` is its plain-RRF baseline fusion; the vector floor applies as in the product).
Corpus embeddings are cached under ``$ARKAI_CACHE_DIR/eval`` (default
``~/.cache/arkai/eval``), keyed by the corpus content and the embedder name.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from arkai.adapters.fs import atomic_write
from arkai.errors import InvalidInputError

__all__ = [
    "MODES",
    "BeirData",
    "Document",
    "aggregate",
    "load_beir",
    "mrr_at_k",
    "ndcg_at_k",
    "recall_at_k",
    "run_eval",
    "split_queries",
]

MODES: tuple[str, ...] = ("lexical", "vector", "rrf", "hybrid")
"""Evaluation modes: BM25 alone, dense alone, plain RRF (k=60), the tuned hybrid."""

Qrels = dict[str, dict[str, int]]
RUN_DEPTH = 100  # results kept per query (recall@100 needs 100)


@dataclass(frozen=True)
class Document:
    id: str
    title: str
    text: str


@dataclass
class BeirData:
    """One BEIR data set with one split's judgements."""

    corpus: list[Document]
    queries: dict[str, str]
    qrels: Qrels
    problems: list[str] = field(default_factory=list)

    @property
    def judged_queries(self) -> list[str]:
        """Ids of queries that have text and at least one relevant document, sorted."""
        return sorted(
            (q for q, rels in self.qrels.items() if q in self.queries and _has_relevant(rels)),
            key=_natural_key,
        )


# -- loading ---------------------------------------------------------------------------


def load_beir(folder: str | os.PathLike[str], split: str = "train") -> BeirData:
    """Read a BEIR folder. Missing files or split → :class:`InvalidInputError`."""
    root = Path(folder)
    if not root.is_dir():
        raise InvalidInputError(f"corpus folder not found: {root}")
    corpus_path = root / "corpus.jsonl"
    queries_path = root / "queries.jsonl"
    qrels_dir = root / "qrels"
    for p in (corpus_path, queries_path):
        if not p.is_file():
            raise InvalidInputError(f"missing {p.name} in {root}", hint="expected BEIR layout")
    if not split or "/" in split or "\\" in split or split.startswith("."):
        raise InvalidInputError(f"bad split name: {split!r}")
    qrels_path = qrels_dir / f"{split}.tsv"
    if not qrels_path.is_file():
        have = sorted(p.stem for p in qrels_dir.glob("*.tsv")) if qrels_dir.is_dir() else []
        raise InvalidInputError(
            f"no qrels for split {split!r} in {root}",
            hint=f"available splits: {', '.join(have)}" if have else "qrels/ has no .tsv files",
        )
    problems: list[str] = []
    corpus: list[Document] = []
    seen: set[str] = set()
    for where, obj in jsonl_objects(corpus_path, problems):
        doc_id, text = obj.get("_id"), obj.get("text")
        title = obj.get("title") or ""
        if not isinstance(doc_id, str | int) or not isinstance(text, str):
            problems.append(f"{where}: needs string '_id' and 'text'")
            continue
        if not isinstance(title, str):
            problems.append(f"{where}: 'title' is not a string")
            continue
        doc_id = str(doc_id)
        if doc_id in seen:
            problems.append(f"{where}: duplicate document id {doc_id!r} (kept the first)")
            continue
        seen.add(doc_id)
        corpus.append(Document(doc_id, title, text))
    queries: dict[str, str] = {}
    for where, obj in jsonl_objects(queries_path, problems):
        qid, text = obj.get("_id"), obj.get("text")
        if not isinstance(qid, str | int) or not isinstance(text, str):
            problems.append(f"{where}: needs string '_id' and 'text'")
            continue
        queries.setdefault(str(qid), text)
    qrels = _read_qrels(qrels_path, problems)
    if not corpus:
        raise InvalidInputError(f"{corpus_path} has no usable documents")
    if not qrels:
        raise InvalidInputError(f"{qrels_path} has no usable judgements")
    return BeirData(corpus=corpus, queries=queries, qrels=qrels, problems=problems)


def jsonl_objects(path: Path, problems: list[str]) -> Iterable[tuple[str, dict[str, Any]]]:
    """``(where, object)`` for each JSON object line of ``path`` (streamed: corpora are large),
    ``where`` being ``path:line``; a line that is not one goes to ``problems`` and is skipped."""
    with path.open(encoding="utf-8", errors="replace") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            where = f"{path}:{n}"
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                problems.append(f"{where}: not JSON ({exc.msg})")
                continue
            if not isinstance(obj, dict):
                problems.append(f"{where}: not a JSON object")
                continue
            yield where, obj


def _read_qrels(path: Path, problems: list[str]) -> Qrels:
    qrels: Qrels = {}
    with path.open(encoding="utf-8", errors="replace") as fh:
        for n, line in enumerate(fh, 1):
            parts = line.split()
            if not parts:
                continue
            if n == 1 and parts[:2] == ["query-id", "corpus-id"]:
                continue
            if len(parts) == 4:  # TREC layout: qid iteration docid score
                parts = [parts[0], parts[2], parts[3]]
            if len(parts) != 3:
                problems.append(f"{path}:{n}: expected 'query-id corpus-id score'")
                continue
            try:
                score = int(float(parts[2]))
            except ValueError:
                problems.append(f"{path}:{n}: score {parts[2]!r} is not a number")
                continue
            qrels.setdefault(parts[0], {})[parts[1]] = score
    return qrels


def _has_relevant(rels: Mapping[str, int]) -> bool:
    return any(s > 0 for s in rels.values())


def _natural_key(s: str) -> tuple[int, int | str]:
    return (0, int(s)) if s.isdigit() else (1, s)


# -- metrics ---------------------------------------------------------------------------


def ndcg_at_k(ranking: Sequence[str], rels: Mapping[str, int], k: int = 10) -> float:
    """nDCG@k with the graded score as gain (trec_eval ``ndcg_cut``); 0 if nothing relevant."""
    ideal = sorted((s for s in rels.values() if s > 0), reverse=True)[:k]
    if not ideal:
        return 0.0
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    dcg = 0.0
    for i, doc in enumerate(ranking[:k]):
        g = rels.get(doc, 0)
        if g > 0:
            dcg += g / math.log2(i + 2)
    return dcg / idcg


def recall_at_k(ranking: Sequence[str], rels: Mapping[str, int], k: int = 100) -> float:
    """Share of the relevant documents found in the first ``k``."""
    relevant = {d for d, s in rels.items() if s > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranking[:k])) / len(relevant)


def mrr_at_k(ranking: Sequence[str], rels: Mapping[str, int], k: int = 10) -> float:
    """Reciprocal rank of the first relevant document within the first ``k`` (0 if none)."""
    for i, doc in enumerate(ranking[:k]):
        if rels.get(doc, 0) > 0:
            return 1.0 / (i + 1)
    return 0.0


def aggregate(runs: Mapping[str, Sequence[str]], qrels: Qrels) -> dict[str, float]:
    """Mean nDCG@10, recall@100, MRR@10 over the judged queries in ``runs``.

    A judged query missing from ``runs`` counts as an empty ranking.
    """
    qids = [q for q in runs if q in qrels and _has_relevant(qrels[q])]
    if not qids:
        return {"ndcg@10": 0.0, "recall@100": 0.0, "mrr@10": 0.0, "queries": 0}
    n = len(qids)
    return {
        "ndcg@10": sum(ndcg_at_k(runs[q], qrels[q]) for q in qids) / n,
        "recall@100": sum(recall_at_k(runs[q], qrels[q]) for q in qids) / n,
        "mrr@10": sum(mrr_at_k(runs[q], qrels[q]) for q in qids) / n,
        "queries": n,
    }


def split_queries(qids: Sequence[str], *, seed: int = 0) -> tuple[list[str], list[str]]:
    """A deterministic 50/50 split of ``qids`` (tune on the first, report the second)."""
    shuffled = sorted(qids, key=_natural_key)
    random.Random(seed).shuffle(shuffled)
    half = len(shuffled) // 2
    return sorted(shuffled[:half], key=_natural_key), sorted(shuffled[half:], key=_natural_key)


# -- running ---------------------------------------------------------------------------

ProgressFn = Callable[[str], None]


def corpus_digest(docs: Sequence[Document], model: str) -> str:
    """A key for cached corpus embeddings: the model (its name, and its recipe when it has one:
    :func:`arkai.search.embed.recipe_of`) and the exact text embedded."""
    from arkai.search.pipeline import passage_text

    h = hashlib.sha256()
    h.update(f"arkai-eval-v1\0{model}\0{len(docs)}\0".encode())
    for d in docs:
        h.update(passage_text(d.title, d.text).encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()


#: Documents embedded per progress step of :func:`run_eval`.
EMBED_BATCH = 512


def default_cache_dir() -> Path:
    """``$ARKAI_CACHE_DIR/eval`` (default ``~/.cache/arkai/eval``)."""
    from arkai.search.embed import cache_root

    return cache_root() / "eval"


def _embed_corpus(
    embedder: Any,
    docs: Sequence[Document],
    cache_dir: Path | None,
    progress: ProgressFn,
) -> tuple[npt.NDArray[np.float32], bool]:
    from arkai.search.pipeline import passage_text

    path: Path | None = None
    if cache_dir is not None:
        from arkai.search.embed import recipe_of

        recipe = recipe_of(embedder)
        model = f"{embedder.name}:{recipe}" if recipe else str(embedder.name)
        path = cache_dir / f"{corpus_digest(docs, model)}.npy"
        if path.is_file():
            cached = np.load(path)
            if cached.shape[0] == len(docs):
                return cached.astype(np.float32, copy=False), True
    texts = [passage_text(d.title, d.text) for d in docs]
    parts = []
    # In batches, so that a long embedding run reports its progress.
    for start in range(0, len(texts), EMBED_BATCH):
        progress(f"embedding documents {start}/{len(texts)} with {embedder.name}")
        batch = texts[start : start + EMBED_BATCH]
        parts.append(np.asarray(embedder.encode(batch, kind="passage"), dtype=np.float32))
    vecs = (
        np.concatenate(parts)
        if parts
        else np.asarray(embedder.encode(texts, kind="passage"), dtype=np.float32)
    )
    if path is not None:
        atomic_write(path, lambda fh: np.save(fh, vecs), fsync=False)
    return vecs, False


def run_eval(
    corpus_dir: str | os.PathLike[str],
    split: str = "train",
    modes: Sequence[str] = MODES,
    *,
    limit_queries: int | None = None,
    query_ids: Sequence[str] | None = None,
    embedder: Any = None,
    cache_dir: Path | str | None = "default",
    progress: ProgressFn | None = None,
) -> dict[str, Any]:
    """Evaluate each of ``modes`` on ``corpus_dir``/``split``.

    Returns ``{"dataset", "split", "queries", "documents", "problems", "build": {...},
    "query_embedding_seconds", "modes": {mode: {"ndcg@10", "recall@100", "mrr@10",
    "queries", "seconds", "qps", "search_qps"}}}``: ``qps`` counts everything a query costs
    (embedding it included), ``search_qps`` leaves the query embedding out.
    ``query_ids`` restricts evaluation to those queries (e.g. one half of
    :func:`split_queries`); ``limit_queries`` keeps the first N judged queries.
    ``embedder`` is an :class:`~arkai.search.embed.Embedder` or a name for
    ``get_embedder`` (default: the hybrid's, ``minilm``); ``cache_dir=None`` disables the
    embedding cache.
    """
    from arkai.search import pipeline
    from arkai.search.vectors import VectorStore

    say: ProgressFn = progress or (lambda _msg: None)
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        raise InvalidInputError(
            f"unknown mode(s): {', '.join(unknown) or '(none given)'}",
            hint=f"choose from {', '.join(MODES)}",
        )
    if limit_queries is not None and limit_queries <= 0:
        raise InvalidInputError("--limit-queries must be positive")
    data = load_beir(corpus_dir, split)
    qids = data.judged_queries
    if query_ids is not None:
        wanted = set(query_ids)
        qids = [q for q in qids if q in wanted]
    if limit_queries is not None:
        qids = qids[:limit_queries]
    if not qids:
        raise InvalidInputError(f"no judged queries to evaluate in split {split!r}")
    doc_ids = [d.id for d in data.corpus]
    texts = [data.queries[q] for q in qids]

    need_lex = any(m in ("lexical", "rrf", "hybrid") for m in modes)
    need_vec = any(m in ("vector", "rrf", "hybrid") for m in modes)
    build: dict[str, Any] = {}
    index = None
    if need_lex:
        say(f"building BM25 over {len(doc_ids)} documents")
        t0 = time.perf_counter()
        index = pipeline.build_lexical([(d.title, d.text) for d in data.corpus])
        build["lexical_seconds"] = time.perf_counter() - t0
    doc_vecs: npt.NDArray[np.float32] | None = None
    if need_vec:
        if embedder is None:
            embedder = pipeline.default_embedder()
        elif isinstance(embedder, str):
            from arkai.search.embed import get_embedder

            embedder = get_embedder(embedder)
        cdir = default_cache_dir() if cache_dir == "default" else cache_dir
        t0 = time.perf_counter()
        doc_vecs, cached = _embed_corpus(
            embedder, data.corpus, Path(cdir) if cdir is not None else None, say
        )
        build["vector_seconds"] = time.perf_counter() - t0
        build["vector_cached"] = cached
        build["embedder"] = str(embedder.name)

    store: VectorStore | None = None
    if doc_vecs is not None:
        store = VectorStore(int(doc_vecs.shape[1]), str(embedder.name))
        store.add(doc_ids, doc_vecs)
    corpus = pipeline.Corpus(index, store)

    # The query embedding is timed once and charged to every mode that needs it; each mode is
    # timed end to end through the product's own pipeline.
    q_vecs: npt.NDArray[np.float32] | None = None
    encode_s = 0.0
    if store is not None:
        say("embedding queries")
        t0 = time.perf_counter()
        q_vecs = np.asarray(embedder.encode(texts, kind="query"), dtype=np.float32)
        encode_s = time.perf_counter() - t0

    results: dict[str, Any] = {}
    for mode in modes:
        say(f"scoring {mode}")
        lane_mode, fusion = ("hybrid", "rrf") if mode == "rrf" else (mode, "hybrid")
        t0 = time.perf_counter()
        ranked = [
            [
                doc_ids[r.doc]
                for r in pipeline.rank(
                    corpus,
                    q,
                    mode=lane_mode,
                    query_vec=None if q_vecs is None else q_vecs[n],
                    depth=RUN_DEPTH,
                    fusion=fusion,
                ).ranked[:RUN_DEPTH]
            ]
            for n, q in enumerate(texts)
        ]
        search_s = time.perf_counter() - t0
        seconds = search_s + (encode_s if lane_mode != "lexical" else 0.0)
        metrics: dict[str, Any] = dict(aggregate(dict(zip(qids, ranked, strict=True)), data.qrels))
        metrics["seconds"] = seconds
        metrics["search_qps"] = len(qids) / search_s if search_s > 0 else float("inf")
        metrics["qps"] = len(qids) / seconds if seconds > 0 else float("inf")
        results[mode] = metrics
    return {
        "dataset": str(Path(corpus_dir)),
        "split": split,
        "queries": len(qids),
        "documents": len(doc_ids),
        "problems": data.problems,
        "build": build,
        "query_embedding_seconds": encode_s if q_vecs is not None else None,
        "modes": results,
    }
