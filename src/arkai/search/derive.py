"""What the index stage derives from one item alone — the part of ``index/`` that does not
depend on the rest of the library, so it is cached per item (docs/index-format.md,
"Incremental builds"). Pure: the item's parsed files in, plain JSON-able records out.

- :class:`ItemRecord` (``main``): the item's chunks, claim and entity counts for the catalog,
  and its graph contributions (throttled quotes, entity mentions);
- ``terms``: the item's :class:`arkai.search.topics.ItemTerms` (phrase counts, stemmed chunk
  and condensed-chunk texts, entity names). A chunk's stemmed text is its BM25 tokens joined
  by spaces (both are :func:`arkai.search.text.tokenize`, whose tokens have no whitespace), so
  the tokens are not stored twice.

The global structures (IDF, BM25 weights, topic ranks, RELATED_TO and CITES edges) are then
computed from these records, never from the texts again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from arkai.adapters.review import is_rejected
from arkai.model.evidence import EvidenceLine
from arkai.search.chunks import Chunk, chunk_transcript, claim_chunks
from arkai.search.graph import GraphSettings, entity_mentions, throttled_quotes
from arkai.search.topics import ItemTerms, item_terms

#: Bump when what is derived (or how) changes: every cached record is then rebuilt.
DERIVE_VERSION = 2


@dataclass(frozen=True, slots=True)
class ItemRecord:
    """The ``main`` record of one item."""

    chunks: list[Chunk]
    claims: int
    """Non-rejected claims (the catalog's ``claims``)."""
    entities: int
    quotes: list[tuple[str, str]]
    mentions: list[tuple[str, str, int]]

    def to_dict(self) -> dict[str, Any]:
        return {
            "chunks": [c.to_dict() for c in self.chunks],
            "claims": self.claims,
            "entities": self.entities,
            "quotes": [list(q) for q in self.quotes],
            "mentions": [list(m) for m in self.mentions],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ItemRecord:
        return cls(
            chunks=[Chunk.from_dict(c) for c in d["chunks"]],
            claims=int(d["claims"]),
            entities=int(d["entities"]),
            quotes=[(str(a), str(b)) for a, b in d["quotes"]],
            mentions=[(str(a), str(b), int(c)) for a, b, c in d["mentions"]],
        )


def derive_item(
    content_id: str,
    text: str,
    evidence: Sequence[EvidenceLine],
    entities: Sequence[Mapping[str, Any]],
    condensed: Iterable[tuple[int, str]],
    *,
    target_words: int,
    max_words: int,
    graph: GraphSettings,
) -> tuple[ItemRecord, dict[str, Any]]:
    """The item's ``main`` record and its ``terms`` record (:func:`terms_to_dict`)."""
    chunks = chunk_transcript(
        content_id, text, target_words=target_words, max_words=max_words
    ) + claim_chunks(content_id, text, evidence)
    chunks.sort(key=lambda c: c.sort_key)
    record = ItemRecord(
        chunks=chunks,
        claims=sum(1 for ln in evidence if not is_rejected(ln)),
        entities=len(entities),
        quotes=throttled_quotes(evidence, graph),
        mentions=entity_mentions(entities),
    )
    terms = item_terms(
        content_id,
        text,
        (c.text for c in chunks),
        [str(e.get("name", "")) for e in entities],
        condensed,
    )
    return record, terms_to_dict(terms)


def terms_to_dict(terms: ItemTerms) -> dict[str, Any]:
    return {
        "counts": dict(terms.counts),
        "chunk_stems": list(terms.chunk_stems),
        "entities": list(terms.entities),
        "condensed": [[n, k] for n, k in terms.condensed],
    }


def terms_from_dict(content_id: str, d: Mapping[str, Any]) -> tuple[ItemTerms, list[list[str]]]:
    """The :class:`ItemTerms` and the chunks' BM25 tokens (``tokenize(chunk.text)``) of a
    ``terms`` record."""
    terms = ItemTerms(
        content_id=content_id,
        counts=d["counts"],
        chunk_stems=d["chunk_stems"],
        entities=d["entities"],
        condensed=[(int(n), str(k)) for n, k in d["condensed"]],
    )
    return terms, [stems.split() for stems in terms.chunk_stems]
