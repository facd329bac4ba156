"""The researcher of ``arkai ask`` (seed 001, "Semantic Search: Researcher + Shards + Validator"):
the question's scope, each shard's input, and the builtin shard's retrieval.

**Scope.** The question is parsed as query markup (:mod:`arkai.search.markup`): ``after:``,
``before:`` and ``in:<date>`` bound the period; ``in:<folder>`` / ``tag:`` narrow the items. A
question that asks about change or completeness — "evolve", "over time", "every", "history",
"always", "timeline", "trend", "changed", "since" — needs **all** shards (inside the period);
otherwise a shard is searched when its date range overlaps the period (every shard when no
period is given).

**Shard input** (the ``query_shard`` pattern): ``QUESTION:``, ``SCOPE:``, ``CHUNKS:`` lines,
then one line per transcript line, ``<match_id> | <date> | <text>``. Plain lines keep the input
splittable anywhere and every quote a slice of one transcript line.

**Builtin retrieval** (:func:`search_shard`): BM25 (:class:`arkai.search.bm25.BM25Index`, the
lexical lane's index) over the shard's lines, the best lines kept (score at least a quarter of
the best), the quote being the sentence of the line that holds most of the question's terms.
Deterministic; a full scan of every line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date

from arkai.search.bm25 import BM25Index
from arkai.search.markup import Query, parse_date, parse_query
from arkai.search.text import tokenize

__all__ = [
    "NEEDS_ALL",
    "EvidenceLine",
    "ShardSpan",
    "chunk_of",
    "in_period",
    "needs_all_shards",
    "parse_shard_input",
    "search_shard",
    "select_shards",
    "shard_input",
]

NEEDS_ALL = re.compile(
    r"\b(?:evolv\w*|over\s+(?:the\s+)?(?:time|years?|months?)|every|histor(?:y|ies|ical)|"
    r"always|timeline|trends?|chang(?:e|ed|es|ing)|since|throughout|all\s+the\s+time)\b",
    re.IGNORECASE,
)
SEPARATOR = " | "
MAX_MATCHES = 12
KEEP_RATIO = 0.25
"""A line is a match when its BM25 score is at least this share of the best line's."""
_SENTENCE = re.compile(r"\S.*?(?:[.!?]+(?=\s|$)|$)")
"""A sentence ends at ., ! or ? before a space or the end (so "1.5" and "e.g" stay whole)."""
_PREFIX = re.compile(
    r"^\s*(?:\[\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d+)?\]\s*)?(?:[^\s:][^:]{0,40}:\s+)?"
)


@dataclass(frozen=True, slots=True)
class EvidenceLine:
    """One transcript line offered to a shard."""

    match_id: str
    date: str | None
    text: str


@dataclass(frozen=True, slots=True)
class ShardSpan:
    """A shard's id and date range, as the researcher sees it."""

    id: str
    first_date: str | None
    last_date: str | None


def needs_all_shards(question: str) -> str | None:
    """The word that makes the question need every shard, or None."""
    m = NEEDS_ALL.search(question)
    return m.group(0) if m else None


def _day(value: str | None) -> date | None:
    if not value:
        return None
    try:
        return date.fromisoformat(value[:10])
    except ValueError:
        try:
            return date(int(value[:4]), 1, 1)
        except ValueError:
            return None


def in_period(value: str | None, q: Query) -> bool:
    """Is a date (``YYYY-MM-DD…``) inside the query's ``after:`` / ``before:`` period? An
    undated thing is kept (it may be in the period; the shard reports it as a gap if not)."""
    d = _day(value)
    if d is None:
        return True
    if q.after is not None and d < q.after.start:
        return False
    return not (q.before is not None and d >= q.before.start)


def select_shards(question: str, shards: Sequence[ShardSpan]) -> tuple[Query, list[str], str]:
    """``(query, chosen shard ids, reason)`` for ``question`` (see the module doc)."""
    q = parse_query(question)
    word = needs_all_shards(question)
    if q.after is None and q.before is None:
        reason = f"needs every shard ('{word}')" if word else "no period given: every shard"
        return q, [s.id for s in shards], reason
    chosen = []
    for s in shards:
        first, last = _day(s.first_date), _day(s.last_date)
        if first is None or last is None:
            chosen.append(s.id)
            continue
        if q.before is not None and first >= q.before.start:
            continue
        if q.after is not None and last < q.after.start:
            continue
        chosen.append(s.id)
    period = " ".join(
        f"{k}:{b.text}" for k, b in (("after", q.after), ("before", q.before)) if b is not None
    )
    reason = f"shards whose dates overlap {period}"
    if word:
        reason = f"needs every shard ('{word}') inside {period}"
    return q, chosen, reason


def chunk_of(match_id: str) -> str:
    """The chunk a match id belongs to (``shard-001:chunk-3`` / ``item:<id8>``)."""
    head, sep, _ = match_id.rpartition(":msg-")
    if sep:
        return head
    head, sep, _ = match_id.rpartition(":L")
    return head if sep else match_id


def shard_input(question: str, period: str, chunks: int, lines: Iterable[EvidenceLine]) -> str:
    """The ``query_shard`` input (see the module doc)."""
    out = [f"QUESTION: {' '.join(question.split())}", f"SCOPE: {period or 'all dates'}"]
    out.append(f"CHUNKS: {chunks}")
    for ln in lines:
        text = ln.text.replace("\n", " ")
        out.append(f"{ln.match_id}{SEPARATOR}{ln.date or '-'}{SEPARATOR}{text}")
    return "\n".join(out) + "\n"


def parse_shard_input(text: str) -> tuple[str, str, int, list[EvidenceLine]]:
    """``(question, scope, chunks, lines)`` of a ``query_shard`` input."""
    question, scope, chunks = "", "", 0
    lines: list[EvidenceLine] = []
    for raw in text.splitlines():
        if raw.startswith("QUESTION: "):
            question = raw[len("QUESTION: ") :]
        elif raw.startswith("SCOPE: "):
            scope = raw[len("SCOPE: ") :]
        elif raw.startswith("CHUNKS: "):
            digits = raw[len("CHUNKS: ") :].strip()
            chunks = int(digits) if digits.isdigit() else 0
        else:
            parts = raw.split(SEPARATOR, 2)
            if len(parts) == 3 and parts[0]:
                day = None if parts[1] == "-" else parts[1]
                lines.append(EvidenceLine(parts[0], day, parts[2]))
    return question, scope, chunks, lines


def _best_sentence(text: str, terms: set[str]) -> str:
    body = text[_PREFIX.match(text).end() :]  # type: ignore[union-attr]
    best, best_hits = "", -1
    for m in _SENTENCE.finditer(body):
        s = m.group(0).strip()
        if len(s) < 3:
            continue
        hits = len(terms & set(tokenize(s)))
        if hits > best_hits:
            best, best_hits = s, hits
    return best or text.strip()


def _months(lines: Sequence[EvidenceLine]) -> set[tuple[int, int]]:
    out = set()
    for ln in lines:
        d = _day(ln.date)
        if d is not None:
            out.add((d.year, d.month))
    return out


def _gaps(lines: Sequence[EvidenceLine], scope: str) -> list[str]:
    """Whole months inside the scope (or the shard's own range) with no dated line."""
    have = _months(lines)
    if not have:
        return []
    bounds = dict(re.findall(r"(after|before):(\d{4}(?:-\d{2})?(?:-\d{2})?)", scope))
    lo, hi = min(have), max(have)
    if "after" in bounds:
        a = parse_date(bounds["after"], key="after").start
        lo = (a.year, a.month)
    if "before" in bounds:
        b = parse_date(bounds["before"], key="before").start
        hi = (b.year, b.month - 1) if b.month > 1 else (b.year - 1, 12)
    gaps: list[str] = []
    run: list[tuple[int, int]] = []
    y, m = lo
    steps = 0
    while (y, m) <= hi and steps < 600:
        if (y, m) not in have:
            run.append((y, m))
        elif run:
            gaps.append(_range(run))
            run = []
        y, m = (y, m + 1) if m < 12 else (y + 1, 1)
        steps += 1
    if run:
        gaps.append(_range(run))
    return gaps


def _range(run: list[tuple[int, int]]) -> str:
    a, b = run[0], run[-1]
    first, last = f"{a[0]:04d}-{a[1]:02d}", f"{b[0]:04d}-{b[1]:02d}"
    return f"{first}: no data" if a == b else f"{first} to {last}: no data"


def search_shard(text: str, max_matches: int = MAX_MATCHES) -> dict[str, object]:
    """The builtin ``query_shard`` output for the input ``text`` (see the module doc)."""
    question, scope, chunks, lines = parse_shard_input(text)
    usable = [ln for ln in lines if not ln.text.lstrip().startswith("#") and ln.text.strip()]
    examined = chunks or len({chunk_of(ln.match_id) for ln in lines})
    matches: list[dict[str, object]] = []
    terms = set(tokenize(question))
    confidence = "none"
    if usable and terms:
        index = BM25Index.build(ln.text for ln in usable)
        hits = index.search(question, k=max(1, max_matches))
        top = hits[0][1] if hits else 0.0
        for row, score in hits:
            if score < KEEP_RATIO * top:
                break
            ln = usable[row]
            ratio = score / top if top else 0.0
            matches.append(
                {
                    "match_id": ln.match_id,
                    "quote": _best_sentence(ln.text, terms),
                    "context": ln.text.strip(),
                    "timestamp": ln.date,
                    "relevance": "high" if ratio >= 0.66 else "medium" if ratio >= 0.4 else "low",
                }
            )
        if hits:
            best = set(tokenize(usable[hits[0][0]].text)) & terms
            share = len(best) / len(terms)
            confidence = "high" if share >= 0.6 else "medium" if share >= 0.3 else "low"
    with_matches = len({chunk_of(str(m["match_id"])) for m in matches})
    return {
        "matches": matches,
        "coverage": {
            "method": "full_scan",
            "chunks_examined": examined,
            "chunks_with_matches": with_matches,
        },
        "uncertainty": {"gaps": _gaps(lines, scope), "confidence": confidence},
    }
