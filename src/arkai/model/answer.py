"""Answers (``arkai ask``, seed 001 "Validator Architecture"): the researcher's scope, the
shards' structured evidence, the synthesizer's claims, the validator's verdicts, the rounds of
the bounce-back loop, and the final answer.

A **match** is one piece of evidence a shard returned: ``match_id`` (``shard-NNN:chunk-M:msg-K``
for shards, ``item:<id8>:L<line>`` for the implicit shard of a library without shards), a
verbatim ``quote``, its ``context``, ``timestamp`` and ``relevance``. arkai resolves every quote
to bytes of the item's ``transcript.md`` (V1 rules); only a verified span (``resolved`` /
``ambiguous``) may support a claim.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from arkai.model.record import AsDict
from arkai.model.status import is_verified

GROUNDED = "grounded"
PARTIAL = "partial"
UNSUPPORTED = "unsupported"
VERDICTS = (GROUNDED, PARTIAL, UNSUPPORTED)

MAX_ROUNDS = 3
"""Rounds of the bounce-back loop (seed 001: "Round 3 (max)")."""


@dataclass(frozen=True, slots=True)
class Scope(AsDict):
    """What the researcher decided to search."""

    after: str | None
    """``YYYY[-MM[-DD]]`` from ``after:`` / ``in:`` (inclusive), or None."""
    before: str | None
    """``YYYY[-MM[-DD]]`` from ``before:`` / ``in:`` (exclusive), or None."""
    all_shards: bool
    """The question needs every shard ("evolve", "over time", "every", "history" …)."""
    reason: str
    shards: tuple[str, ...]
    """The shards dispatched to."""
    implicit: bool = False
    """No shards were built: each item's transcript is one chunk of one implicit shard."""
    text: str = ""
    """The question without its markup (what the shards rank by)."""


@dataclass(frozen=True, slots=True)
class Match:
    """One piece of evidence, with its receipt once arkai resolved the quote."""

    match_id: str
    quote: str
    context: str = ""
    timestamp: str | None = None
    relevance: str = "medium"
    item: str | None = None
    """Content ID of the item the match id points into (None: the id points nowhere)."""
    transcript: str | None = None
    """Repo-relative path of that item's ``transcript.md``."""
    status: str = "unresolved"
    span: tuple[int, int] | None = None
    line: int | None = None
    slice_sha256: str | None = None
    note: str | None = None
    """Why the match cannot be a receipt (unknown match id, quote not in the transcript …)."""

    @property
    def verified(self) -> bool:
        return self.span is not None and is_verified(self.status)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "match_id": self.match_id,
            "quote": self.quote,
            "context": self.context,
            "timestamp": self.timestamp,
            "relevance": self.relevance,
            "item": self.item,
            "transcript": self.transcript,
            "status": self.status,
        }
        if self.span is not None:
            d["utf8_byte_offset"] = list(self.span)
            d["line"] = self.line
            d["slice_sha256"] = self.slice_sha256
        if self.note:
            d["note"] = self.note
        return d


@dataclass(frozen=True, slots=True)
class Coverage(AsDict):
    method: str
    """``full_scan`` | ``sampled``."""
    chunks_examined: int
    chunks_with_matches: int


@dataclass(frozen=True, slots=True)
class Uncertainty(AsDict):
    gaps: tuple[str, ...]
    """Periods in scope with no data in the shard."""
    confidence: str


@dataclass(frozen=True, slots=True)
class ShardAnswer:
    """What one shard returned (seed 001, "Structured Output Contract")."""

    shard: str
    matches: tuple[Match, ...]
    coverage: Coverage
    uncertainty: Uncertainty
    cached: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "shard": self.shard,
            "matches": [m.to_dict() for m in self.matches],
            "coverage": self.coverage.to_dict(),
            "uncertainty": self.uncertainty.to_dict(),
            "cached": self.cached,
        }


@dataclass(frozen=True, slots=True)
class Claim(AsDict):
    """A claim of the synthesizer, citing match ids."""

    id: str
    text: str
    evidence: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Verdict(AsDict):
    """The validator's judgement of one claim (it judges, it never rewrites)."""

    claim: str
    """The claim's id."""
    verdict: str
    """``grounded`` | ``partial`` | ``unsupported``."""
    evidence: tuple[str, ...]
    """The match ids that support the verdict (verified receipts only)."""
    notes: str
    temporal: str = "consistent"
    """``consistent`` or what the dates of the evidence contradict."""


@dataclass(frozen=True, slots=True)
class Round:
    """One synthesis + validation round."""

    number: int
    claims: tuple[Claim, ...]
    verdicts: tuple[Verdict, ...]
    retracted: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "round": self.number,
            "claims": [c.to_dict() for c in self.claims],
            "verdicts": [v.to_dict() for v in self.verdicts],
            "retracted": list(self.retracted),
        }


@dataclass(frozen=True, slots=True)
class Answer:
    """``arkai ask``'s result: every claim in ``claims`` is grounded by verified evidence."""

    id: str
    """``sha256`` prefix of the question and the evidence (16 hex)."""
    question: str
    scope: Scope
    shards: tuple[ShardAnswer, ...]
    claims: tuple[Claim, ...]
    """The final claims: grounded ones only."""
    verdicts: tuple[Verdict, ...]
    """The last verdict of each final claim."""
    rounds: tuple[Round, ...]
    agreement: bool
    """Every claim of the last round grounded or retracted."""
    disagreements: tuple[Verdict, ...] = ()
    """Claims still partial / unsupported after the last round (never in ``claims``)."""
    retracted: tuple[str, ...] = ()
    temporal_check: dict[str, Any] = field(default_factory=dict)
    providers: dict[str, str] = field(default_factory=dict)
    run_id: str = ""

    def match(self, match_id: str) -> Match | None:
        for shard in self.shards:
            for m in shard.matches:
                if m.match_id == match_id and m.verified:
                    return m
        return None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "question": self.question,
            "scope": self.scope.to_dict(),
            "shards": [s.to_dict() for s in self.shards],
            "claims": [c.to_dict() for c in self.claims],
            "verdicts": [v.to_dict() for v in self.verdicts],
            "rounds": [r.to_dict() for r in self.rounds],
            "agreement": self.agreement,
            "disagreements": [d.to_dict() for d in self.disagreements],
            "retracted": list(self.retracted),
            "temporal_check": self.temporal_check,
            "providers": self.providers,
            "run_id": self.run_id,
        }
