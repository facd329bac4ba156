"""Beliefs and their change log (seed 002's belief memory, replayed from the library's files).

An **episode** is one dated statement the library holds: a claim extracted from an item (notes
included), or an imported belief. A **belief** is what the replay of all episodes in time order
makes of them: a statement with a type (``fact``: what a source said; ``insight``: a
generalisation across ≥ 2 items), a base confidence, a status and the episodes behind it — each
an evidence ID whose quote resolves to exact bytes. **Changes** record every create, reinforce,
contradict, forget and prune with the episode that caused it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

FACT = "fact"
INSIGHT = "insight"
TYPES = (FACT, INSIGHT)
ACTIVE = "active"
INVALIDATED = "invalidated"
FORGOTTEN = "forgotten"
PRUNED = "pruned"
BELIEF_STATUSES = (ACTIVE, INVALIDATED, FORGOTTEN, PRUNED)


@dataclass(frozen=True, slots=True)
class Episode:
    """One dated statement fed to the replay."""

    id: str
    """The evidence ID (extracted claims) or ``import:<digest>`` (imported beliefs)."""
    statement: str
    date: str
    """ISO date or date-time; the replay order is (date, item, position, id)."""
    item: str | None = None
    """Content ID of the item the statement comes from."""
    position: int = 0
    """Byte offset of the quote in its transcript (orders episodes of one item)."""
    quote: str | None = None
    kind: str = FACT
    """``fact`` for claims; an imported belief keeps its type."""

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"id": self.id, "statement": self.statement, "date": self.date}
        if self.item is not None:
            d["item"] = self.item
        if self.quote is not None:
            d["quote"] = self.quote
        if self.kind != FACT:
            d["kind"] = self.kind
        return d


@dataclass(frozen=True, slots=True)
class Belief:
    id: str
    statement: str
    type: str
    confidence: float
    """Base confidence; read paths apply the half-life decay (:func:`effective_confidence`)."""
    status: str
    created: str
    """Date of the episode that created it."""
    reinforced: str
    """Date of the latest episode that reinforced it (decay runs from here)."""
    episodes: tuple[str, ...]
    """Episode (evidence) IDs that support it, oldest first."""
    items: tuple[str, ...] = ()
    """Content IDs of the items behind it."""
    contradicted_by: tuple[str, ...] = ()
    """Episode IDs that contradicted it."""
    replaced_by: str | None = None
    """The belief that replaced it when it was contradicted."""
    pinned: bool = False

    def reinforced_by(self, confidence: float, date: str) -> Belief:
        """This belief at ``confidence``, reinforced on ``date`` when that is later than its
        last: made field by field (``dataclasses.replace`` costs ≈ 3 µs, and a replay does
        this once per reinforcing episode: ≈ 79,000 at 10,000 items). Every field is named
        (``tests/memory/test_replay.py`` checks it against ``replace``)."""
        return Belief(self.id, self.statement, self.type, confidence, self.status, self.created,
                      max(self.reinforced, date), self.episodes, self.items,
                      self.contradicted_by, self.replaced_by, self.pinned)  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "id": self.id,
            "statement": self.statement,
            "type": self.type,
            "confidence": self.confidence,
            "status": self.status,
            "created": self.created,
            "reinforced": self.reinforced,
            "episodes": list(self.episodes),
            "items": list(self.items),
        }
        if self.contradicted_by:
            d["contradicted_by"] = list(self.contradicted_by)
        if self.replaced_by:
            d["replaced_by"] = self.replaced_by
        if self.pinned:
            d["pinned"] = True
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Belief:
        return cls(
            id=str(d["id"]),
            statement=str(d["statement"]),
            type=str(d["type"]),
            confidence=float(d["confidence"]),
            status=str(d["status"]),
            created=str(d["created"]),
            reinforced=str(d["reinforced"]),
            episodes=tuple(str(e) for e in d["episodes"]),
            items=tuple(str(i) for i in d.get("items", ())),
            contradicted_by=tuple(str(e) for e in d.get("contradicted_by", ())),
            replaced_by=d.get("replaced_by"),
            pinned=bool(d.get("pinned", False)),
        )


@dataclass(frozen=True, slots=True)
class Change:
    """One entry of the belief change log."""

    seq: int
    kind: str
    belief: str
    date: str
    episode: str | None = None
    other: str | None = None
    """The other belief involved (the replacement of a contradicted one, …)."""
    confidence: float | None = None
    """Base confidence after the change."""
    similarity: float | None = None
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"seq": self.seq, "kind": self.kind, "belief": self.belief}
        d["date"] = self.date
        for key in ("episode", "other", "confidence", "similarity", "note"):
            value = getattr(self, key)
            if value is not None:
                d[key] = value
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Change:
        return cls(
            seq=int(d["seq"]),
            kind=str(d["kind"]),
            belief=str(d["belief"]),
            date=str(d["date"]),
            episode=d.get("episode"),
            other=d.get("other"),
            confidence=None if d.get("confidence") is None else float(d["confidence"]),
            similarity=None if d.get("similarity") is None else float(d["similarity"]),
            note=d.get("note"),
        )
