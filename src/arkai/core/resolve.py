"""Quote → span resolution (seed 000, "Matching Policy (V1)").

V1 is exact raw-byte search: one match is ``resolved``, several are ``ambiguous`` (first match
kept, ``match_count`` and 1-indexed ``match_rank`` recorded), none is ``unresolved`` with the
whitespace+NFC ``normalized_match_only`` hint. Case-insensitive and fuzzy matching run only when
asked for (``mode``), only after exact search fails, and always say so in ``resolution.method``.
"""

from __future__ import annotations

from dataclasses import dataclass

from arkai.core.document import Document, normalize_text
from arkai.core.fuzzy import DEFAULT_THRESHOLD, fuzzy_find
from arkai.core.hashing import digest
from arkai.model.evidence import Resolution, Span
from arkai.model.status import (
    AMBIGUOUS,
    METHOD_CASE_INSENSITIVE,
    METHOD_EXACT,
    METHOD_FUZZY,
    METHOD_NONE,
    METHOD_NORMALIZED_HINT,
    MODE_EXACT,
    MODE_FUZZY,
    MODE_INSENSITIVE,
    MODES,
    REASON_MULTIPLE,
    REASON_NO_MATCH,
    REASON_NORMALIZED_ONLY,
    RESOLVED,
    UNRESOLVED,
)

ARTIFACT = "transcript.md"


@dataclass(frozen=True, slots=True)
class Match:
    """Result of resolving one quote: always a resolution, a span when one was found."""

    resolution: Resolution
    span: Span | None


def count_occurrences(data: bytes, needle: bytes, first: int) -> int:
    """Number of (possibly overlapping) occurrences of ``needle`` at or after ``first``."""
    count = 1
    find = data.find
    i = find(needle, first + 1)
    while i >= 0:
        count += 1
        i = find(needle, i + 1)
    return count


def make_span(doc: Document, start: int, end: int, artifact: str, sha: str | None = None) -> Span:
    """A span with every derived field (hash, anchor, line/column, timestamp)."""
    line, col = doc.line_col(start)
    return Span(
        artifact=artifact,
        start=start,
        end=end,
        slice_sha256=sha if sha is not None else digest(doc.data[start:end]),
        anchor_text=doc.anchor(start, end),
        video_timestamp=doc.timestamp_at(start),
        line=line,
        column=col,
    )


def _unresolved(doc: Document, quote: str) -> Match:
    norm = normalize_text(quote)
    if norm and norm in doc.normalized:
        res = Resolution(UNRESOLVED, METHOD_NORMALIZED_HINT, 0, None, REASON_NORMALIZED_ONLY)
    else:
        res = Resolution(UNRESOLVED, METHOD_NONE, 0, None, REASON_NO_MATCH)
    return Match(res, None)


def _char_to_byte(text: str, index: int) -> int:
    return len(text[:index].encode("utf-8"))


def _insensitive(doc: Document, quote: str, artifact: str) -> Match | None:
    text = doc.text
    low, q = text.lower(), quote.lower()
    if len(low) != len(text):
        # Lower-casing changed lengths (rare scripts): fall back to ASCII folding on bytes,
        # which keeps byte offsets intact.
        data, needle = doc.data.lower(), quote.encode("utf-8").lower()
        first = data.find(needle)
        if first < 0:
            return None
        count = count_occurrences(data, needle, first)
        start, end = first, first + len(needle)
    else:
        ci = low.find(q)
        if ci < 0:
            return None
        count = 1
        j = low.find(q, ci + 1)
        while j >= 0:
            count += 1
            j = low.find(q, j + 1)
        start = _char_to_byte(text, ci)
        end = start + len(text[ci : ci + len(q)].encode("utf-8"))
    status = RESOLVED if count == 1 else AMBIGUOUS
    reason = None if count == 1 else REASON_MULTIPLE
    res = Resolution(status, METHOD_CASE_INSENSITIVE, count, 1, reason)
    return Match(res, make_span(doc, start, end, artifact))


def _fuzzy(doc: Document, quote: str, artifact: str, threshold: float) -> Match | None:
    found = fuzzy_find(doc.text, quote, threshold)
    if found is None:
        return None
    cs, ce, score = found
    start = _char_to_byte(doc.text, cs)
    end = start + len(doc.text[cs:ce].encode("utf-8"))
    res = Resolution(RESOLVED, METHOD_FUZZY, 1, 1, None, score=score)
    return Match(res, make_span(doc, start, end, artifact))


def resolve_quote(
    doc: Document,
    quote: str,
    *,
    mode: str = MODE_EXACT,
    artifact: str = ARTIFACT,
    fuzzy_threshold: float = DEFAULT_THRESHOLD,
) -> Match:
    """Resolve ``quote`` against ``doc``.

    ``mode`` is ``exact`` (V1, default), ``insensitive`` (exact, then case-insensitive) or
    ``fuzzy`` (exact, then case-insensitive, then fuzzy at ``fuzzy_threshold`` 0–100).
    """
    if mode not in MODES:
        raise ValueError(f"unknown match mode {mode!r}; expected one of {', '.join(MODES)}")
    needle = quote.encode("utf-8")
    if not needle.strip():
        return Match(Resolution(UNRESOLVED, METHOD_NONE, 0, None, REASON_NO_MATCH), None)
    data = doc.data
    first = data.find(needle)
    if first >= 0:
        second = data.find(needle, first + 1)
        if second < 0:
            res = Resolution(RESOLVED, METHOD_EXACT, 1, 1, None)
        else:
            count = count_occurrences(data, needle, first)
            res = Resolution(AMBIGUOUS, METHOD_EXACT, count, 1, REASON_MULTIPLE)
        # The slice of an exact match is the quote itself, so its digest is the quote's.
        span = make_span(doc, first, first + len(needle), artifact, digest(needle))
        return Match(res, span)
    if mode in (MODE_INSENSITIVE, MODE_FUZZY):
        found = _insensitive(doc, quote, artifact)
        if found is not None:
            return found
    if mode == MODE_FUZZY:
        found = _fuzzy(doc, quote, artifact, fuzzy_threshold)
        if found is not None:
            return found
    return _unresolved(doc, quote)
