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
from dataclasses import dataclass
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

__all__ = ["ClaimRow", "ItemDetail", "ItemRow", "Listing", "list_items", "show_item"]

TOP_ENTITIES = 10
WISDOM = "wisdom.json"
#: Where a summary can be found in ``wisdom.json``, in order of preference.
_SUMMARY_KEYS = (("summarize", "summary"), ("extract_wisdom", "summary"),
                 ("condense_chat", "summary"))  # fmt: skip
_MORE = ("created_at", "published", "url", "source_id")


@dataclass(frozen=True)
class ItemRow:
    """One item of ``arkai library``: catalog (or metadata) fields, and where it was read."""

    id: str
    title: str | None
    content_type: str | None
    path: str | None
    tags: tuple[str, ...]
    claims: int | None
    entities: int | None
    chunks: int | None
    listed_from: str
    #: created_at, published, url, source_id as stored (None when absent).
    more: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "content_type": self.content_type,
                "path": self.path, "tags": list(self.tags), "claims": self.claims,
                "entities": self.entities, "chunks": self.chunks,
                "listed_from": self.listed_from, **self.more}  # fmt: skip


def _row(entry: dict[str, Any], listed_from: str) -> ItemRow:
    return ItemRow(
        str(entry.get("id")), entry.get("title"), entry.get("content_type"), entry.get("path"),
        tuple(entry.get("tags") or []), entry.get("claims"), entry.get("entities"),
        entry.get("chunks"), listed_from, {key: entry.get(key) for key in _MORE},
    )  # fmt: skip


def _scan_row(item: Item) -> ItemRow:
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
        },
        "library",
    )


def list_items(
    repo: Repo,
    *,
    content_type: str | None = None,
    tag: str | None = None,
    warnings: list[str] | None = None,
) -> list[ItemRow]:
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
        rows.append(_row(entry, "catalog") if entry is not None else _scan_row(item))
    if listed is not None and warnings is not None:
        present = {str(r.id) for r in rows}
        added = sum(r.listed_from == "library" for r in rows)
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
            if str(r.content_type).lower() == want
            or str(r.content_type).lower().startswith(want + "/")
        ]  # fmt: skip
    if tag:
        t = " ".join(tag.lower().split())
        rows = [r for r in rows if t in {" ".join(str(x).lower().split()) for x in r.tags}]
    return sorted(rows, key=lambda r: str(r.path or ""))


def _summary(wisdom: dict[str, Any] | None) -> str | None:
    if not wisdom:
        return None
    for pattern, key in _SUMMARY_KEYS:
        section = wisdom.get(pattern)
        value = section.get(key) if isinstance(section, dict) else None
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


@dataclass(frozen=True)
class ClaimRow:
    """One claim of ``arkai show --full``."""

    evidence_id: str
    claim: str
    quote: str
    status: str
    review: str | None
    verdict: str | None
    confidence: float | None
    line: int | None
    timestamp: str | None
    page: int | None
    link: str | None

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in vars(self).items() if k != "page"}
        return out | ({"page": self.page} if self.page else {})


def _claim_row(item: Item, line: EvidenceLine) -> ClaimRow:
    span = line.span
    transcript = f"{LIBRARY}/{item.rel.as_posix()}/transcript.md"
    return ClaimRow(
        line.id, line.claim, line.quote, line.status,
        line.review.status if line.review else None,
        line.verdict.verdict if line.verdict else None,
        line.confidence,
        span.line if span else None,
        span.video_timestamp if span else None,
        span.page if span else None,
        f"{transcript}#L{span.line}" if span and span.line else None,
    )  # fmt: skip


@dataclass(frozen=True)
class Listing:
    """``arkai library``: the rows and any stale-index warnings."""

    items: list[ItemRow]
    warnings: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {"count": len(self.items), "items": [r.to_dict() for r in self.items],
                "warnings": self.warnings}  # fmt: skip


def library_listing(
    repo: Repo, *, content_type: str | None = None, tag: str | None = None
) -> Listing:
    """``arkai library``: the rows and warnings of :func:`list_items`."""
    warnings: list[str] = []
    return Listing(list_items(repo, content_type=content_type, tag=tag, warnings=warnings),
                   warnings)  # fmt: skip


@dataclass(frozen=True)
class EntityCount:
    name: Any
    type: Any
    mentions: int


@dataclass(frozen=True)
class ItemDetail:
    """``arkai show``: one item's metadata, claim counts, top entities and summary; with
    ``full`` also every claim (``claims``) and the transcript's path."""

    id: str
    title: str
    path: str
    metadata: dict[str, Any]
    claims_total: int
    by_status: dict[str, int]
    by_review: dict[str, int]
    entities_total: int
    top_entities: list[EntityCount]
    summary: str | None
    transcript: str | None = None
    claims: list[ClaimRow] | None = None

    def to_dict(self) -> dict[str, Any]:
        claims: dict[str, Any] = {"total": self.claims_total, "by_status": self.by_status,
                                  "by_review": self.by_review}  # fmt: skip
        out: dict[str, Any] = {
            "id": self.id, "title": self.title, "path": self.path, "metadata": self.metadata,
            "claims": claims,
            "entities": {"total": self.entities_total,
                         "top": [vars(e) for e in self.top_entities]},
            "summary": self.summary,
        }  # fmt: skip
        if self.claims is not None:
            out["transcript"] = self.transcript
            claims["list"] = [c.to_dict() for c in self.claims]
        return out


def show_item(repo: Repo, ident: str, *, full: bool = False) -> ItemDetail:
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
    path = f"{LIBRARY}/{item.rel.as_posix()}"
    return ItemDetail(
        item.id, item.title, path, item.metadata, len(lines),
        dict(sorted(by_status.items())), dict(sorted(by_review.items())), len(ranked),
        [EntityCount(e.get("name"), e.get("type"), len(e.get("mentions") or []))
         for e in ranked[:TOP_ENTITIES]],
        _summary(read_json(item.extracted / WISDOM)),
        f"{path}/transcript.md" if full else None,
        [_claim_row(item, line) for line in lines] if full else None,
    )  # fmt: skip
