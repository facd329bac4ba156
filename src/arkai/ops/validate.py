"""``arkai validate`` / ``arkai evidence validate``: re-check every digest and slice hash."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arkai.adapters import events
from arkai.adapters.layout import (
    ENTITIES,
    EVIDENCE,
    EXTRACTION,
    TRANSCRIPT,
    Item,
    ItemProblem,
    scan_items,
)
from arkai.adapters.review import load_item_review, match_reviews
from arkai.adapters.store import read_entities, read_evidence, read_json
from arkai.core.hashing import digest
from arkai.errors import ArkaiError
from arkai.model.evidence import Span


@dataclass
class ItemReport:
    """Validation of one item's evidence and entity mentions against its current transcript."""

    content_id: str
    title: str
    path: str
    digest_ok: bool
    """Current ``transcript.md`` digest equals the one the evidence was resolved against."""
    edited_since_add: bool
    """``transcript.md`` differs from the digest recorded in ``metadata.json`` at add time."""
    extracted: bool
    valid: int = 0
    stale: int = 0
    unresolved: int = 0
    mentions_valid: int = 0
    mentions_stale: int = 0
    stale_ids: list[str] = field(default_factory=list)
    error: str | None = None
    """Why the item could not be checked (an unreadable file, a failed extraction); the item is
    skipped and validation fails."""
    orphaned_reviews: list[str] = field(default_factory=list)
    """``review.yaml`` keys that name no claim of the current extraction (kept, reported)."""

    @property
    def ok(self) -> bool:
        return (
            self.stale == 0 and self.mentions_stale == 0 and self.extracted and self.error is None
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "content_id": self.content_id,
            "title": self.title,
            "path": self.path,
            "digest_ok": self.digest_ok,
            "edited_since_add": self.edited_since_add,
            "extracted": self.extracted,
            "valid": self.valid,
            "stale": self.stale,
            "unresolved": self.unresolved,
            "mentions_valid": self.mentions_valid,
            "mentions_stale": self.mentions_stale,
            "stale_ids": self.stale_ids,
            "error": self.error,
            "orphaned_reviews": self.orphaned_reviews,
        }


def span_is_valid(data: bytes, span: Span) -> bool:
    """True when the bytes at the span still hash to ``slice_sha256``."""
    if span.start < 0 or span.end < span.start or span.end > len(data):
        return False
    return digest(data[span.start : span.end]) == span.slice_sha256


def validate_item(item: Item) -> ItemReport:
    """Recompute the transcript digest and every span's slice hash for one item. An item whose
    files cannot be read (a link, a FIFO, malformed JSON or YAML) is reported with ``error``."""
    try:
        return _validate_item(item)
    except (ArkaiError, OSError) as exc:
        return ItemReport(
            content_id=item.id,
            title=item.title,
            path=str(item.path.relative_to(item.root)),
            digest_ok=False,
            edited_since_add=False,
            extracted=False,
            error=str(exc),
        )


def _validate_item(item: Item) -> ItemReport:
    data = item.read(TRANSCRIPT, missing_ok=True) or b""
    current = digest(data)
    extraction = read_json(item.extracted / EXTRACTION) or {}
    recorded_add = (item.metadata.get("artifact_digests") or {}).get(TRANSCRIPT)
    expected = extraction.get("transcript_digest") or recorded_add
    report = ItemReport(
        content_id=item.id,
        title=item.title,
        path=str(item.path.relative_to(item.root)),
        digest_ok=expected == current,
        edited_since_add=recorded_add is not None and recorded_add != current,
        extracted=extraction.get("status") == "ok",
    )
    if extraction.get("status") == "failed":
        report.error = f"extraction failed: {extraction.get('error')}"
    evidence = read_evidence(item.extracted / EVIDENCE)
    reviews = load_item_review(item)
    if reviews:
        report.orphaned_reviews = sorted(match_reviews(evidence, reviews, evidence).orphans)
    for line in evidence:
        if line.span is None:
            report.unresolved += 1
        elif span_is_valid(data, line.span):
            report.valid += 1
        else:
            report.stale += 1
            report.stale_ids.append(line.id)
    for entity in read_entities(item.extracted / ENTITIES)["entities"]:
        for mention in entity.get("mentions", []):
            if mention.get("span"):
                if span_is_valid(data, Span.from_dict(mention["span"])):
                    report.mentions_valid += 1
                else:
                    report.mentions_stale += 1
    return report


def validate_items(root: Path, items: list[Item]) -> list[ItemReport]:
    """Validate ``items`` and log one ``EvidenceValidated`` event per item."""
    reports = []
    with events.run(root, "validate", items=len(items)) as log:
        for item in items:
            rep = validate_item(item)
            log.emit(
                "EvidenceValidated",
                content_id=rep.content_id,
                artifact=TRANSCRIPT,
                digest_ok=rep.digest_ok,
                valid_count=rep.valid,
                stale_count=rep.stale,
                unresolved_count=rep.unresolved,
            )
            reports.append(rep)
    return reports


def summarize(reports: list[ItemReport], problems: Sequence[ItemProblem] = ()) -> dict[str, Any]:
    """Library-wide counts; deterministic (no times) so the DVC metric diffs cleanly."""
    return {
        "items": len(reports) + len(problems),
        "not_extracted": sum(not r.extracted and r.error is None for r in reports),
        "errors": sum(r.error is not None for r in reports) + len(problems),
        "orphaned_reviews": sum(len(r.orphaned_reviews) for r in reports),
        "extracted": sum(r.extracted for r in reports),
        "digest_mismatch": sum(not r.digest_ok for r in reports),
        "edited_since_add": sum(r.edited_since_add for r in reports),
        "valid": sum(r.valid for r in reports),
        "stale": sum(r.stale for r in reports),
        "unresolved": sum(r.unresolved for r in reports),
        "mentions_valid": sum(r.mentions_valid for r in reports),
        "mentions_stale": sum(r.mentions_stale for r in reports),
        "ok": all(r.ok for r in reports) and not problems,
    }


def validate_library(root: Path) -> tuple[dict[str, Any], list[ItemReport], list[ItemProblem]]:
    """Every item's report, and the folders that could not be read as items."""
    items, problems = scan_items(root)
    reports = validate_items(root, items)
    return summarize(reports, problems), reports, problems
