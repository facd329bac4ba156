"""Quote → span resolution (seed 000, "Matching Policy (V1)").

V1 is exact raw-byte search: one match is ``resolved``, several are ``ambiguous`` (first match
kept, ``match_count`` and 1-indexed ``match_rank`` recorded), none is ``unresolved`` with the
whitespace+NFC ``normalized_match_only`` hint. Case-insensitive and fuzzy matching run only when
asked for (``mode``), only after exact search fails, and get their own statuses
(``matched_case_insensitive``, ``matched_fuzzy``): only an exact byte match is ever
``resolved`` or ``ambiguous``.

Cost: an exact quote costs one pass of ``bytes.find`` over the document (to its first match, then
on to a second one or the end); everything else a span needs (lines, timestamps, the folded and
normalised texts, the fuzzy word index) is built once per ``Document`` on first use.
"""

from __future__ import annotations

from dataclasses import dataclass

from arkai.core.document import Document, normalize_text
from arkai.core.fuzzy import DEFAULT_THRESHOLD
from arkai.core.hashing import digest
from arkai.model.evidence import Resolution, Span
from arkai.model.status import (
    AMBIGUOUS,
    MATCHED_CASE_INSENSITIVE,
    MATCHED_FUZZY,
    METHOD_CASE_INSENSITIVE,
    METHOD_EXACT,
    METHOD_FUZZY,
    METHOD_NONE,
    METHOD_NORMALIZED_HINT,
    MODE_EXACT,
    MODE_FUZZY,
    MODES,
    REASON_MULTIPLE,
    REASON_NO_MATCH,
    REASON_NORMALIZED_ONLY,
    RESOLVED,
    UNRESOLVED,
)

ARTIFACT = "transcript.md"

# Resolutions are immutable: the common ones are shared rather than rebuilt for every quote.
_EXACT_ONE = Resolution(RESOLVED, METHOD_EXACT, 1, 1, None)
_NO_MATCH = Resolution(UNRESOLVED, METHOD_NONE, 0, None, REASON_NO_MATCH)
_HINT_ONLY = Resolution(UNRESOLVED, METHOD_NORMALIZED_HINT, 0, None, REASON_NORMALIZED_ONLY)


@dataclass(frozen=True, slots=True)
class Match:
    """Result of resolving one quote: always a resolution, a span when one was found."""

    resolution: Resolution
    span: Span | None


_UNMATCHED = Match(_NO_MATCH, None)
_HINTED = Match(_HINT_ONLY, None)


def count_occurrences(data: bytes, needle: bytes, first: int) -> int:
    """Number of (possibly overlapping) occurrences of ``needle`` at or after ``first``."""
    count = 1
    find = data.find
    i = find(needle, first + 1)
    while i >= 0:
        count += 1
        i = find(needle, i + 1)
    return count


def all_occurrences(data: bytes, needle: bytes) -> list[int]:
    """Start offsets of every (possibly overlapping) occurrence of ``needle`` in ``data``."""
    found: list[int] = []
    i = data.find(needle) if needle else -1
    while i >= 0:
        found.append(i)
        i = data.find(needle, i + 1)
    return found


def make_span(doc: Document, start: int, end: int, artifact: str, sha: str | None = None) -> Span:
    """A span with every derived field (hash, anchor, line/column, timestamp, PDF page)."""
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
        page=doc.page_at(start),
    )


def _unresolved(doc: Document, quote: str) -> Match:
    norm = normalize_text(quote)
    if norm and norm.encode("utf-8", errors="surrogatepass") in doc.normalized_bytes:
        return _HINTED
    return _UNMATCHED


def _offset_text(doc: Document) -> str:
    """``doc``'s text with code point indexes that map back onto its bytes (cached on ``doc``).

    ``doc.text`` turns each invalid byte sequence into one U+FFFD (3 bytes), which would shift
    every later offset; ``surrogateescape`` keeps each invalid byte as one code point instead.
    """
    return doc.offset_text


def _byte_range(doc: Document, cs: int, ce: int) -> tuple[int, int]:
    """Byte range of code points ``cs..ce`` of ``doc.offset_text``."""
    if doc.is_ascii:
        return cs, ce
    start = doc.char_to_byte(cs)
    return start, start + len(doc.offset_text[cs:ce].encode("utf-8", errors="surrogateescape"))


def _insensitive(doc: Document, quote: str, artifact: str) -> Match | None:
    text = doc.offset_text
    low, q = doc.folded, quote.lower()
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
        start, end = _byte_range(doc, ci, ci + len(q))
    reason = None if count == 1 else REASON_MULTIPLE
    res = Resolution(MATCHED_CASE_INSENSITIVE, METHOD_CASE_INSENSITIVE, count, 1, reason)
    return Match(res, make_span(doc, start, end, artifact))


def _fuzzy(doc: Document, quote: str, artifact: str, threshold: float) -> Match | None:
    found = doc.fuzzy_index().find(quote, threshold)
    if found is None:
        return None
    cs, ce, score = found
    start, end = _byte_range(doc, cs, ce)
    res = Resolution(MATCHED_FUZZY, METHOD_FUZZY, 1, 1, None, score=score)
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
        return _UNMATCHED
    data = doc.data
    first = data.find(needle)
    if first >= 0:
        count = 1 if data.find(needle, first + 1) < 0 else count_occurrences(data, needle, first)
        if count == 1:
            res = _EXACT_ONE
        else:
            res = Resolution(AMBIGUOUS, METHOD_EXACT, count, 1, REASON_MULTIPLE)
        # The slice of an exact match is the quote itself, so its digest is the quote's.
        span = make_span(doc, first, first + len(needle), artifact, digest(needle))
        return Match(res, span)
    if mode != MODE_EXACT:
        found = _insensitive(doc, quote, artifact)
        if found is not None:
            return found
        if mode == MODE_FUZZY:
            found = _fuzzy(doc, quote, artifact, fuzzy_threshold)
            if found is not None:
                return found
    return _unresolved(doc, quote)


def prefer_within(doc: Document, match: Match, start: int, end: int) -> Match:
    """``match`` with an exact ``ambiguous`` span moved to the quote's first occurrence inside
    the byte range ``[start, end)`` (the chunk a condensed finding was quoted from), its
    ``match_rank`` set to that occurrence's place among all of them. Any other match, or one
    with no occurrence inside the range, is returned as it is: still V1, only the choice among
    equal occurrences is made by where the quote came from."""
    span, res = match.span, match.resolution
    if span is None or res.status != AMBIGUOUS or start <= span.start < end:
        return match
    needle = doc.data[span.start : span.end]
    hits = all_occurrences(doc.data, needle)
    for rank, at in enumerate(hits, 1):
        if start <= at and at + len(needle) <= end:
            moved = Resolution(AMBIGUOUS, METHOD_EXACT, len(hits), rank, REASON_MULTIPLE)
            moved_span = make_span(doc, at, at + len(needle), span.artifact, span.slice_sha256)
            return Match(moved, moved_span)
    return match
