"""``extract_claims``: salient declarative sentences, chosen by TF-IDF centrality, quoted verbatim.

Every unit of the transcript (sentence, or clause window for unpunctuated captions; see
:mod:`.text`) becomes a TF-IDF vector (scikit-learn ``TfidfVectorizer``'s, made by
:func:`.tfidf.tfidf_matrix` without importing it; sublinear term frequency, light stemming,
stop words and filler removed). A unit's centrality is the mean of two normalised scores:
cosine similarity to the document centroid, and TextRank (PageRank over the graph of units at
most :data:`WINDOW` units apart, so memory and time grow linearly with the input). It is
then weighted by hints: numbers and proper names (+), length near 10–30 words, an early
position (+, slight), hesitation openers, filler, a leading pronoun that needs context, and a
personal story with no number in it (−), even one that names things.

Candidates are declarative (no questions), not greetings, thanks or sign-offs, not meta talk,
narration of on-screen steps, talk addressed to the other speaker, hedges or caption restarts
(:mod:`.worth`), within the word limits, with at least three content words, and not the broken
halves of a sentence that the captioner cut with a full stop ("… a paying gig for." / "Media
and it's working …"). Selection
is greedy by score with a diversity penalty (maximal marginal relevance); a unit scoring under
0.35 of the best one, or whose cosine similarity to one already chosen exceeds 0.8, is never
chosen. Output is in document order; ``confidence`` is 0.5–0.95, the score relative to the best
candidate.

How many follows the content: up to 35 % of the candidates (a dense lecture has many, a chatty
podcast few) or five, whichever is more; at most one per 30 words and at most
``options["variables"]["max_claims"]`` (a positive integer or a string of one; absent, ``0``
or ``"auto"``: 100).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

from arkai.providers.builtin.standalone import standalone
from arkai.providers.builtin.text import (
    HESITATION,
    Unit,
    build_units,
    clean_claim,
    content_words,
    density,
    disfluency,
    ends_dangling,
    ends_strongly_dangling,
    has_name_hint,
    has_number,
    is_question,
    is_social,
    looks_like_question,
    positive_int,
    split_lines,
    tokens,
    topic_words,
    word_count,
)
from arkai.providers.builtin.tfidf import tfidf_matrix
from arkai.providers.builtin.worth import filler_reason

MAX_AUTO_CLAIMS = 100
"""The cap when ``max_claims`` is absent, ``0`` or ``"auto"``."""
WORDS_PER_CLAIM = 30
"""At most one claim per this many words of input."""
CANDIDATE_SHARE = 0.35
"""Report up to this share of the units that pass the claim filters …"""
MIN_CLAIMS = 5
"""… or up to this many, when there are that many candidates (a short dense note)."""
NEAR_DUPLICATE = 0.8
SAME_WORDS = 0.6
"""A near-duplicate merged into a claim also shares this share of all its words (Jaccard):
TF-IDF cosine alone finds short sentences that merely share a rare term."""
DIVERSITY = 0.35
MIN_RELATIVE_SCORE = 0.35
"""Candidates scoring under this share of the best one are never chosen."""
_PRONOUN_START = re.compile(
    r"^(?:it|this|that|these|those|they|he|she|him|her|them|there|here)\b(?!-)", re.IGNORECASE
)
_ANECDOTE = re.compile(
    r"\b(?:i|we|he|she|they)\s+(?:was|were|had|did|went|got|just|ended|started|took|felt|"
    r"thought|remember|said|told|tried|wanted|came|saw|met|decided|think|feel|guess|love)\b",
    re.IGNORECASE,
)
_GENERAL = re.compile(
    r"\b(?:is|are|means|has|have|can|cannot|can't|will|should|must|need|needs|returns|gives|"
    r"makes|lets|allows|uses|called|equals|tends|depends|requires|works)\b",
    re.IGNORECASE,
)
ANECDOTE_FACTOR = 0.6
_DAMPING = 0.85
WINDOW = 512
"""TextRank links units at most this many units apart (a ten-minute talk has ~150): the graph,
and so memory, grows linearly with the length of the input."""
_ITERATIONS = 40

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Candidate:
    """A unit that may be reported, with its cleaned claim text and score."""

    unit: Unit
    claim: str
    score: float


@dataclass
class Ranking:
    """Units of one transcript, their TF-IDF rows and the scored candidates (best first)."""

    text: str
    units: list[Unit]
    words: int
    matrix: Any = None
    """L2-normalised TF-IDF rows (scipy CSR), one per unit; ``None`` without vocabulary."""
    candidates: list[Candidate] = field(default_factory=list)

    @property
    def best_score(self) -> float:
        return self.candidates[0].score if self.candidates else 0.0

    def confidence(self, cand: Candidate) -> float:
        best = self.best_score
        value = 0.5 + 0.45 * (cand.score / best if best > 0 else 0.0)
        return round(min(0.95, max(0.5, value)), 3)

    def select(
        self,
        limit: int,
        *,
        pool: Iterable[Candidate] | None = None,
        taken: Iterable[Candidate] = (),
        diversity: float = DIVERSITY,
        floor: float = MIN_RELATIVE_SCORE,
    ) -> list[Candidate]:
        """Up to ``limit`` of ``pool`` (default: all candidates) by score with a diversity
        penalty; never one with cosine > 0.8 to a chosen or ``taken`` candidate, nor the same
        text twice, nor one scoring under ``floor`` times the best candidate's score.
        Returned best first."""
        items = list(self.candidates if pool is None else pool)
        if limit <= 0 or not items:
            return []
        items.sort(key=lambda c: (-c.score, c.unit.index))
        chosen: list[Candidate] = []
        texts = {_norm(c.unit.text) for c in taken}
        rows = [c.unit.index for c in items]
        sims = np.zeros(len(items), dtype=np.float64)
        scores = np.array([c.score for c in items], dtype=np.float64)
        alive = scores >= floor * self.best_score
        for prior in taken:
            sims = np.maximum(sims, self._similarities(rows, prior.unit.index))
        while len(chosen) < limit:
            alive &= sims <= NEAR_DUPLICATE
            if not alive.any():
                break
            value = np.where(alive, scores * (1.0 - diversity * sims), -np.inf)
            pick = int(np.argmax(value))  # first maximum: ties go to the earlier-sorted item
            alive[pick] = False
            cand = items[pick]
            key = _norm(cand.unit.text)
            if key in texts:
                continue
            texts.add(key)
            chosen.append(cand)
            sims = np.maximum(sims, self._similarities(rows, cand.unit.index))
        return chosen

    def near_duplicates(self, chosen: list[Candidate]) -> list[list[Candidate]]:
        """For each of ``chosen``, the other candidates that say the same thing (cosine over
        :data:`NEAR_DUPLICATE` and at least :data:`SAME_WORDS` of their words shared, a
        different text), in document order; each is merged into the most similar chosen
        claim only."""
        merged: list[list[Candidate]] = [[] for _ in chosen]
        if self.matrix is None or not chosen:
            return merged
        taken = {c.unit.index for c in chosen}
        texts = {_norm(c.unit.text) for c in chosen}
        rest = [c for c in self.candidates if c.unit.index not in taken]
        if not rest:
            return merged
        sims = (
            self.matrix[[c.unit.index for c in rest]]
            @ self.matrix[[c.unit.index for c in chosen]].T
        )
        dense = np.round(np.asarray(sims.toarray(), dtype=np.float64), 6)
        for row, cand in enumerate(rest):
            best = int(np.argmax(dense[row]))
            key = _norm(cand.unit.text)
            if (
                dense[row, best] > NEAR_DUPLICATE
                and key not in texts
                and _overlap(cand.unit.text, chosen[best].unit.text) >= SAME_WORDS
            ):
                texts.add(key)
                merged[best].append(cand)
        for group in merged:
            group.sort(key=lambda c: c.unit.index)
        return merged

    def _similarities(self, rows: list[int], index: int) -> FloatArray:
        if self.matrix is None:
            return np.zeros(len(rows), dtype=np.float64)
        col = self.matrix[rows] @ self.matrix[index].T
        return np.round(np.asarray(col.toarray(), dtype=np.float64).ravel(), 6)


def _overlap(a: str, b: str) -> float:
    """Jaccard overlap of the word sets of ``a`` and ``b``."""
    wa, wb = set(tokens(a)), set(tokens(b))
    return len(wa & wb) / len(wa | wb) if wa or wb else 0.0


def _norm(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def _analyzer(text: str) -> list[str]:
    return topic_words(text)


def is_candidate(
    unit: Unit,
    cleaned: str,
    *,
    min_words: int,
    max_words: int,
    captions: bool,
    dialogue: bool = False,
) -> bool:
    """Whether ``unit`` may be reported as a claim (see the module doc)."""
    n = word_count(unit.text)
    lo = max(min_words, 8) if unit.kind == "window" else min_words
    if not (lo <= n <= max_words) or word_count(cleaned) < min(lo, 5):
        return False
    if unit.role in ("tool", "system"):
        return False
    if is_question(unit.text) or "?" in unit.text[-4:]:
        return False
    if is_social(cleaned) or disfluency(unit.text) > 0.25 or looks_like_question(cleaned):
        return False
    if filler_reason(cleaned, dialogue=dialogue) is not None:
        return False
    if unit.kind != "window" and ends_dangling(unit.text):
        return False  # "... I have a paying gig for." — broken by the captioner
    if not captions and unit.kind != "window" and unit.text[:1].islower():
        return False  # a fragment continuing a sentence from the line before
    if not captions and unit.kind == "line" and unit.timed:
        return False  # a caption line cut mid-sentence
    return len(set(content_words(cleaned))) >= 3


def _hints(unit: Unit, cleaned: str, position: float) -> float:
    n = word_count(unit.text)
    factor = 1.0
    if n < 10:
        factor *= 0.6 + 0.04 * n
    elif n > 30:
        factor *= max(0.75, 1.0 - 0.015 * (n - 30))
    if has_number(unit.text):
        factor *= 1.1
    if has_name_hint(cleaned):
        factor *= 1.08
    factor *= 1.0 + 0.05 * (1.0 - position)
    if HESITATION.match(unit.text):
        factor *= 0.8
    factor *= 1.0 - min(0.6, 2.5 * disfluency(unit.text))
    if _PRONOUN_START.match(cleaned):
        factor *= 0.9
    if unit.kind == "line":
        factor *= 0.9
    if unit.edge:
        factor *= 0.85
    factor *= 0.7 + 0.6 * min(0.5, density(cleaned))  # chatter says little per word
    if not has_number(unit.text):
        if _ANECDOTE.search(cleaned):
            factor *= ANECDOTE_FACTOR  # a personal story with no figure to check
        elif not (has_name_hint(cleaned) or _GENERAL.search(cleaned)):
            factor *= 0.85
    return factor


def local_similarity(matrix: Any, window: int = WINDOW) -> Any:
    """Cosine similarities between units at most ``window`` units apart (zero diagonal), as a
    sparse matrix built block by block: memory grows with ``n * window``, not ``n * n``."""
    from scipy.sparse import coo_matrix

    n = matrix.shape[0]
    rows: list[npt.NDArray[np.int64]] = []
    cols: list[npt.NDArray[np.int64]] = []
    vals: list[FloatArray] = []
    for a in range(0, n, window):
        b = min(n, a + window)
        lo, hi = max(0, a - window), min(n, b + window)
        block = (matrix[a:b] @ matrix[lo:hi].T).tocoo()
        r = block.row.astype(np.int64) + a
        c = block.col.astype(np.int64) + lo
        keep = (np.abs(r - c) <= window) & (r != c)
        rows.append(r[keep])
        cols.append(c[keep])
        vals.append(np.asarray(block.data[keep], dtype=np.float64))
    sim = coo_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n, n)
    )
    return sim.tocsr()


def _textrank(matrix: Any) -> FloatArray:
    """PageRank over the graph of units within :data:`WINDOW` of each other."""
    n = matrix.shape[0]
    sim = local_similarity(matrix)
    sim.eliminate_zeros()
    out_weight = np.asarray(sim.sum(axis=1), dtype=np.float64).ravel()
    dangling = out_weight == 0
    inv = np.where(dangling, 0.0, 1.0 / np.where(dangling, 1.0, out_weight))
    transition = sim.multiply(inv[:, None]).tocsr().T.tocsr()
    rank = np.full(n, 1.0 / n)
    for _ in range(_ITERATIONS):
        leak = rank[dangling].sum() / n
        rank = (1.0 - _DAMPING) / n + _DAMPING * (transition @ rank + leak)
    return np.asarray(rank, dtype=np.float64)


def rank_units(text: str, *, min_words: int = 6, max_words: int = 45) -> Ranking:
    """Score every claim-like unit of ``text`` (see the module doc). The last few rankings
    are cached: ``extract_claims``, ``extract_wisdom`` and ``summarize`` share one."""
    return _rank_cached(text, min_words, max_words)


@lru_cache(maxsize=4)
def _rank_cached(text: str, min_words: int, max_words: int) -> Ranking:
    lines = split_lines(text)
    units = build_units(text, lines)
    words = sum(word_count(u.text) for u in units)
    ranking = Ranking(text, units, words)
    if not units:
        return ranking
    captions = any(u.kind == "window" for u in units)
    dialogue = len({ln.speaker for ln in lines if ln.speaker}) >= 2
    try:
        matrix, _terms = tfidf_matrix([_analyzer(u.text) for u in units], sublinear_tf=True)
    except ValueError:  # no vocabulary at all
        return ranking
    ranking.matrix = matrix
    centroid = np.asarray(matrix.mean(axis=0), dtype=np.float64).ravel()
    norm = float(np.linalg.norm(centroid))
    central = np.asarray(matrix @ (centroid / norm), dtype=np.float64).ravel() if norm else None
    textrank = _textrank(matrix)
    cands: list[Candidate] = []
    scored: list[tuple[Unit, str]] = []
    broken = False
    for unit in units:
        cleaned = clean_claim(unit.text)
        follows_break = broken
        broken = unit.kind != "window" and ends_strongly_dangling(unit.text)
        if follows_break and unit.kind != "window":
            continue  # the rest of a sentence the captioner broke with a full stop
        if is_candidate(
            unit,
            cleaned,
            min_words=min_words,
            max_words=max_words,
            captions=captions,
            dialogue=dialogue,
        ):
            scored.append((unit, cleaned))
    if not scored:
        return ranking
    idx = [u.index for u, _ in scored]
    parts = [textrank[idx]]
    if central is not None:
        parts.append(central[idx])
    combined = np.zeros(len(idx), dtype=np.float64)
    for part in parts:
        top = float(part.max())
        if top > 0:
            combined += part / top / len(parts)
    total = max(1, len(units) - 1)
    for (unit, cleaned), base in zip(scored, combined, strict=True):
        score = float(base) * _hints(unit, cleaned, unit.index / total)
        previous = [
            clean_claim(units[i].text)
            for i in range(unit.index - 1, max(-1, unit.index - 3), -1)
            if unit.line - units[i].line <= 2
        ]
        claim = standalone(cleaned, previous, lines[unit.line - 1].speaker)
        cands.append(Candidate(unit, claim, round(score, 6)))
    cands.sort(key=lambda c: (-c.score, c.unit.index))
    ranking.candidates = cands
    return ranking


def claim_limit(variables: Mapping[str, Any], words: int, candidates: int) -> int:
    """How many claims to report: a share of the units that read as claims (so the count
    follows the content), at most one per ``WORDS_PER_CLAIM`` words, and at most
    ``max_claims`` (a positive integer; absent, ``0`` or ``"auto"``: ``MAX_AUTO_CLAIMS``)."""
    cap = positive_int(variables.get("max_claims")) or MAX_AUTO_CLAIMS
    by_content = max(math.ceil(candidates * CANDIDATE_SHARE), min(candidates, MIN_CLAIMS))
    by_length = max(MIN_CLAIMS, words // WORDS_PER_CLAIM)
    return min(cap, by_content, by_length)


def word_limits(variables: Mapping[str, Any]) -> tuple[int, int]:
    lo = positive_int(variables.get("min_words")) or 6
    hi = positive_int(variables.get("max_words")) or 45
    return lo, max(lo, hi)


def extract_claims(text: str, variables: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ``extract_claims`` output for ``text``: the chosen claims in document order, each
    followed by the near-duplicates merged into it (same ``claim``, their own quotes)."""
    lo, hi = word_limits(variables)
    ranking = rank_units(text, min_words=lo, max_words=hi)
    chosen = ranking.select(claim_limit(variables, ranking.words, len(ranking.candidates)))
    chosen.sort(key=lambda c: c.unit.index)
    out: list[dict[str, Any]] = []
    for cand, echoes in zip(chosen, ranking.near_duplicates(chosen), strict=True):
        for item in (cand, *echoes):
            out.append(
                {
                    "claim": cand.claim,
                    "quote": item.unit.text,
                    "confidence": ranking.confidence(cand),
                }
            )
    return out
