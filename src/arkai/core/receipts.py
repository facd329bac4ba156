"""Re-checking a stored receipt against the bytes it points at (pure; the caller reads files).

A *receipt* is any record that pins a quote to a span: an evidence line, an entity mention, a
quote in ``wisdom.json`` (and any span-bearing record a later output adds). Its stored fields are
all derived from the quote and the artifact bytes, so every one of them can be recomputed, and a
record that was edited by hand — or produced by a bug — shows up as a mismatch:

- ``quote_sha256`` is the digest of the quote;
- the status agrees with the span (a span exactly when the status is not ``unresolved``) and is
  a known one;
- the span lies inside the artifact and ``slice_sha256`` is the digest of its bytes;
- ``resolved`` / ``ambiguous``: the slice *is* the quote, byte for byte; ``match_count`` is the
  number of (overlapping) occurrences of the quote, ``match_rank`` the slice's 1-indexed place
  among them, and the status is ``resolved`` exactly when there is one occurrence;
- ``matched_case_insensitive`` / ``matched_fuzzy``: resolving the quote again in that mode gives
  the same span, counts and score;
- ``reanchored_fuzzy``: the quote does not occur verbatim (else it would be ``resolved``);
- ``line``, ``column``, ``page`` (a PDF's ``[p. N]`` markers) and ``video_timestamp`` equal
  what the artifact gives for the start;
- an evidence ID equals the seed's two-tier ID of its content ID, extractor, quote digest and span.

``anchor_text`` is not compared: it is a hint for re-anchoring, and an edit next to a span may
change it without moving the span.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from arkai.core.document import Document
from arkai.core.hashing import digest, evidence_id, text_digest
from arkai.core.resolve import all_occurrences, resolve_quote
from arkai.model.evidence import EvidenceLine, Resolution, Span
from arkai.model.status import (
    AMBIGUOUS,
    MATCHED_CASE_INSENSITIVE,
    MATCHED_FUZZY,
    MODE_FUZZY,
    MODE_INSENSITIVE,
    REANCHORED_FUZZY,
    REASON_MULTIPLE,
    RESOLVED,
    STATUSES,
    UNRESOLVED,
    VERIFIED,
)


class Finding(str):
    """One way a receipt disagrees with the artifact: the message, plus ``drift`` — True when
    an edit of the artifact explains it (an added occurrence changes ``match_count``, a new
    line above changes ``line``), False when only a changed record can (a quote that is not
    the bytes at its span, a wrong digest or ID)."""

    drift: bool = False


def drift(message: str) -> Finding:
    found = Finding(message)
    found.drift = True
    return found


@dataclass(frozen=True, slots=True)
class Receipt:
    """The checkable fields of one span-bearing record."""

    quote: str
    status: str
    resolution: Resolution
    span: Span | None
    quote_sha256: str | None = None
    """``None`` when the record does not store one (older ``wisdom.json`` files)."""
    counted: bool = True
    """False for records written without a ``resolution`` (``wisdom.json`` before stage 3):
    they have no match count, rank or reason to recompute; everything else is checked."""
    evidence_id: str | None = None
    """The stored ID, for records whose ID derives from the span (evidence lines)."""
    content_id: str | None = None
    extractor: str | None = None


def receipt_from_dict(d: dict[str, Any]) -> Receipt:
    """A receipt from a stored record (evidence line, mention, wisdom quote).

    Raises ``ValueError`` / ``KeyError`` / ``TypeError`` on a record that is not one.
    """
    status = str(d.get("status", UNRESOLVED))
    raw_span = d.get("span")
    return Receipt(
        quote=str(d["quote"]),
        status=status,
        resolution=Resolution.from_dict(status, d.get("resolution") or {}),
        span=Span.from_dict(raw_span) if raw_span else None,
        quote_sha256=str(d["quote_sha256"]) if "quote_sha256" in d else None,
        counted="resolution" in d,
    )


def check_receipt(doc: Document, r: Receipt) -> list[Finding]:
    """Every way ``r`` disagrees with ``doc`` (empty when the receipt holds)."""
    problems: list[Finding] = []
    needle = r.quote.encode("utf-8")
    if r.quote_sha256 is not None and r.quote_sha256 != text_digest(r.quote):
        problems.append(Finding("quote_sha256 is not the digest of the quote"))
    if r.status not in STATUSES:
        problems.append(Finding(f"unknown status {r.status!r}"))
        return problems
    span, res = r.span, r.resolution
    if r.evidence_id is not None and r.content_id is not None and r.extractor is not None:
        offsets = (span.start, span.end) if span is not None else None
        expected = evidence_id(r.content_id, r.extractor, text_digest(r.quote), offsets)
        if expected != r.evidence_id:
            problems.append(Finding(f"ID does not recompute from its inputs (expected {expected})"))
    if r.status == UNRESOLVED:
        if span is not None:
            problems.append(Finding("an unresolved quote has a span"))
        return problems
    if span is None:
        problems.append(Finding(f"status {r.status} without a span"))
        return problems
    data = doc.data
    if not 0 <= span.start <= span.end <= len(data):
        problems.append(drift(f"span [{span.start}, {span.end}) lies outside the artifact"))
        return problems
    piece = data[span.start : span.end]
    if digest(piece) != span.slice_sha256:
        problems.append(Finding("slice_sha256 does not match the bytes at the span (stale span)"))
    line, col = doc.line_col(span.start)
    if span.line is not None and span.line != line:
        problems.append(drift(f"line {span.line} should be {line}"))
    if span.column is not None and span.column != col:
        problems.append(drift(f"column {span.column} should be {col}"))
    page = doc.page_at(span.start)
    if span.page is not None and span.page != page:
        problems.append(drift(f"page {span.page} should be {page}"))
    stamp = doc.timestamp_at(span.start)
    if span.video_timestamp != stamp and (span.video_timestamp is not None or stamp is not None):
        problems.append(drift(f"video_timestamp {span.video_timestamp} should be {stamp}"))
    if r.status in VERIFIED:
        problems += _check_exact(data, needle, piece, span, res, r.status, r.counted)
    elif r.status in (MATCHED_CASE_INSENSITIVE, MATCHED_FUZZY):
        problems += _check_mode(doc, r)
    elif r.status == REANCHORED_FUZZY and needle.strip() and data.find(needle) >= 0:
        problems.append(drift("marked reanchored_fuzzy but the quote occurs verbatim"))
    return problems


def _check_exact(
    data: bytes,
    needle: bytes,
    piece: bytes,
    span: Span,
    res: Resolution,
    status: str,
    counted: bool,
) -> list[Finding]:
    problems: list[Finding] = []
    if piece != needle:
        problems.append(Finding(f"the bytes at the span are not the quote (status {status})"))
        return problems
    hits = all_occurrences(data, needle)
    count = len(hits)
    if not counted:
        want = RESOLVED if count == 1 else AMBIGUOUS
        return [] if status == want else [drift(f"status {status} should be {want}")]
    rank = hits.index(span.start) + 1 if span.start in hits else None
    if res.match_count != count:
        problems.append(drift(f"match_count {res.match_count} should be {count}"))
    if res.match_rank != rank:
        problems.append(drift(f"match_rank {res.match_rank} should be {rank}"))
    want = RESOLVED if count == 1 else AMBIGUOUS
    if status != want:
        problems.append(drift(f"status {status} should be {want} ({count} occurrences)"))
    reason = None if count == 1 else REASON_MULTIPLE
    if res.reason != reason:
        problems.append(drift(f"reason {res.reason} should be {reason}"))
    return problems


def _check_mode(doc: Document, r: Receipt) -> list[Finding]:
    mode = MODE_INSENSITIVE if r.status == MATCHED_CASE_INSENSITIVE else MODE_FUZZY
    # Threshold 0: recompute where the match is, whatever threshold produced it.
    again = resolve_quote(doc, r.quote, mode=mode, fuzzy_threshold=0.0)
    span = r.span
    assert span is not None
    if again.resolution.status != r.status:
        return [drift(f"status {r.status} should be {again.resolution.status}")]
    problems: list[Finding] = []
    got = again.span
    if got is None or (got.start, got.end) != (span.start, span.end):
        where = f"[{got.start}, {got.end})" if got is not None else "none"
        problems.append(drift(f"span [{span.start}, {span.end}) should be {where}"))
    res, want = r.resolution, again.resolution
    if (res.match_count, res.match_rank) != (want.match_count, want.match_rank):
        problems.append(
            drift(
                f"match {res.match_rank}/{res.match_count} should be {want.match_rank}/"
                f"{want.match_count}"
            )
        )
    if res.score != want.score:
        problems.append(drift(f"score {res.score} should be {want.score}"))
    return problems


def iter_quote_records(value: Any, path: str = "$") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every record with a ``quote`` and a ``status`` inside a JSON value (e.g. ``wisdom.json``),
    as ``(path, record)``; the records are the value's own dicts, so a caller may update them."""
    if isinstance(value, dict):
        if isinstance(value.get("quote"), str) and "status" in value:
            yield path, value
        for key in sorted(value):
            if key != "span":
                yield from iter_quote_records(value[key], f"{path}.{key}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from iter_quote_records(v, f"{path}[{i}]")


def span_is_valid(data: bytes, span: Span) -> bool:
    """True when the bytes at the span still hash to ``slice_sha256``."""
    if span.start < 0 or span.end < span.start or span.end > len(data):
        return False
    return digest(data[span.start : span.end]) == span.slice_sha256


def evidence_receipt(line: EvidenceLine, content_id: str) -> Receipt:
    """The receipt an evidence line asserts, checked against the item ``content_id`` (the
    item's own ID: a line copied from another item does not recompute)."""
    return Receipt(
        quote=line.quote,
        status=line.status,
        resolution=line.resolution,
        span=line.span,
        quote_sha256=line.quote_sha256,
        evidence_id=line.id,
        content_id=content_id,
        extractor=line.extractor,
    )
