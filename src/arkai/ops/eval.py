"""``arkai eval retrieval``: nDCG@10 / recall@100 / MRR@10 per search mode on BEIR data.

Works on a labelled corpus folder, not on a knowledge repo, so it takes no :class:`Repo`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arkai.errors import InvalidInputError
from arkai.model.record import AsDict
from arkai.search.eval import MODES, load_beir, run_eval, split_queries

__all__ = ["MODES", "RetrievalReport", "parse_modes", "retrieval"]


def parse_modes(value: str) -> list[str]:
    """``lexical,vector`` → the modes, in order, once each; unknown ones are an error."""
    modes = [m.strip() for m in value.split(",") if m.strip()]
    bad = [m for m in modes if m not in MODES]
    if bad or not modes:
        raise InvalidInputError(
            f"unknown mode(s) in --modes: {', '.join(bad) or '(none)'}",
            hint=f"choose from {', '.join(MODES)}",
        )
    return list(dict.fromkeys(modes))


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
    chosen = parse_modes(modes)
    if limit_queries is not None and limit_queries <= 0:
        raise InvalidInputError("--limit-queries must be a positive number")
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
