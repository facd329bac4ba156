"""``arkai eval retrieval``: nDCG@10 / recall@100 / MRR@10 per search mode on BEIR data.

Works on a labelled corpus folder, not on a knowledge repo, so it takes no :class:`Repo`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arkai.model.record import AsDict
from arkai.search.eval import MODES, load_beir, run_eval, split_queries

__all__ = ["MODES", "RetrievalReport", "retrieval"]


@dataclass(frozen=True)
class RetrievalReport(AsDict):
    """``arkai eval retrieval``: the corpus, and each mode's metrics (``ndcg@10``,
    ``recall@100``, ``mrr@10``, ``queries``, ``seconds``, ``qps``, ``search_qps``); ``build``
    holds the index build times (``lexical_seconds``, ``vector_seconds``, ``vector_cached``,
    ``embedder``)."""

    dataset: str
    split: str
    half: str | None
    queries: int
    documents: int
    problems: list[str]
    build: dict[str, Any]
    query_embedding_seconds: float | None
    modes: dict[str, dict[str, Any]]


def retrieval(
    corpus: Path,
    split: str = "train",
    modes: str = ",".join(MODES),
    *,
    limit_queries: int | None = None,
    half: str | None = None,
    embedder: str | None = None,
    cache: bool = True,
    progress: Callable[[str], None] | None = None,
) -> RetrievalReport:
    """Score each of ``modes`` (comma-separated) on ``corpus``'s ``split``; ``half`` (``a`` or
    ``b``) keeps one half of a fixed 50/50 split of the queries."""
    # ``run_eval`` checks the modes and the query limit (before reading the corpus).
    chosen = list(dict.fromkeys(m.strip() for m in modes.split(",") if m.strip()))
    query_ids = None
    if half is not None:
        a, b = split_queries(load_beir(corpus, split).judged_queries)
        query_ids = a if half == "a" else b
    out = run_eval(
        corpus,
        split,
        chosen,
        limit_queries=limit_queries,
        query_ids=query_ids,
        embedder=embedder,
        cache_dir="default" if cache else None,
        progress=progress,
    )
    return RetrievalReport(half=half, **out)
