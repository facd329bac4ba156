"""Entities and their mentions (seed 000, "Entities Storage (entities.json)")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from arkai.model.evidence import Resolution, Span

ENTITY_TYPES = ("person", "org", "concept", "product", "location", "event")


@dataclass(frozen=True, slots=True)
class Mention:
    """One place an entity is mentioned: a verbatim quote and its resolution."""

    quote: str
    """The quote as the extractor gave it."""
    quote_sha256: str
    """``sha256:<hex>`` of the quote's UTF-8 bytes."""
    resolution: Resolution
    """How the quote was matched (same rules as evidence)."""
    span: Span | None
    """Present exactly when the status is resolved or ambiguous."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "quote": self.quote,
            "quote_sha256": self.quote_sha256,
            "status": self.resolution.status,
            "resolution": self.resolution.to_dict(),
            "span": self.span.to_dict() if self.span else None,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Mention:
        status = str(d.get("status", "unresolved"))
        return cls(
            quote=str(d["quote"]),
            quote_sha256=str(d["quote_sha256"]),
            resolution=Resolution.from_dict(status, d.get("resolution") or {}),
            span=Span.from_dict(d["span"]) if d.get("span") else None,
        )


@dataclass(frozen=True, slots=True)
class Entity:
    """A named thing the item talks about."""

    name: str
    """Canonical display name (the fullest form seen)."""
    type: str
    """One of :data:`ENTITY_TYPES` (the enum is extensible)."""
    confidence: float
    """0–1."""
    mentions: tuple[Mention, ...]
    """Every mention, in document order of their spans (unresolved last)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "confidence": self.confidence,
            "mentions": [m.to_dict() for m in self.mentions],
        }
