"""Condensed chunks and shards (seed 001, "Library System"): the records the ``condense`` stage
writes and ``arkai ask`` reads.

A **condensed chunk** is one chunk of one item's ``transcript.md`` (chat messages or paragraphs,
never split mid-message) reduced to a summary plus decisions, discoveries and procedures. Every
decision, discovery and procedure carries a verbatim ``quote`` from the chunk and, once resolved,
the span of that quote in the item's transcript (V1 rules), so a condensed history is as
checkable as a claim.

A **shard** is a file of condensed chunks in chronological order, at most
``condense.shard_tokens`` tokens; the **manifest** lists the shards. Older shards never change
when new items arrive; only the newest one grows (an edited or removed item's chunks are taken
out of the shards holding them).

Identifiers: a chunk is ``shard-NNN:chunk-M`` (M numbers chunks through the whole library, in
shard order, from 1; an edited or removed item's chunks leave their numbers unused, so a chunk
keeps its ID while it exists and no ID is given to another chunk) and a message inside it
``shard-NNN:chunk-M:msg-K`` (K = the message's 1-based number in the item's transcript).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from arkai.model.evidence import Resolution
from arkai.model.record import AsDict

SHARD_FORMAT = 1


@dataclass(frozen=True, slots=True)
class Message:
    """One message (chat) or paragraph (other transcripts) inside a chunk."""

    msg: int
    """1-based number of the message in the item's transcript."""
    start: int
    """UTF-8 byte offset of the message in ``transcript.md`` (inclusive)."""
    end: int
    """UTF-8 byte offset one past the message's last byte."""
    line: int
    """1-based line of ``start``."""
    role: str | None = None
    """``user`` / ``assistant`` / … for chat messages; the speaker for labelled transcripts."""
    timestamp: str | None = None
    """``HH:MM:SS`` (media) or an ISO date-time (chat) where the transcript has one."""

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"msg": self.msg, "start": self.start, "end": self.end}
        d["line"] = self.line
        if self.role is not None:
            d["role"] = self.role
        if self.timestamp is not None:
            d["timestamp"] = self.timestamp
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Message:
        return cls(
            msg=int(d["msg"]),
            start=int(d["start"]),
            end=int(d["end"]),
            line=int(d["line"]),
            role=d.get("role"),
            timestamp=d.get("timestamp"),
        )


@dataclass(frozen=True, slots=True)
class Finding:
    """A decision, discovery or procedure of a condensed chunk, with its verbatim quote."""

    kind: str
    """``decision`` | ``discovery`` | ``procedure``."""
    text: str
    """The decision / the finding / the procedure's name."""
    quote: str
    """Verbatim text of the chunk that supports it."""
    detail: str | None = None
    """The rationale (decision) or the implication (discovery)."""
    steps: tuple[str, ...] = ()
    """The steps (procedure)."""
    span: tuple[int, int] | None = None
    """``quote``'s UTF-8 byte range in ``transcript.md`` when it resolved."""
    slice_sha256: str | None = None
    """``sha256:<hex>`` of the resolved slice."""
    status: str = "unresolved"
    """Resolution status (``arkai.model.status``); only verified statuses count as receipts."""
    quote_sha256: str | None = None
    """``sha256:<hex>`` of the quote's UTF-8 (validation recomputes it)."""
    resolution: Resolution | None = None
    """How the quote matched (count, rank, reason — V1), so validation can recompute it."""
    line: int | None = None
    """1-based line of the span's start in ``transcript.md``."""
    video_timestamp: str | None = None
    """``HH:MM:SS`` of the line the span starts in (or the last before it), timed transcripts."""

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"kind": self.kind, "text": self.text, "quote": self.quote}
        if self.detail is not None:
            d["detail"] = self.detail
        if self.steps:
            d["steps"] = list(self.steps)
        d["status"] = self.status
        if self.quote_sha256 is not None:
            d["quote_sha256"] = self.quote_sha256
        if self.resolution is not None:
            d["resolution"] = self.resolution.to_dict()
        if self.span is not None:
            d["utf8_byte_offset"] = list(self.span)
            d["slice_sha256"] = self.slice_sha256
        if self.line is not None:
            d["line"] = self.line
        if self.video_timestamp is not None:
            d["video_timestamp"] = self.video_timestamp
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Finding:
        span = d.get("utf8_byte_offset")
        return cls(
            kind=str(d["kind"]),
            text=str(d["text"]),
            quote=str(d["quote"]),
            detail=d.get("detail"),
            steps=tuple(str(s) for s in d.get("steps", ())),
            span=(int(span[0]), int(span[1])) if span else None,
            slice_sha256=d.get("slice_sha256"),
            status=str(d.get("status", "unresolved")),
            quote_sha256=d.get("quote_sha256"),
            resolution=(
                Resolution.from_dict(str(d.get("status", "unresolved")), d["resolution"])
                if isinstance(d.get("resolution"), dict)
                else None
            ),
            line=None if d.get("line") is None else int(d["line"]),
            video_timestamp=d.get("video_timestamp"),
        )


@dataclass(frozen=True, slots=True)
class CondensedChunk:
    """One condensed chunk of one item (a line of a shard file)."""

    item: str
    """Content ID of the item."""
    chunk: int
    """1-based number of this chunk within its item."""
    transcript: str
    """Repo-relative path of the item's ``transcript.md``."""
    start: int
    """UTF-8 byte offset where the chunk starts in the transcript."""
    end: int
    """UTF-8 byte offset one past the chunk's end."""
    tokens: int
    """Tokens of the chunk's original text (``arkai.core.tokens.count_tokens``)."""
    condensed_tokens: int
    """Tokens of the condensed record (summary + findings)."""
    summary: str
    title: str = ""
    date: str | None = None
    """The item's date (``YYYY-MM-DD`` or ISO date-time) — shards are chronological by it."""
    messages: tuple[Message, ...] = ()
    findings: tuple[Finding, ...] = ()
    oversized: bool = False
    """One message longer than the chunk target: kept whole and reported."""
    shard: str | None = None
    """``shard-NNN`` once placed in a shard."""
    number: int | None = None
    """Library-wide chunk number once placed (the ``M`` of ``shard-NNN:chunk-M``)."""

    @property
    def reduction(self) -> int:
        """Percent of the chunk's tokens the condensed record saves (seed: ``reduction``)."""
        if self.tokens <= 0:
            return 0
        return round(100 * (1 - self.condensed_tokens / self.tokens))

    @property
    def chunk_id(self) -> str:
        return f"{self.shard}:chunk-{self.number}"

    def message_id(self, msg: int) -> str:
        return f"{self.chunk_id}:msg-{msg}"

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {}
        if self.shard is not None:
            d["shard"] = self.shard
            d["number"] = self.number
        d |= {
            "item": self.item,
            "chunk": self.chunk,
            "title": self.title,
            "date": self.date,
            "transcript": self.transcript,
            "utf8_byte_offset": [self.start, self.end],
            "tokens": self.tokens,
            "condensed_tokens": self.condensed_tokens,
            "reduction": self.reduction,
            "summary": self.summary,
            "messages": [m.to_dict() for m in self.messages],
            "findings": [f.to_dict() for f in self.findings],
        }
        if self.oversized:
            d["oversized"] = True
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CondensedChunk:
        start, end = d["utf8_byte_offset"]
        return cls(
            item=str(d["item"]),
            chunk=int(d["chunk"]),
            transcript=str(d["transcript"]),
            start=int(start),
            end=int(end),
            tokens=int(d["tokens"]),
            condensed_tokens=int(d["condensed_tokens"]),
            summary=str(d["summary"]),
            title=str(d.get("title", "")),
            date=d.get("date"),
            messages=tuple(Message.from_dict(m) for m in d.get("messages", ())),
            findings=tuple(Finding.from_dict(f) for f in d.get("findings", ())),
            oversized=bool(d.get("oversized", False)),
            shard=d.get("shard"),
            number=None if d.get("number") is None else int(d["number"]),
        )


@dataclass(frozen=True, slots=True)
class ShardInfo(AsDict):
    """One shard in the manifest."""

    id: str
    """``shard-NNN``."""
    file: str
    """File name inside ``index/shards/``."""
    first_date: str | None
    last_date: str | None
    items: tuple[str, ...]
    chunks: int
    tokens: int
    digest: str
    """``sha256:<hex>`` of the shard file's bytes."""

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ShardInfo:
        return cls(
            id=str(d["id"]),
            file=str(d["file"]),
            first_date=d.get("first_date"),
            last_date=d.get("last_date"),
            items=tuple(str(i) for i in d.get("items", ())),
            chunks=int(d["chunks"]),
            tokens=int(d["tokens"]),
            digest=str(d["digest"]),
        )


@dataclass(frozen=True, slots=True)
class ShardManifest:
    """``index/shards/manifest.json``."""

    shard_tokens: int
    token_counter: str
    shards: tuple[ShardInfo, ...] = field(default_factory=tuple)
    format: int = SHARD_FORMAT
    next_number: int | None = None
    """The number the next chunk placed gets: one past every number given since the shards
    were last rebuilt whole (a chunk taken out leaves its number unused, never given again).
    None in a manifest from before it was kept: the chunks were numbered 1, 2, … then."""

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "format": self.format,
            "shard_tokens": self.shard_tokens,
            "token_counter": self.token_counter,
        }
        if self.next_number is not None:
            d["next_number"] = self.next_number
        d["shards"] = [s.to_dict() for s in self.shards]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ShardManifest:
        return cls(
            format=int(d.get("format", SHARD_FORMAT)),
            shard_tokens=int(d["shard_tokens"]),
            token_counter=str(d["token_counter"]),
            shards=tuple(ShardInfo.from_dict(s) for s in d.get("shards", ())),
            next_number=None if d.get("next_number") is None else int(d["next_number"]),
        )
