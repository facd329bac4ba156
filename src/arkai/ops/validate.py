"""``arkai validate`` / ``arkai evidence validate``: re-check every digest and slice hash."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arkai.adapters import events
from arkai.adapters.layout import ENTITIES, EVIDENCE, EXTRACTION, TRANSCRIPT, Item, iter_items
from arkai.adapters.store import read_entities, read_evidence, read_json
from arkai.core.hashing import digest
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

    @property
    def ok(self) -> bool:
        return self.stale == 0 and self.mentions_stale == 0

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
        }


def span_is_valid(data: bytes, span: Span) -> bool:
    """True when the bytes at the span still hash to ``slice_sha256``."""
    if span.start < 0 or span.end < span.start or span.end > len(data):
        return False
    return digest(data[span.start : span.end]) == span.slice_sha256


def validate_item(item: Item) -> ItemReport:
    """Recompute the transcript digest and every span's slice hash for one item."""
    data = item.transcript.read_bytes() if item.transcript.is_file() else b""
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
        extracted=bool(extraction),
    )
    for line in read_evidence(item.extracted / EVIDENCE):
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


def summarize(reports: list[ItemReport]) -> dict[str, Any]:
    """Library-wide counts; deterministic (no times) so the DVC metric diffs cleanly."""
    return {
        "items": len(reports),
        "extracted": sum(r.extracted for r in reports),
        "digest_mismatch": sum(not r.digest_ok for r in reports),
        "edited_since_add": sum(r.edited_since_add for r in reports),
        "valid": sum(r.valid for r in reports),
        "stale": sum(r.stale for r in reports),
        "unresolved": sum(r.unresolved for r in reports),
        "mentions_valid": sum(r.mentions_valid for r in reports),
        "mentions_stale": sum(r.mentions_stale for r in reports),
        "ok": all(r.ok for r in reports),
    }


def validate_library(root: Path) -> tuple[dict[str, Any], list[ItemReport]]:
    reports = validate_items(root, list(iter_items(root)))
    return summarize(reports), reports
