"""Building evidence lines from extractor output (pure: the caller passes the time)."""

from __future__ import annotations

from arkai.core.hashing import evidence_id, text_digest
from arkai.core.resolve import Match
from arkai.model.evidence import EvidenceLine


def evidence_from_match(
    *,
    content_id: str,
    claim: str,
    quote: str,
    confidence: float,
    extractor: str,
    ts: str,
    match: Match,
) -> EvidenceLine:
    """An evidence line for an already resolved quote, with its two-tier ID."""
    quote_sha = text_digest(quote)
    span = match.span
    eid = evidence_id(content_id, extractor, quote_sha, (span.start, span.end) if span else None)
    return EvidenceLine(
        id=eid,
        content_id=content_id,
        claim=claim,
        quote=quote,
        quote_sha256=quote_sha,
        resolution=match.resolution,
        span=span,
        confidence=round(float(confidence), 4),
        extractor=extractor,
        ts=ts,
    )
