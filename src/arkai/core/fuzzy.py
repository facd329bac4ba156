"""Fuzzy quote location (V1.1, only behind ``--match-mode fuzzy``)."""

from __future__ import annotations

from rapidfuzz import fuzz

DEFAULT_THRESHOLD = 90.0


def fuzzy_find(text: str, quote: str, threshold: float = DEFAULT_THRESHOLD) -> tuple[int, int, float] | None:
    """Best approximate occurrence of ``quote`` in ``text`` as (char start, char end, score).

    Returns ``None`` when no alignment reaches ``threshold`` (0–100).
    """
    if not quote.strip() or not text:
        return None
    al = fuzz.partial_ratio_alignment(quote, text, score_cutoff=threshold)
    if al is None or al.score < threshold:
        return None
    return al.dest_start, al.dest_end, float(al.score)
