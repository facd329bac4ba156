"""What the index stage derives from one item alone — the part of ``index/`` that does not
depend on the rest of the library, so it is cached per item (docs/index-format.md,
"Incremental builds"). Pure: the item's parsed files in, plain JSON-able records out.

- :class:`ItemRecord` (``main``): the item's chunk, claim and entity counts for the catalog,
  and its graph contributions (throttled quotes, entity mentions) — small, so the stage reads
  every item's without reading a chunk text;
- the item's chunks (the ``lines`` part: their chunk lines, byte for byte, which the
  stage concatenates without parsing);
- ``terms``: the item's :class:`arkai.search.topics.ItemTerms` (phrase counts, stemmed chunk
  and condensed-chunk texts, entity names). A chunk's stemmed text is its BM25 tokens joined
  by spaces (both are :func:`arkai.search.text.tokenize`, whose tokens have no whitespace), so
  the tokens are not stored twice;
- ``tokens``: those tokens as a BM25 segment (:func:`arkai.search.termcounts.encode_segment`), which
  the stage merges into ``index/lexical`` without splitting a text.

The global structures (IDF, BM25 weights, topic ranks, RELATED_TO and CITES edges) are then
computed from these records, never from the texts again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from sys import intern
from typing import Any

from arkai.adapters.review import is_rejected
from arkai.model.evidence import EvidenceLine
from arkai.search.chunks import CLAIM_KIND, Chunk, chunk_transcript, claim_chunks
from arkai.search.graph import GraphSettings, entity_mentions, quotes_digest, throttled_quotes
from arkai.search.topics import ItemTerms, item_terms

#: Bump when what is derived (or how) changes: every cached record is then rebuilt.
DERIVE_VERSION = 3


_MENTIONS: dict[tuple[str, str, int], tuple[str, str, int]] = {}


def _shared_mention(raw: Sequence[Any]) -> tuple[str, str, int]:
    """A record's (name, type, count), one tuple for each in the process: the same mention
    recurs across items (216,000 mentions of 372 entities at 10,000 items of the scale
    benchmark: ≈ 15 MB as a tuple each)."""
    a, b, c = raw
    m = (intern(str(a)), intern(str(b)), int(c))
    return _MENTIONS.setdefault(m, m)


@dataclass(frozen=True, slots=True)
class ItemRecord:
    """The ``main`` record of one item."""

    chunks: int
    """How many chunks the item has (its chunk lines)."""
    claim_chunks: int
    """How many of them are claim chunks."""
    claims: int
    """Non-rejected claims (the catalog's ``claims``)."""
    entities: int
    quotes: list[tuple[str, str]] | None
    """The graph's quotes (:func:`arkai.search.graph.throttled_quotes`); None in a record read
    :meth:`without_quotes` (the index stage holds every item's record at once, and reads an
    item's quotes only to make its graph part: ≈ 5 KB an item)."""
    mentions: list[tuple[str, str, int]]
    quotes_digest: str
    """:func:`arkai.search.graph.quotes_digest` of the quotes."""

    def to_dict(self) -> dict[str, Any]:
        if self.quotes is None:
            raise ValueError("a record read without its quotes is not written")
        return {
            "chunks": self.chunks,
            "claim_chunks": self.claim_chunks,
            "claims": self.claims,
            "entities": self.entities,
            "quotes": [list(q) for q in self.quotes],
            "mentions": [list(m) for m in self.mentions],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ItemRecord:
        quotes = [(str(a), str(b)) for a, b in d["quotes"]]
        return cls(
            chunks=int(d["chunks"]),
            claim_chunks=int(d["claim_chunks"]),
            claims=int(d["claims"]),
            entities=int(d["entities"]),
            quotes=quotes,
            # Entity names and kinds recur across items; every item's record is held at once.
            mentions=[_shared_mention(m) for m in d["mentions"]],
            quotes_digest=quotes_digest(quotes),
        )

    def without_quotes(self) -> ItemRecord:
        return replace(self, quotes=None)


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
) -> tuple[ItemRecord, list[Chunk], dict[str, Any]]:
    """The item's ``main`` record, its chunks (``index/chunks/`` order) and its ``terms``
    record (:func:`terms_to_dict`)."""
    chunks = chunk_transcript(
        content_id, text, target_words=target_words, max_words=max_words
    ) + claim_chunks(content_id, text, evidence)
    chunks.sort(key=lambda c: c.sort_key)
    record = ItemRecord(
        chunks=len(chunks),
        claim_chunks=sum(1 for c in chunks if c.kind == CLAIM_KIND),
        claims=sum(1 for ln in evidence if not is_rejected(ln)),
        entities=len(entities),
        quotes=(quotes := throttled_quotes(evidence, graph)),
        mentions=entity_mentions(entities),
        quotes_digest=quotes_digest(quotes),
    )
    terms = item_terms(
        content_id,
        text,
        (c.text for c in chunks),
        [str(e.get("name", "")) for e in entities],
        condensed,
    )
    return record, chunks, terms_to_dict(terms)


def terms_to_dict(terms: ItemTerms) -> dict[str, Any]:
    return {
        "counts": dict(terms.counts),
        "chunk_stems": list(terms.chunk_stems),
        "entities": list(terms.entities),
        "condensed": [[n, k] for n, k in terms.condensed],
    }


def terms_from_dict(content_id: str, d: Mapping[str, Any]) -> ItemTerms:
    """The :class:`ItemTerms` of a ``terms`` record."""
    return ItemTerms(
        content_id=content_id,
        counts=d["counts"],
        chunk_stems=d["chunk_stems"],
        entities=d["entities"],
        condensed=[(int(n), str(k)) for n, k in d["condensed"]],
    )


def chunk_tokens(terms: Mapping[str, Any]) -> list[list[str]]:
    """The BM25 tokens (``tokenize(chunk.text)``) of each chunk of a ``terms`` record."""
    return [str(stems).split() for stems in terms["chunk_stems"]]
