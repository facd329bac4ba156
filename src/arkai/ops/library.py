"""``arkai library`` and ``arkai show``: what is in the library, and one item in detail.

Listing always reflects ``library/`` (the source of truth): an item's row comes from
``index/catalog.json`` when the catalog lists it (with the index's chunk count), otherwise from
the item's own files; items the catalog lacks, or lists but the library no longer has, make the
index *stale*, which the listing says (with how to rebuild it) instead of hiding.

Showing always reads the item's own files: ``metadata.json``, its
``evidence.jsonl`` with current reviews, ``entities.json`` and ``wisdom.json``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from arkai.adapters.layout import (
    ENTITIES,
    EVIDENCE,
    INDEX,
    LIBRARY,
    Item,
)
from arkai.adapters.repo import Repo
from arkai.adapters.review import apply_review, load_item_review
from arkai.adapters.store import read_entities, read_evidence, read_json
from arkai.model.evidence import EvidenceLine
from arkai.search.markup import normalize_type

__all__ = ["list_items", "show_item"]

TOP_ENTITIES = 10
WISDOM = "wisdom.json"
#: Where a summary can be found in ``wisdom.json``, in order of preference.
_SUMMARY_KEYS = (("summarize", "summary"), ("extract_wisdom", "summary"),
                 ("condense_chat", "summary"))  # fmt: skip
_LISTED = ("id", "title", "content_type", "path", "tags", "created_at", "published", "url",
           "source_id", "claims", "entities", "chunks")  # fmt: skip


def _row(entry: dict[str, Any]) -> dict[str, Any]:
    row = {key: entry.get(key) for key in _LISTED}
    row["tags"] = list(entry.get("tags") or [])
    return row


def _scan_row(item: Item) -> dict[str, Any]:
    evidence = read_evidence(item.extracted / EVIDENCE)
    entities = read_entities(item.extracted / ENTITIES).get("entities") or []
    return _row(
        {
            **item.metadata,
            "title": item.title,
            "path": f"{LIBRARY}/{item.rel.as_posix()}",
            "claims": len(evidence),
            "entities": len(entities),
            "chunks": None,
        }
    )


def list_items(
    repo: Repo,
    *,
    content_type: str | None = None,
    tag: str | None = None,
    warnings: list[str] | None = None,
) -> list[dict[str, Any]]:
    """Every item (sorted by path), optionally only one folder (``chats`` also matches
    ``chats/chatgpt/…``) or one tag (case-insensitive). ``warnings`` receives a note when the
    index's catalog is stale (items added or removed since the last ``dvc repro``)."""
    root = repo.root
    catalog = read_json(root / INDEX / "catalog.json")
    listed = (
        {str(e.get("id")): e for e in catalog["items"] if isinstance(e, dict)}
        if catalog is not None and isinstance(catalog.get("items"), list)
        else None
    )
    rows = []
    for item in repo.items():
        entry = listed.get(item.id) if listed is not None else None
        row = _row(entry) if entry is not None else _scan_row(item)
        row["listed_from"] = "catalog" if entry is not None else "library"
        rows.append(row)
    if listed is not None and warnings is not None:
        present = {str(r["id"]) for r in rows}
        added = sum(r["listed_from"] == "library" for r in rows)
        removed = sum(cid not in present for cid in listed)
        if added or removed:
            warnings.append(
                f"the search index is stale: {added} item(s) not indexed yet, {removed} "
                "indexed item(s) no longer in library/ — run `dvc repro` (or `arkai reindex`)"
            )
    if content_type:
        want = normalize_type(content_type)
        rows = [
            r for r in rows
            if str(r["content_type"]).lower() == want
            or str(r["content_type"]).lower().startswith(want + "/")
        ]  # fmt: skip
    if tag:
        t = " ".join(tag.lower().split())
        rows = [r for r in rows if t in {" ".join(str(x).lower().split()) for x in r["tags"]}]
    return sorted(rows, key=lambda r: str(r.get("path") or ""))


def _summary(wisdom: dict[str, Any] | None) -> str | None:
    if not wisdom:
        return None
    for pattern, key in _SUMMARY_KEYS:
        section = wisdom.get(pattern)
        value = section.get(key) if isinstance(section, dict) else None
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _claim_row(item: Item, line: EvidenceLine) -> dict[str, Any]:
    span = line.span
    transcript = f"{LIBRARY}/{item.rel.as_posix()}/transcript.md"
    return {
        "evidence_id": line.id,
        "claim": line.claim,
        "quote": line.quote,
        "status": line.status,
        "review": line.review.status if line.review else None,
        "verdict": line.verdict.verdict if line.verdict else None,
        "confidence": line.confidence,
        "line": span.line if span else None,
        "timestamp": span.video_timestamp if span else None,
        **({"page": span.page} if span and span.page else {}),
        "link": f"{transcript}#L{span.line}" if span and span.line else None,
    }


def library_listing(
    repo: Repo, *, content_type: str | None = None, tag: str | None = None
) -> dict[str, Any]:
    """``arkai library --json``: ``{"count", "items", "warnings"}`` (see :func:`list_items`)."""
    warnings: list[str] = []
    rows = list_items(repo, content_type=content_type, tag=tag, warnings=warnings)
    return {"count": len(rows), "items": rows, "warnings": warnings}


def show_item(repo: Repo, ident: str, *, full: bool = False) -> dict[str, Any]:
    """One item: metadata, claim counts by status (and review), the top entities, the
    summary; with ``full`` every claim and the transcript's path."""
    item = repo.item(ident)
    lines = apply_review(read_evidence(item.extracted / EVIDENCE), load_item_review(item))
    by_status = Counter(line.status for line in lines)
    by_review = Counter(line.review.status if line.review else "unreviewed" for line in lines)
    entities = read_entities(item.extracted / ENTITIES).get("entities") or []
    ranked = sorted(
        (e for e in entities if isinstance(e, dict)),
        key=lambda e: (-len(e.get("mentions") or []), -float(e.get("confidence") or 0),
                       str(e.get("name"))),
    )  # fmt: skip
    out: dict[str, Any] = {
        "id": item.id,
        "title": item.title,
        "path": f"{LIBRARY}/{item.rel.as_posix()}",
        "metadata": item.metadata,
        "claims": {
            "total": len(lines),
            "by_status": dict(sorted(by_status.items())),
            "by_review": dict(sorted(by_review.items())),
        },
        "entities": {
            "total": len(ranked),
            "top": [
                {
                    "name": e.get("name"),
                    "type": e.get("type"),
                    "mentions": len(e.get("mentions") or []),
                }
                for e in ranked[:TOP_ENTITIES]
            ],
        },
        "summary": _summary(read_json(item.extracted / WISDOM)),
    }
    if full:
        out["transcript"] = f"{LIBRARY}/{item.rel.as_posix()}/transcript.md"
        out["claims"]["list"] = [_claim_row(item, line) for line in lines]
    return out
