"""``arkai topics TERM``: the topic index first, a grep of the transcripts when it has nothing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from arkai.adapters.repo import Repo
from arkai.errors import NotFoundError
from arkai.search.topics import grep_library, lookup_topic

__all__ = ["TopicsResult", "topics"]


@dataclass(frozen=True)
class TopicsResult:
    term: str
    source: str
    """``topics`` (the topic index answered) or ``grep`` (transcript lines)."""
    results: list[dict[str, Any]]
    reason: str | None = None
    """Why the grep was used (``grep`` only)."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"term": self.term, "source": self.source}
        if self.source == "grep":
            out["reason"] = self.reason
        return out | {"results": self.results}


def _chunk_links(repo: Repo, hits: list[dict[str, Any]]) -> None:
    """Add ``links`` (``transcript.md#L…`` of the first chunks) to topic hits, when the
    index can be read."""
    from arkai.ops.search import load_index

    try:
        index = load_index(repo.root)
    except Exception:  # the topic index can outlive a broken chunk index: links are optional
        return
    for hit in hits:
        links = []
        for pos in hit.get("chunks", [])[:5]:
            if 0 <= pos < len(index.chunks) and hit.get("path"):
                links.append(f"{hit['path']}/transcript.md#L{index.chunks[pos].start_line}")
        hit["links"] = links


def _grep_links(repo: Repo, lines: list[dict[str, Any]]) -> None:
    """Add each grep line's item ``title`` and ``link`` (``…/transcript.md#L<line>``)."""
    from arkai.ops.library import list_items

    items = {r.id: r for r in list_items(repo)} if lines else {}
    for ln in lines:
        item = items.get(ln["content_id"])
        if item and item.path:
            ln["title"] = item.title
            ln["link"] = f"{item.path}/transcript.md#L{ln['line']}"


def topics(repo: Repo, term: str, *, limit: int = 20) -> TopicsResult:
    """Look ``term`` up in ``index/topics.json`` (synonyms, stemming); else grep at most
    ``limit`` transcript lines; :class:`NotFoundError` (exit 5) when neither finds it."""
    reason = None
    try:
        hits = lookup_topic(repo.index, term)
    except NotFoundError:
        hits, reason = [], "no topic index (run `dvc repro` or `arkai reindex`)"
    if hits:
        _chunk_links(repo, hits)
        return TopicsResult(term, "topics", hits)
    reason = reason or "not in the topic index"
    lines = grep_library(repo.root, term, limit=limit)
    _grep_links(repo, lines)
    if not lines:
        raise NotFoundError(f"no results for {term!r}: {reason}, and no transcript line has it")
    return TopicsResult(term, "grep", lines, reason)
