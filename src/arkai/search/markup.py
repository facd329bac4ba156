"""Query markup (DESIGN §7, seed 003 "Parse query markup"): ``parse_query(q) -> Query``.

A query is free terms plus inline constraints::

    hive sensor "weight curve" -varroa -"bathroom scale" in:transcripts tag:bees
    after:2024 before:2025-06 asof:2026-01-10

- free terms rank (they feed the lexical and vector lanes);
- ``"quoted phrases"`` rank too and must occur in a hit (case-insensitive);
- ``-term`` / ``-"phrase"`` leave out hits that contain them;
- ``in:<type>`` keeps items of a library folder (``in:chats/chatgpt`` matches the prefix;
  repeated ``in:`` are alternatives); ``-in:<type>`` leaves a folder out;
- ``tag:<t>`` keeps items carrying the tag (repeated ``tag:`` must all hold); ``-tag:<t>``
  leaves tagged items out;
- ``after:<date>`` keeps items dated on or after the date's first day, ``before:<date>`` items
  dated before it (so ``after:2024 before:2025`` is the year 2024); an item's date is its
  ``published`` date when known, else ``created_at``;
- ``in:<date>`` (``in:2025``, ``in:2025-03``) is the period itself: ``after:`` its first day
  and ``before:`` the day after it (it cannot be combined with ``after:`` / ``before:``);
- ``asof:<date>`` searches only the items that were in ``library/`` at the last commit made
  before the end of that date (read from git history).

Dates are ``YYYY``, ``YYYY-MM`` or ``YYYY-MM-DD`` (UTC). Filter keys are case-insensitive; a
``word:word`` with another key is an ordinary term. Parsing is pure: no files, no clock.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

from arkai.errors import InvalidInputError

__all__ = ["CONTENT_TYPES", "DateBound", "Query", "parse_date", "parse_query"]

#: Top folders of ``library/`` that ``in:`` accepts (with singular aliases below).
CONTENT_TYPES = ("youtube", "podcasts", "articles", "pdfs", "chats", "notes", "transcripts")
_TYPE_ALIASES = {t.removesuffix("s"): t for t in CONTENT_TYPES if t.endswith("s")}
FILTER_KEYS = ("in", "tag", "before", "after", "asof")

_DATE = re.compile(r"^(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?$")
# A token: optional "-", then an optional "key:", then a quoted run or a bare run.
_TOKEN = re.compile(
    r"""(?P<neg>-)?
        (?:(?P<key>[A-Za-z]+):)?
        (?:"(?P<quoted>[^"]*)(?P<close>"?)|(?P<bare>[^\s"]+))""",
    re.VERBOSE,
)
_SMART_QUOTES = str.maketrans({"\u201c": '"', "\u201d": '"', "\u201e": '"', "\u00ab": '"',
                               "\u00bb": '"'})  # fmt: skip


@dataclass(frozen=True, slots=True)
class DateBound:
    """A date given in the query, at the precision it was written."""

    text: str
    """As written: ``2024``, ``2024-05`` or ``2024-05-10``."""
    start: date
    """First day of the period (``2024`` → 2024-01-01)."""
    end: date
    """First day after the period (``2024`` → 2025-01-01); the period is ``[start, end)``."""

    def end_utc(self) -> datetime:
        return datetime(self.end.year, self.end.month, self.end.day, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Query:
    """A parsed query. Everything is lower-cased except ``raw``."""

    raw: str
    """The query as given."""
    terms: tuple[str, ...] = ()
    """Free terms, in order (duplicates kept)."""
    phrases: tuple[str, ...] = ()
    """Quoted phrases (whitespace collapsed); each must occur in a hit."""
    exclude_terms: tuple[str, ...] = ()
    """``-term``: hits containing the word are left out."""
    exclude_phrases: tuple[str, ...] = ()
    """``-"phrase"``: hits containing the phrase are left out."""
    types: tuple[str, ...] = ()
    """``in:`` folders (any may match; a prefix of the item's ``content_type`` path)."""
    exclude_types: tuple[str, ...] = ()
    """``-in:`` folders."""
    tags: tuple[str, ...] = ()
    """``tag:`` values; all must be on the item."""
    exclude_tags: tuple[str, ...] = ()
    """``-tag:`` values; none may be on the item."""
    after: DateBound | None = None
    """Item date ≥ ``after.start``."""
    before: DateBound | None = None
    """Item date < ``before.start``."""
    asof: DateBound | None = None
    """Only items in ``library/`` at the last commit before ``asof.end``."""
    warnings: tuple[str, ...] = field(default=(), compare=False)
    """Things the parser ignored (an empty ``-``, an unclosed quote it closed)."""

    @property
    def text(self) -> str:
        """What the ranking lanes see: the free terms, then the phrases."""
        return " ".join((*self.terms, *self.phrases))

    @property
    def has_filters(self) -> bool:
        return bool(
            self.types or self.exclude_types or self.tags or self.exclude_tags
            or self.after or self.before or self.asof
        )  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        def bound(b: DateBound | None) -> str | None:
            return b.text if b else None

        return {
            "raw": self.raw,
            "text": self.text,
            "terms": list(self.terms),
            "phrases": list(self.phrases),
            "exclude_terms": list(self.exclude_terms),
            "exclude_phrases": list(self.exclude_phrases),
            "types": list(self.types),
            "exclude_types": list(self.exclude_types),
            "tags": list(self.tags),
            "exclude_tags": list(self.exclude_tags),
            "after": bound(self.after),
            "before": bound(self.before),
            "asof": bound(self.asof),
        }


def parse_date(text: str, *, key: str = "date") -> DateBound:
    """``YYYY``, ``YYYY-MM`` or ``YYYY-MM-DD`` as a period; anything else is an error."""
    m = _DATE.match(text)
    try:
        if m is None:
            raise ValueError("not a date")
        year, month, day = int(m[1]), int(m[2] or 1), int(m[3] or 1)
        start = date(year, month, day)
        if m[3]:
            end = date.fromordinal(start.toordinal() + 1)
        elif m[2]:
            end = date(year + month // 12, month % 12 + 1, 1)
        else:
            end = date(year + 1, 1, 1)
    except (ValueError, OverflowError) as exc:
        raise InvalidInputError(
            f"invalid date in query token {key}:{text} ({exc})",
            hint="dates are YYYY, YYYY-MM or YYYY-MM-DD",
        ) from None
    return DateBound(text=text, start=start, end=end)


def normalize_type(value: str) -> str:
    """``in:`` value → a library folder path (``Chats/ChatGPT/`` → ``chats/chatgpt``)."""
    parts = [p for p in value.lower().split("/") if p]
    if not parts:
        raise InvalidInputError("empty folder in query token in:")
    parts[0] = _TYPE_ALIASES.get(parts[0], parts[0])
    if parts[0] not in CONTENT_TYPES:
        raise InvalidInputError(
            f"unknown content type in query token in:{value}",
            hint=f"use one of {', '.join(CONTENT_TYPES)} (or a sub-folder like chats/chatgpt)",
        )
    return "/".join(parts)


def _collapse(text: str) -> str:
    return " ".join(text.lower().split())


def parse_query(q: str) -> Query:
    """Parse query markup; raise :class:`InvalidInputError` naming the bad token."""
    src = q.translate(_SMART_QUOTES)
    terms: list[str] = []
    phrases: list[str] = []
    ex_terms: list[str] = []
    ex_phrases: list[str] = []
    types: list[str] = []
    ex_types: list[str] = []
    tags: list[str] = []
    ex_tags: list[str] = []
    dates: dict[str, DateBound] = {}
    periods: list[str] = []
    warnings: list[str] = []
    pos = 0
    while pos < len(src):
        if src[pos].isspace():
            pos += 1
            continue
        m = _TOKEN.match(src, pos)
        if m is None or m.end() == pos:  # a lone '"' or similar: skip one character
            pos += 1
            continue
        pos = m.end()
        neg = bool(m["neg"])
        key = (m["key"] or "").lower()
        quoted = m["quoted"]
        value = quoted if quoted is not None else (m["bare"] or "")
        if quoted is not None and not m["close"]:
            warnings.append(f"closed an unclosed quote: {m.group(0)}")
        if not key and quoted is None:
            bare = value.lower()
            if bare.rstrip(":") in FILTER_KEYS and bare.endswith(":"):
                raise InvalidInputError(f"empty value in query token {m.group(0)}")
            if not bare.strip("-"):
                warnings.append(f"ignored a lone {m.group(0)}")
                continue
        if key and key not in FILTER_KEYS:
            # Not markup ("ratio:3", "http://…"): the whole token is text.
            key, value = "", m.group(0).removeprefix("-") if neg else m.group(0)
            quoted = None
        if not key:
            text = _collapse(value)
            if not text:
                if neg or quoted is not None:
                    warnings.append(f"ignored an empty token: {m.group(0)}")
                continue
            if quoted is not None:
                (ex_phrases if neg else phrases).append(text)
            elif neg:
                ex_terms.append(text)
            else:
                terms.append(text)
            continue
        value = value.strip()
        token = m.group(0)
        if not value:
            raise InvalidInputError(f"empty value in query token {token}")
        if key == "in" and _DATE.match(value):
            if neg:
                raise InvalidInputError(f"query token {token}: a period cannot be negated")
            if "after" in dates or "before" in dates:
                raise InvalidInputError(
                    f"query token {token}: a period is given twice",
                    hint="use in:<date> or after:/before:, not both",
                )
            periods.append(token)
            period = parse_date(value, key=key)
            dates["after"] = period
            dates["before"] = parse_date(period.end.isoformat(), key=key)
        elif key == "in":
            (ex_types if neg else types).append(normalize_type(value))
        elif key == "tag":
            (ex_tags if neg else tags).append(_collapse(value))
        else:
            if neg:
                raise InvalidInputError(
                    f"query token {token}: a date filter cannot be negated",
                    hint="use before: instead of -after: (and after: instead of -before:)",
                )
            if key in ("after", "before") and periods:
                raise InvalidInputError(
                    f"query token {token}: a period is given twice",
                    hint="use in:<date> or after:/before:, not both",
                )
            if key in dates:
                raise InvalidInputError(f"query token {token}: {key}: given twice")
            dates[key] = parse_date(value, key=key)
    after, before = dates.get("after"), dates.get("before")
    if after and before and after.start >= before.start:
        raise InvalidInputError(
            f"after:{after.text} before:{before.text} leaves no dates",
            hint="after: is inclusive and before: exclusive",
        )
    return Query(
        raw=q,
        terms=tuple(terms),
        phrases=tuple(phrases),
        exclude_terms=tuple(ex_terms),
        exclude_phrases=tuple(ex_phrases),
        types=tuple(dict.fromkeys(types)),
        exclude_types=tuple(dict.fromkeys(ex_types)),
        tags=tuple(dict.fromkeys(tags)),
        exclude_tags=tuple(dict.fromkeys(ex_tags)),
        after=after,
        before=before,
        asof=dates.get("asof"),
        warnings=tuple(warnings),
    )
