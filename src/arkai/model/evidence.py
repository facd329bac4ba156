"""Spans, resolutions and evidence lines (seed 000, "Shared Span Object", "Evidence line")."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from arkai.model.record import AsDict
from arkai.model.status import STATUSES, UNRESOLVED, is_verified


@dataclass(frozen=True, slots=True)
class Span:
    """Where a quote sits in an artifact's raw bytes."""

    artifact: str
    """Artifact file name inside the item folder, normally ``transcript.md``."""
    start: int
    """UTF-8 byte offset of the first byte (inclusive)."""
    end: int
    """UTF-8 byte offset one past the last byte (exclusive). ``end >= start``."""
    slice_sha256: str
    """``sha256:<hex>`` of ``artifact_bytes[start:end]`` — re-checked by validation."""
    anchor_text: str | None = None
    """About 80 characters of text around the span, used to re-anchor after edits."""
    video_timestamp: str | None = None
    """``HH:MM:SS`` of the transcript line the span starts in (or the last one before it)."""
    line: int | None = None
    """1-based line number of ``start``."""
    column: int | None = None
    """1-based column of ``start``, counted in Unicode code points from the line start."""
    page: int | None = None
    """The PDF page ``start`` lies on (``[p. N]`` markers of the transcript); absent, not
    null, in the file for every other transcript."""

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "artifact": self.artifact,
            "utf8_byte_offset": [self.start, self.end],
            "slice_sha256": self.slice_sha256,
        }
        if self.anchor_text is not None:
            d["anchor_text"] = self.anchor_text
        if self.video_timestamp is not None:
            d["video_timestamp"] = self.video_timestamp
        if self.line is not None:
            d["line"] = self.line
        if self.column is not None:
            d["column"] = self.column
        if self.page is not None:
            d["page"] = self.page
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Span:
        start, end = d["utf8_byte_offset"]
        return cls(
            artifact=str(d.get("artifact", "transcript.md")),
            start=int(start),
            end=int(end),
            slice_sha256=str(d["slice_sha256"]),
            anchor_text=d.get("anchor_text"),
            video_timestamp=d.get("video_timestamp"),
            line=d.get("line"),
            column=d.get("column"),
            page=_page(d.get("page")),
        )


def _page(value: Any) -> int | None:
    """A stored page: a positive integer, or absent."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"page must be a positive integer, got {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class Resolution:
    """How a quote was (or was not) matched."""

    status: str
    """``resolved`` | ``ambiguous`` | ``unresolved`` (V1), or one of the labelled unverified
    statuses ``matched_case_insensitive`` | ``matched_fuzzy`` | ``reanchored_fuzzy``."""
    method: str
    """``exact`` | ``none`` | ``normalized_hint`` (V1) or a labelled extension method."""
    match_count: int
    """Number of matches found (0 when unresolved)."""
    match_rank: int | None
    """1-indexed rank of the chosen match among ``match_count``; ``None`` when unresolved."""
    reason: str | None
    """``multiple_matches`` | ``no_match`` | ``normalized_match_only`` | ``None``."""
    score: float | None = None
    """Similarity 0–100 (2 decimals) for fuzzy and re-anchored matches; absent for exact ones."""

    def __post_init__(self) -> None:
        # Round on construction, as in the file, so a line read back equals the line written.
        if self.score is not None:
            object.__setattr__(self, "score", round(float(self.score), 2))

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "method": self.method,
            "match_count": self.match_count,
            "match_rank": self.match_rank,
            "reason": self.reason,
        }
        if self.score is not None:
            d["score"] = round(self.score, 2)
        return d

    @classmethod
    def from_dict(cls, status: str, d: dict[str, Any]) -> Resolution:
        return cls(
            status=status,
            method=str(d.get("method", "none")),
            match_count=int(d.get("match_count", 0)),
            match_rank=d.get("match_rank"),
            reason=d.get("reason"),
            score=d.get("score"),
        )


@dataclass(frozen=True, slots=True)
class EvidenceLine:
    """One line of ``evidence.jsonl``: a claim, its verbatim quote, and the receipt."""

    id: str
    """16 hex chars, the seed's two-tier ID (with span offsets when a span exists)."""
    content_id: str
    """The item's 16-hex content ID."""
    claim: str
    """The assertion, in the extractor's words."""
    quote: str
    """What the extractor says the source says, verbatim."""
    quote_sha256: str
    """``sha256:<hex>`` of the quote's UTF-8 bytes."""
    resolution: Resolution
    """Status and method of the quote → span match."""
    span: Span | None
    """The span; present exactly when status is resolved or ambiguous."""
    confidence: float
    """0–1, as reported by the extractor."""
    extractor: str
    """Pattern name that produced the line, e.g. ``extract_claims``."""
    ts: str
    """ISO-8601 UTC time the line was produced."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Fields beyond the V1 schema and the typed ones below, kept on round trips."""
    review: Review | None = None
    """A person's decision from ``review.yaml`` (``review`` in the file), if any."""
    verdict: Verdict | None = None
    """The model's verification verdict (``verdict`` in the file), if any."""

    @property
    def status(self) -> str:
        return self.resolution.status

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = dict(self.extra)
        if self.review is not None:
            d["review"] = self.review.to_dict()
        if self.verdict is not None:
            d["verdict"] = self.verdict.to_dict()
        d.update(
            {
                "id": self.id,
                "content_id": self.content_id,
                "claim": self.claim,
                "quote": self.quote,
                "quote_sha256": self.quote_sha256,
                "status": self.resolution.status,
                "resolution": self.resolution.to_dict(),
                "span": self.span.to_dict() if self.span else None,
                "confidence": self.confidence,
                "extractor": self.extractor,
                "ts": self.ts,
            }
        )
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> EvidenceLine:
        known = {
            "id", "content_id", "claim", "quote", "quote_sha256", "status",
            "resolution", "span", "confidence", "extractor", "ts", "review", "verdict",
        }  # fmt: skip
        status = str(d["status"])
        if status not in STATUSES:
            raise ValueError(f"unknown status {status!r}")
        span = Span.from_dict(d["span"]) if d.get("span") else None
        if status != UNRESOLVED and span is None:
            raise ValueError(f"status {status} requires a span")
        return cls(
            id=str(d["id"]),
            content_id=str(d["content_id"]),
            claim=str(d["claim"]),
            quote=str(d["quote"]),
            quote_sha256=str(d["quote_sha256"]),
            resolution=Resolution.from_dict(status, d.get("resolution") or {}),
            span=span,
            confidence=float(d.get("confidence", 0.0)),
            extractor=str(d.get("extractor", "")),
            ts=str(d.get("ts", "")),
            extra={k: v for k, v in d.items() if k not in known},
            review=Review.from_dict(d["review"]) if isinstance(d.get("review"), dict) else None,
            verdict=Verdict.from_dict(d["verdict"]) if isinstance(d.get("verdict"), dict) else None,
        )

    @property
    def verified(self) -> bool:
        """An exact byte match (``resolved`` or ``ambiguous``): the only valid receipts."""
        return is_verified(self.resolution.status)

    @property
    def rejected(self) -> bool:
        return self.review is not None and self.review.status == "rejected"


@dataclass(frozen=True, slots=True)
class Review:
    """A person's decision on a claim (one entry of ``review.yaml``)."""

    status: str
    """``accepted`` | ``rejected``."""
    note: str | None = None
    by: str | None = None
    at: str | None = None
    key: str | None = None
    """The ``review.yaml`` key that matched (a stable ID, or an older span-tier ID / prefix)."""
    other: tuple[tuple[str, str], ...] = ()
    """Further keys of the entry, kept as written."""

    def to_dict(self) -> dict[str, str]:
        d = {"status": self.status}
        for name in ("note", "by", "at", "key"):
            value = getattr(self, name)
            if value is not None:
                d[name] = value
        d.update(self.other)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Review:
        known = ("status", "note", "by", "at", "key")
        return cls(
            status=str(d["status"]),
            note=None if d.get("note") is None else str(d["note"]),
            by=None if d.get("by") is None else str(d["by"]),
            at=None if d.get("at") is None else str(d["at"]),
            key=None if d.get("key") is None else str(d["key"]),
            other=tuple(sorted((str(k), str(v)) for k, v in d.items() if k not in known)),
        )


@dataclass(frozen=True, slots=True)
class Verdict(AsDict):
    """A model's check of a claim against its quote (``validate_claims``)."""

    verdict: str | None
    """``grounded`` | ``partially_grounded`` | ``unsupported`` (``None`` when the model gave
    none)."""
    note: str = ""

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Verdict:
        v = d.get("verdict")
        return cls(verdict=None if v is None else str(v), note=str(d.get("note") or ""))
