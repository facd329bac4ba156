"""Snippets: a chunk's text trimmed around the query's terms, with the terms located.

Pure functions. ``make_snippet(text, terms, phrases, width=240)`` collapses whitespace, finds the
words whose stem is a query term's stem and the phrases (case-insensitive), picks the window of
about ``width`` characters that covers the most distinct terms, cuts it at word boundaries and
returns it with the matches' character ranges inside it; ``mark(snippet, highlights)`` wraps
them in ``**bold**``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from arkai.search.text import STOPWORDS, stem, tokenize

__all__ = ["ELLIPSIS", "Snippet", "find_matches", "make_snippet", "mark"]

ELLIPSIS = "…"
_WORD = re.compile(r"\w+")


@dataclass(frozen=True, slots=True)
class Snippet:
    """Trimmed text and where the query matched in it."""

    text: str
    """At most about ``width`` characters (plus ``…`` at a cut end), whitespace collapsed."""
    highlights: tuple[tuple[int, int], ...]
    """Character ranges ``[start, end)`` in ``text``, sorted, not overlapping."""


def _phrase_pattern(phrase: str) -> re.Pattern[str] | None:
    words = phrase.split()
    if not words:
        return None
    return re.compile(r"\s+".join(re.escape(w) for w in words), re.IGNORECASE)


def find_matches(
    text: str, terms: Sequence[str], phrases: Sequence[str] = ()
) -> list[tuple[int, int, str]]:
    """``(start, end, what)`` of every query word (by stem) and phrase in ``text``.

    ``what`` is the stem or the phrase, so distinct terms can be counted. Sorted by start.
    """
    stems = {t for term in terms for t in tokenize(term)}
    out: list[tuple[int, int, str]] = []
    if stems:
        for m in _WORD.finditer(text):
            w = m.group(0).lower()
            if w not in STOPWORDS and stem(w) in stems:
                out.append((m.start(), m.end(), stem(w)))
    for phrase in phrases:
        pat = _phrase_pattern(phrase)
        if pat is not None:
            out.extend((m.start(), m.end(), phrase) for m in pat.finditer(text))
    out.sort()
    return out


def _merge(spans: Sequence[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    merged: list[tuple[int, int]] = []
    for s, e in sorted(spans):
        if merged and s <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], e))
        else:
            merged.append((s, e))
    return tuple(merged)


def make_snippet(
    text: str, terms: Sequence[str], phrases: Sequence[str] = (), *, width: int = 240
) -> Snippet:
    """The ``width``-character window of ``text`` that covers the most distinct matches."""
    flat = " ".join(text.split())
    matches = find_matches(flat, terms, phrases)
    if len(flat) <= width:
        return Snippet(flat, _merge([(s, e) for s, e, _ in matches]))
    lead = width // 5
    best_start, best_key = 0, (-1, -1)
    for s, _, _ in matches:
        start = max(0, min(s - lead, len(flat) - width))
        inside = [m for m in matches if m[0] >= start and m[1] <= start + width]
        key = (len({m[2] for m in inside}), len(inside))
        if key > best_key:
            best_start, best_key = start, key
    start, end = best_start, min(len(flat), best_start + width)
    if start > 0:  # cut at a word boundary, never inside a match
        space = flat.find(" ", start, start + 30)
        if space != -1 and not any(ms < space + 1 < me for ms, me, _ in matches):
            start = space + 1
    if end < len(flat):
        space = flat.rfind(" ", max(start, end - 30), end)
        if space > start:
            end = space
    body = flat[start:end].strip()
    offset = start + (len(flat[start:end]) - len(flat[start:end].lstrip()))
    prefix = ELLIPSIS + " " if start > 0 else ""
    suffix = " " + ELLIPSIS if end < len(flat) else ""
    shift = len(prefix) - offset
    spans = [
        (s + shift, e + shift) for s, e, _ in matches if s >= offset and e <= offset + len(body)
    ]
    return Snippet(prefix + body + suffix, _merge(spans))


def mark(text: str, highlights: Sequence[tuple[int, int]], *, before: str = "**",
         after: str = "**") -> str:  # fmt: skip
    """``text`` with each highlighted range wrapped in ``before``/``after``."""
    out: list[str] = []
    pos = 0
    for s, e in _merge(highlights):
        out.append(text[pos:s])
        out.append(f"{before}{text[s:e]}{after}")
        pos = e
    out.append(text[pos:])
    return "".join(out)
