"""Fuzzy quote location (V1.1, only behind ``--match-mode fuzzy``).

A quote that is not in the text verbatim is usually the text with a word or two changed. To find
where, without aligning the quote against every offset of a long transcript:

1. The text is split once into words (``\\w+``, lower-cased) and each word's positions are
   indexed (:class:`FuzzyIndex`, built on first use and cached on the ``Document``).
2. Each word of the quote that occurs in the text votes for the word position where the quote
   would then start; words too common to be informative are skipped. A few well-separated
   positions with the most votes are the candidates.
3. Each candidate is refined word by word (moving its first and last word) to the window whose
   ``rapidfuzz`` ``ratio`` with the quote, case-folded, is highest; the quote's leading and
   trailing punctuation is taken along when the text has it too.
4. The best window is returned when its score reaches the threshold. A quote's score can only
   be compared with a threshold fairly if length does not skew it, so short quotes — where one
   changed word costs many points, and where chance resemblance is higher — must also have most
   of their words in place (see :func:`_accept`).

Short texts (at most ``SMALL_TEXT`` code points) are additionally aligned in full with
``partial_ratio_alignment``, which also catches quotes whose words are all misspelt.
"""

from __future__ import annotations

import re

from rapidfuzz import fuzz

DEFAULT_THRESHOLD = 90.0
"""Minimum ``ratio`` (0–100, case-folded) between a quote and the text it is grounded on."""

SMALL_TEXT = 4096
"""Texts up to this many code points are also aligned against the quote in full."""

MAX_POSTINGS = 64
"""Words with more occurrences than this do not vote (unless the quote has nothing rarer)."""

MAX_CANDIDATES = 4
"""Start positions scored in full for each quote."""

_WORD_RE = re.compile(r"\w+")
_LEAD_RE = re.compile(r"^\W+")
_TRAIL_RE = re.compile(r"\W+$")


def _fold(text: str) -> str:
    """Lower-case ``text`` without changing its length (so indexes stay valid)."""
    low = text.lower()
    if len(low) == len(text):
        return low
    return "".join(lc if len(lc := c.lower()) == 1 else c for c in text)


class FuzzyIndex:
    """Word positions of one text, for repeated fuzzy searches in it."""

    __slots__ = ("_ends", "_folded", "_postings", "_starts", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        folded = _fold(text)
        self._folded = folded
        spans = [m.span() for m in _WORD_RE.finditer(folded)]
        self._starts = [s for s, _ in spans]
        self._ends = [e for _, e in spans]
        words = _WORD_RE.findall(folded)
        # Single words and adjacent pairs ("a b"; no word contains a space) share one table.
        # Pairs are far rarer than words, so they still anchor a quote made of common words.
        postings: dict[str, list[int]] = {}
        get = postings.get
        for keys in (words, [f"{a} {b}" for a, b in zip(words, words[1:], strict=False)]):
            for i, key in enumerate(keys):
                found = get(key)
                if found is None:
                    postings[key] = [i]
                else:
                    found.append(i)
        self._postings = postings

    def _candidates(self, words: list[str]) -> list[int]:
        """Word positions where the quote may start, most promising first."""
        keys = words + [f"{a} {b}" for a, b in zip(words, words[1:], strict=False)]
        anchors: list[tuple[int, int, list[int]]] = []
        for k, key in enumerate(keys):
            found = self._postings.get(key)
            if found:
                i = k if k < len(words) else k - len(words)
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
        q = _fold(quote.strip())
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
        if best is None or not _accept(
            q, words, self._folded[best[1] : best[2]], best[0], threshold
        ):
            return None
        return best[1], best[2], best[0]


def _accept(q: str, words: list[str], window: str, score: float, threshold: float) -> bool:
    """Whether a window scoring ``score`` grounds the (folded) quote ``q``."""
    return score >= threshold


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
