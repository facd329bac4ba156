"""entities.json: mentions resolved like evidence, deterministic order, round trip."""

from __future__ import annotations

import json

from arkai.core import canonjson
from arkai.core.document import Document
from arkai.core.entities import entities_document, resolve_entities

DOC = Document(b"[00:00:01] Naval said that wealth is leverage.\n[00:00:09] Naval again.\n")


def test_mentions_resolve_and_sort() -> None:
    raw = [
        {"name": "wealth", "type": "concept", "confidence": 0.6, "mentions": [{"quote": "wealth"}]},
        {
            "name": "Naval Ravikant",
            "type": "person",
            "confidence": 0.95,
            "mentions": [
                {"quote": "Naval again"},
                {"quote": "Naval said that"},
                {"quote": "Nival"},
            ],
        },
    ]
    ents = resolve_entities(DOC, raw)
    assert [e.type for e in ents] == ["concept", "person"]
    naval = ents[1]
    assert [m.quote for m in naval.mentions] == ["Naval said that", "Naval again", "Nival"]
    first, second, missing = naval.mentions
    assert first.span is not None and (first.span.start, first.span.end) == (11, 26)
    assert first.span.video_timestamp == "00:00:01"
    assert second.span is not None and second.span.video_timestamp == "00:00:09"
    assert missing.span is None and missing.resolution.status == "unresolved"


def test_document_round_trip() -> None:
    ents = resolve_entities(
        DOC, [{"name": "Naval", "type": "person", "mentions": [{"quote": "Naval"}]}]
    )
    doc = entities_document(
        ents, extracted_by="extract_entities", extracted_at="2026-01-01T00:00:00Z"
    )
    text = canonjson.dumps(doc)
    back = json.loads(text)
    assert back["schema_version"] == 1
    mention = back["entities"][0]["mentions"][0]
    assert mention["status"] == "ambiguous"
    assert mention["resolution"] == {
        "match_count": 2,
        "match_rank": 1,
        "method": "exact",
        "reason": "multiple_matches",
    }
    assert back["entities"] == [e.to_dict() for e in ents]
