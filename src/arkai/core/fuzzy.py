"""Fuzzy quote location (V1.1, only behind ``--match-mode fuzzy``).

A quote that is not in the text verbatim is usually the text with a word or two changed. To find
where, without aligning the quote against every offset of a long transcript:

1. The text is split once into words (``\\w+``, case-folded); the positions of each word and
   of each pair of adjacent words are indexed (:class:`FuzzyIndex`, built on first use and
   cached on the ``Document``). Pairs are much rarer than words, so they anchor even a quote
   made only of common words.
2. Each word and word pair of the quote that occurs in the text votes for the word position
   where the quote would then start; entries with more than ``MAX_POSTINGS`` occurrences do not
   vote unless nothing rarer does. The ``MAX_CANDIDATES`` best separated positions are kept.
3. Each candidate is refined word by word (moving its first and last word) to the window whose
   ``rapidfuzz`` ``ratio`` with the case-folded quote is highest; the quote's leading and
   trailing punctuation is taken along when the text has it there too.
4. The best window is the answer when it passes :func:`_accept`: its score reaches the
   threshold, or it has the quote's words in order but for one changed, added or dropped word
   and scores at least ``100 - ONE_WORD_FACTOR * (100 - threshold)`` (65 at the default 90).
   One changed word costs a short quote many points — a 30-character quote with a six-letter
   word swapped scores about 80 — while unrelated text of any length rarely has all but one of a
   quote's words in order, so the word check carries short quotes that the score alone would
   lose, without grounding chance resemblances.

Texts of at most ``SMALL_TEXT`` code points are also aligned in full with
``partial_ratio_alignment``, which also finds quotes none of whose words survive intact.
Costs: building the index is one regex pass over the text; a search touches only the positions of
the quote's rarer words plus a few dozen short ``ratio`` calls, whatever the text's length.
"""

from __future__ import annotations

import re
from itertools import accumulate, pairwise

from rapidfuzz import fuzz
from rapidfuzz.distance import Indel

DEFAULT_THRESHOLD = 90.0
"""Minimum ``ratio`` (0–100, case-folded) between a quote and the text it is grounded on, for
quotes that differ from the text by more than one word (see ``_accept``)."""

SMALL_TEXT = 4096
"""Texts up to this many code points are also aligned against the quote in full."""

MAX_POSTINGS = 64
"""Words with more occurrences than this do not vote (unless the quote has nothing rarer)."""

MAX_CANDIDATES = 4
"""Start positions scored in full for each quote."""

ONE_WORD_MIN_WORDS = 4
"""Quotes with at least this many words may differ from the text by one word (see ``_accept``)."""

ONE_WORD_FACTOR = 3.5
"""A quote one word away from the text may score this many times further below 100."""

_WORD_RE = re.compile(r"\w+")
_SPLIT_RE = re.compile(r"(\w+)")
_LEAD_RE = re.compile(r"^\W+")
_TRAIL_RE = re.compile(r"\W+$")


def fold_case(text: str) -> str:
    """Lower-case ``text`` without changing its length, so offsets stay valid (``str.lower``
    lengthens a few letters, such as "İ"; those are kept as they are)."""
    low = text.lower()
    if len(low) == len(text):
        return low
    return "".join(lc if len(lc := c.lower()) == 1 else c for c in text)


class FuzzyIndex:
    """Word positions of one text, for repeated fuzzy searches in it."""

    __slots__ = ("_ends", "_folded", "_postings", "_starts", "_words", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        folded = fold_case(text)
        self._folded = folded
        # [gap, word, gap, word, ..., gap]: every offset follows from the running length sum,
        # without a match object per word.
        parts = _SPLIT_RE.split(folded)
        offsets = list(accumulate(map(len, parts), initial=0))
        self._starts = offsets[1:-1:2]
        self._ends = offsets[2::2]
        words = self._words = parts[1::2]
        postings: dict[str, list[int]] = {}
        setdefault = postings.setdefault
        for i, word in enumerate(words):
            setdefault(word, []).append(i)
        self._postings = postings

    def _pair_positions(self, a: str, b: str) -> list[int]:
        """Positions of word ``a`` directly followed by word ``b``."""
        pa, pb = self._postings.get(a), self._postings.get(b)
        if not pa or not pb:
            return []
        words = self._words
        if len(pa) <= len(pb):
            last = len(words) - 1
            return [p for p in pa if p < last and words[p + 1] == b]
        return [p - 1 for p in pb if p and words[p - 1] == a]

    def _candidates(self, words: list[str]) -> list[int]:
        """Word positions where the quote may start, most promising first."""
        # Adjacent pairs are far rarer than single words, so they anchor even a quote made of
        # common words; their positions come from the single-word table on demand.
        anchors: list[tuple[int, int, list[int]]] = []
        get_word = self._postings.get
        for i, word in enumerate(words):
            found = get_word(word)
            if found:
                anchors.append((len(found), i, found))
        for i, (a, b) in enumerate(pairwise(words)):
            found = self._pair_positions(a, b)
            if found:
                anchors.append((len(found), i, found))
        if not anchors:
            return []
        anchors.sort(key=lambda a: a[0])
        voting = [a for a in anchors if a[0] <= MAX_POSTINGS]
        if len(voting) < 3:
            voting = anchors[:3]
        votes: dict[int, int] = {}
        get = votes.get
        for _, i, found in voting:
            for p in found:
                d = p - i
                votes[d] = get(d, 0) + 1
        # A changed word can split one quote word into two (or merge two): count votes for
        # nearby starts together.
        scored = sorted(
            (-(n + get(d - 1, 0) + get(d + 1, 0) + get(d - 2, 0) + get(d + 2, 0)), d)
            for d, n in votes.items()
        )
        need = 2 if len(words) >= 4 and len(voting) >= 2 else 1
        gap = max(len(words), 4)
        chosen: list[int] = []
        for neg, d in scored:
            if -neg < need:
                break
            if any(abs(d - c) <= gap for c in chosen):
                continue
            chosen.append(d)
            if len(chosen) >= MAX_CANDIDATES:
                break
        return chosen

    def _window(self, s: int, e: int, lead: str, trail: str) -> tuple[int, int]:
        """Code point range of words ``s..e`` plus the quote's edge punctuation if present."""
        folded = self._folded
        cs, ce = self._starts[s], self._ends[e]
        if lead and folded[max(0, cs - len(lead)) : cs] == lead:
            cs -= len(lead)
        if trail and folded[ce : ce + len(trail)] == trail:
            ce += len(trail)
        return cs, ce

    def _refine(self, q: str, n: int, d: int, lead: str, trail: str) -> tuple[float, int, int]:
        """Best (score, start, end) for a quote of ``n`` words assumed to start at word ``d``."""
        folded = self._folded
        last = len(self._starts) - 1
        ratio = fuzz.ratio
        s0 = min(max(d, 0), last)
        e0 = min(max(d + n - 1, s0), last)

        def score(s: int, e: int) -> float:
            cs, ce = self._window(s, e, lead, trail)
            return float(ratio(q, folded[cs:ce]))

        best_e, best = e0, score(s0, e0)
        for e in range(max(s0, e0 - 2), min(last, e0 + 3) + 1):
            if e != e0 and (sc := score(s0, e)) > best:
                best, best_e = sc, e
        best_s = s0
        for s in range(max(0, s0 - 2), min(best_e, s0 + 2) + 1):
            if s != s0 and (sc := score(s, best_e)) > best:
                best, best_s = sc, s
        cs, ce = self._window(best_s, best_e, lead, trail)
        return best, cs, ce

    def find(
        self, quote: str, threshold: float = DEFAULT_THRESHOLD
    ) -> tuple[int, int, float] | None:
        """Best approximate occurrence of ``quote`` as (code point start, end, score 0–100).

        ``None`` when no window reaches ``threshold`` (see the module docstring).
        """
        q = fold_case(quote.strip())
        if not q or not self.text:
            return None
        words = _WORD_RE.findall(q)
        best: tuple[float, int, int] | None = None
        if words and self._starts:
            lead_m, trail_m = _LEAD_RE.search(q), _TRAIL_RE.search(q)
            lead = lead_m.group() if lead_m else ""
            trail = trail_m.group() if trail_m else ""
            for d in self._candidates(words):
                found = self._refine(q, len(words), d, lead, trail)
                if (
                    best is None
                    or found[0] > best[0]
                    or (found[0] == best[0] and found[1] < best[1])
                ):
                    best = found
        if len(self.text) <= SMALL_TEXT:
            al = fuzz.partial_ratio_alignment(q, self._folded)
            if al is not None and (best is None or al.score > best[0]):
                best = (float(al.score), al.dest_start, al.dest_end)
        if best is None or not _accept(words, self._folded[best[1] : best[2]], best[0], threshold):
            return None
        return best[1], best[2], best[0]


def _accept(words: list[str], window: str, score: float, threshold: float) -> bool:
    """Whether ``window`` (folded), whose ratio with the quote is ``score``, grounds the quote.

    ``words`` are the quote's folded words. See step 4 of the module docstring.
    """
    if score >= threshold:
        return True
    if len(words) < ONE_WORD_MIN_WORDS or score < 100.0 - ONE_WORD_FACTOR * (100.0 - threshold):
        return False
    found = _WORD_RE.findall(window)
    common = (len(words) + len(found) - Indel.distance(words, found)) // 2
    # At most one quote word missing and at most one window word extra.
    return len(words) - common <= 1 and len(found) - common <= 1


_LAST: list[FuzzyIndex] = []


def fuzzy_find(
    text: str, quote: str, threshold: float = DEFAULT_THRESHOLD
) -> tuple[int, int, float] | None:
    """Best approximate occurrence of ``quote`` in ``text`` as (char start, char end, score).

    Returns ``None`` when no alignment reaches ``threshold`` (0–100). The index of the last text
    searched is kept, so repeated searches in one text pay for it once.
    """
    if _LAST and _LAST[0].text is text:
        index = _LAST[0]
    else:
        index = FuzzyIndex(text)
        _LAST[:] = [index]
    return index.find(quote, threshold)
