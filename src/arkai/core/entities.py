"""Turning extractor entity output into resolved, canonical ``entities.json`` documents."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from arkai.core.document import Document
from arkai.core.hashing import text_digest
from arkai.core.resolve import resolve_quote
from arkai.model.entity import Entity, Mention
from arkai.model.status import MODE_EXACT

SCHEMA_VERSION = 1


def resolve_entities(
    doc: Document, raw: Iterable[Mapping[str, Any]], *, mode: str = MODE_EXACT
) -> list[Entity]:
    """Resolve every mention quote of every entity; mentions are kept even when unresolved.

    Entities come back sorted by (type, name) and mentions by span position, so the file is
    deterministic whatever order the extractor used.
    """
    out: list[Entity] = []
    for ent in raw:
        mentions: list[Mention] = []
        for m in ent.get("mentions", []):
            quote = str(m["quote"])
            match = resolve_quote(doc, quote, mode=mode)
            mentions.append(Mention(quote, text_digest(quote), match.resolution, match.span))
        mentions.sort(key=lambda m: (m.span is None, m.span.start if m.span else 0, m.quote))
        out.append(
            Entity(
                name=str(ent["name"]),
                type=str(ent.get("type", "concept")),
                confidence=round(float(ent.get("confidence", 0.0)), 4),
                mentions=tuple(mentions),
            )
        )
    out.sort(key=lambda e: (e.type, e.name.lower(), e.name))
    return out


def entities_document(
    entities: Iterable[Entity], *, extracted_by: str, extracted_at: str
) -> dict[str, Any]:
    """The ``entities.json`` object of the seed schema (v1)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "extracted_by": extracted_by,
        "extracted_at": extracted_at,
        "entities": [e.to_dict() for e in entities],
    }
