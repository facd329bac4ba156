"""Re-find a stale span after a transcript edit (V1.1 ``reanchor``; labelled, never silent).

Order of attempts: the quote verbatim (choosing, among several matches, the one whose
surroundings best match the stored ``anchor_text``); then the anchor text to find the region
and a fuzzy match of the quote inside it. Only the verbatim quote gives ``resolved`` /
``ambiguous``; a fuzzy find is a *suggestion* (``reanchored_fuzzy``) that is never counted as
valid until a person accepts it. When nothing is good enough the line becomes ``unresolved`` —
it is kept, never dropped.
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher

from rapidfuzz import fuzz

from arkai.core.document import Document
from arkai.core.fuzzy import DEFAULT_THRESHOLD, fuzzy_find
from arkai.core.hashing import digest
from arkai.core.resolve import Match, all_occurrences, make_span
from arkai.model.evidence import Resolution, Span
from arkai.model.status import (
    AMBIGUOUS,
    METHOD_NONE,
    METHOD_REANCHOR,
    REANCHORED_FUZZY,
    REASON_MULTIPLE,
    REASON_NO_MATCH,
    RESOLVED,
    UNRESOLVED,
)


def _context_score(doc: Document, start: int, end: int, anchor: str | None) -> float:
    if not anchor:
        return 0.0
    return float(fuzz.ratio(doc.anchor(start, end, len(anchor)), anchor))


def reanchor_quote(
    doc: Document,
    quote: str,
    old: Span | None,
    *,
    threshold: float = DEFAULT_THRESHOLD,
) -> Match:
    """Locate ``quote`` in the edited ``doc`` using the old span's anchor text."""
    needle = quote.encode("utf-8")
    artifact = old.artifact if old else "transcript.md"
    anchor = old.anchor_text if old else None
    hits = all_occurrences(doc.data, needle) if needle.strip() else []
    if hits:
        scores = [_context_score(doc, h, h + len(needle), anchor) for h in hits]
        best = max(range(len(hits)), key=lambda i: (scores[i], -i))
        start = hits[best]
        status = RESOLVED if len(hits) == 1 else AMBIGUOUS
        reason = None if len(hits) == 1 else REASON_MULTIPLE
        res = Resolution(status, METHOD_REANCHOR, len(hits), best + 1, reason, score=100.0)
        return Match(res, make_span(doc, start, start + len(needle), artifact, digest(needle)))
    text = doc.text
    window: tuple[int, int] | None = None
    if anchor:
        pos = text.find(anchor)
        if pos >= 0:
            window = (pos, pos + len(anchor))
        else:
            located = fuzzy_find(text, anchor, threshold=70.0)
            if located is not None:
                window = (located[0], located[1])
    if window is not None:
        margin = max(len(quote), 40)
        lo, hi = max(0, window[0] - margin), min(len(text), window[1] + margin)
        found = fuzzy_find(text[lo:hi], quote, threshold)
        if found is not None:
            cs, ce, score = found[0] + lo, found[1] + lo, found[2]
            start = len(text[:cs].encode("utf-8"))
            end = start + len(text[cs:ce].encode("utf-8"))
            res = Resolution(REANCHORED_FUZZY, METHOD_REANCHOR, 1, 1, None, score=score)
            return Match(res, make_span(doc, start, end, artifact))
    return Match(Resolution(UNRESOLVED, METHOD_NONE, 0, None, REASON_NO_MATCH), None)


_TOKENS = re.compile(r"\s+|\w+|[^\w\s]")


def word_diff(old: str, new: str) -> str:
    """``old`` → ``new`` as one line, word by word, git ``--word-diff`` style: removed words as
    ``[-…-]``, added ones as ``{+…+}`` (``builds are {+not +}reproducible``)."""
    a, b = _TOKENS.findall(old), _TOKENS.findall(new)
    out: list[str] = []
    for op, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append("".join(a[i1:i2]))
            continue
        if i2 > i1:
            out.append("[-" + "".join(a[i1:i2]) + "-]")
        if j2 > j1:
            out.append("{+" + "".join(b[j1:j2]) + "+}")
    return "".join(out)
