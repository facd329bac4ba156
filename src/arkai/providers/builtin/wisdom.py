"""``extract_wisdom`` and ``summarize``: extractive, from the same centrality ranking as claims.

- ``one_sentence_takeaway``: the most central claim — of the best-ranked candidates, the one
  whose claim score (TextRank centrality, see :mod:`.claims`) times its TF-IDF cosine to the
  whole transcript's centroid is highest (see :func:`central_order`).
- ``summary``: 2–4 more of the best-ranked sentences (2 under 500 words, 4 from 5,000), never the
  takeaway: it leads with the one closest to the centroid — what the talk is about, not its
  greeting — and goes on in document order.
- ``ideas``: the most central remaining sentences.
- ``insights``: sentences with a contrast or causal marker (because, the reason, turns out,
  however, instead, which means …).
- ``facts``: sentences with a number, a date or a proper name.
- ``quotes``: striking short sentences (6–18 words), verbatim.
- ``references``: the organisations and products (spaCy NER, see :mod:`.entities`) mentioned,
  most mentioned first; empty, with a warning, when the spaCy model is not installed.

Section sizes grow with the transcript's length (see :func:`_sizes`). No sentence appears twice
in an item: not in two of takeaway / summary / ideas / insights / facts / quotes, and no two
chosen sentences are near-duplicates (cosine > 0.8). List items are in document order.

``summarize`` gives ``summary`` (as above, its lead first) and ``points``: the 5–10 most central
sentences that are not in the summary.
Variables ``max_items`` (wisdom lists) and ``max_points`` (summary points), when given, lower
the sizes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from arkai.core.grammar import strip_prefix
from arkai.providers.base import ProviderError
from arkai.providers.builtin.claims import Candidate, Ranking, rank_units, word_limits
from arkai.providers.builtin.text import (
    DATE,
    clean_claim,
    has_name_hint,
    has_number,
    positive_int,
    word_count,
)

MAX_REFERENCES = 15
SECTION_FLOOR = 0.15
"""Insights, facts and quotes may use sentences down to this share of the best score."""
INSIGHT = re.compile(
    r"\b(?:because|the reason|turns out|turned out|however|instead|rather than|which means|"
    r"that's why|this means|the key|the trick|the lesson|the problem is|the difference|"
    r"what matters|in fact|the catch|unless|although|even though|the point is)\b",
    re.IGNORECASE,
)


def _clamp(value: float, low: int, high: int) -> int:
    return max(low, min(high, int(value)))


def _sizes(words: int, variables: Mapping[str, Any] | None = None) -> dict[str, int]:
    """Items per section for a transcript of ``words`` words; ``max_items`` / ``max_points``
    variables, when given, lower the list sizes."""
    variables = variables or {}
    sizes = {
        "summary": 2 if words < 500 else 3 if words < 5000 else 4,
        "ideas": _clamp(words / 300, 5, 15),
        "insights": _clamp(words / 600, 3, 8),
        "facts": _clamp(words / 500, 3, 10),
        "quotes": _clamp(words / 1000, 3, 6),
        "points": _clamp(words / 300, 5, 10),
    }
    max_items = positive_int(variables.get("max_items"))
    if max_items is not None:
        for key in ("ideas", "insights", "facts", "quotes"):
            sizes[key] = min(sizes[key], max_items)
    max_points = positive_int(variables.get("max_points"))
    if max_points is not None:
        sizes["points"] = min(sizes["points"], max_points)
    return sizes


def fallback_summary(text: str, ranking: Ranking) -> str:
    """A non-empty summary when no sentence qualifies: the best candidate, else the first
    units of the text, else its first line (headings and prefixes stripped)."""
    if ranking.candidates:
        return sentence(ranking.candidates[0].claim)
    if ranking.units:
        words = " ".join(sentence(clean_claim(u.text)) for u in ranking.units[:3]).split()
        return " ".join(words[:60])
    for line in text.splitlines():
        body = strip_prefix(line.strip()).strip()
        if body:
            return body[:200]
    return "The input has no text."


def sentence(text: str) -> str:
    return text if text[-1:] in '.!?…"”’)' else text + "."


def _joined(cands: list[Candidate], ranking: Ranking | None = None) -> str:
    """The sentences in document order; with ``ranking``, the most central one leads."""
    ordered = sorted(cands, key=lambda c: c.unit.index)
    if ranking is not None and ordered:
        lead = central_order(ranking, ordered)[0]
        ordered = [lead, *(c for c in ordered if c is not lead)]
    return " ".join(sentence(c.claim) for c in ordered)


def central_order(
    ranking: Ranking, cands: list[Candidate], *, weigh_score: bool = False
) -> list[Candidate]:
    """``cands`` by cosine similarity to the centroid of all the transcript's units (the
    sentence that best stands for the whole) — times the claim score with ``weigh_score`` —
    ties by score; by score alone without vocabulary."""
    if not cands:
        return []
    if ranking.matrix is None:
        return sorted(cands, key=lambda c: (-c.score, c.unit.index))
    centroid = np.asarray(ranking.matrix.mean(axis=0), dtype=np.float64).ravel()
    norm = float(np.linalg.norm(centroid))
    rows = ranking.matrix[[c.unit.index for c in cands]]
    sims = np.asarray(rows @ centroid, dtype=np.float64).ravel() / (norm or 1.0)
    if weigh_score:
        sims = sims * np.array([c.score for c in cands], dtype=np.float64)
    order = sorted(range(len(cands)), key=lambda i: (-round(float(sims[i]), 9), -cands[i].score))
    return [cands[i] for i in order]


def takeaway_and_summary(ranking: Ranking, size: int) -> tuple[Candidate | None, list[Candidate]]:
    """The takeaway — of the best-ranked candidates, the one whose claim score times closeness
    to the centroid is highest — and ``size`` others for the summary."""
    pool = ranking.select(max(3 * size, 8))
    if not pool:
        return None, []
    takeaway = central_order(ranking, pool, weigh_score=True)[0]
    return takeaway, ranking.select(size, taken=[takeaway])


def _items(cands: list[Candidate]) -> list[dict[str, str]]:
    ordered = sorted(cands, key=lambda c: c.unit.index)
    return [{"text": c.claim, "quote": c.unit.text} for c in ordered]


def _is_fact(cand: Candidate) -> bool:
    text = cand.unit.text
    return has_number(text) or bool(DATE.search(text)) or has_name_hint(cand.claim)


def _is_striking(cand: Candidate) -> bool:
    n = word_count(cand.unit.text)
    return 6 <= n <= 18 and (cand.unit.kind != "sentence" or cand.unit.text[-1:] in ".!")


def _pick(
    ranking: Ranking, limit: int, taken: list[Candidate], test: Callable[[Candidate], bool]
) -> list[Candidate]:
    pool = [c for c in ranking.candidates if test(c)]
    chosen = ranking.select(limit, pool=pool, taken=taken, floor=SECTION_FLOOR)
    taken.extend(chosen)
    return chosen


def extract_wisdom(text: str, variables: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The ``extract_wisdom`` output for ``text`` and any warnings."""
    lo, hi = word_limits(variables)
    ranking = rank_units(text, min_words=lo, max_words=hi)
    sizes = _sizes(ranking.words, variables)
    takeaway, summary = takeaway_and_summary(ranking, sizes["summary"])
    taken: list[Candidate] = [*summary, *([takeaway] if takeaway else [])]
    ideas = _pick(ranking, sizes["ideas"], taken, lambda c: True)
    insights = _pick(ranking, sizes["insights"], taken, lambda c: bool(INSIGHT.search(c.claim)))
    facts = _pick(ranking, sizes["facts"], taken, _is_fact)
    quotes = _pick(ranking, sizes["quotes"], taken, _is_striking)
    warnings: list[str] = []
    references: list[str] = []
    if text.strip():
        try:
            from arkai.providers.builtin.entities import named_references

            references = named_references(text)[:MAX_REFERENCES]
        except ProviderError as exc:
            warnings.append(f"references left empty: {exc}")
    summary_text = _joined(summary, ranking) or fallback_summary(text, ranking)
    value = {
        "summary": summary_text,
        "ideas": _items(ideas),
        "insights": _items(insights),
        "quotes": [c.unit.text for c in sorted(quotes, key=lambda c: c.unit.index)],
        "facts": _items(facts),
        "references": references,
        "one_sentence_takeaway": sentence(takeaway.claim) if takeaway else summary_text,
    }
    return value, warnings


def summarize(text: str, variables: Mapping[str, Any]) -> dict[str, Any]:
    """The ``summarize`` output for ``text``."""
    lo, hi = word_limits(variables)
    ranking = rank_units(text, min_words=lo, max_words=hi)
    sizes = _sizes(ranking.words, variables)
    summary = ranking.select(sizes["summary"])
    points = ranking.select(sizes["points"], taken=summary)
    return {
        "summary": _joined(summary, ranking) or fallback_summary(text, ranking),
        "points": _items(points),
    }
