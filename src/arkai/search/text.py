"""Text normalisation shared by every lexical component (DESIGN §7).

``tokenize(text)`` lower-cases, splits into Unicode word runs (letters and digits, so
``"il-6"`` gives ``["il", "6"]``), drops English stopwords and Snowball-stems what is left
(PyStemmer, English). Stems are memoised per process, so tokenising a large corpus costs
one dictionary lookup per word after the first sight of it.
"""

from __future__ import annotations

import re
from typing import Any

import Stemmer

__all__ = ["STOPWORDS", "stem", "tokenize", "words"]

# A hand-written list of common English function words: articles, pronouns, auxiliaries,
# prepositions, conjunctions and a few frequent adverbs. Negations ("no", "not", "nor") are
# kept out of it on purpose: they carry meaning in claims and questions.
STOPWORDS: frozenset[str] = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "also",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "done",
        "down",
        "during",
        "each",
        "either",
        "else",
        "etc",
        "ever",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "however",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "let",
        "may",
        "me",
        "might",
        "more",
        "most",
        "must",
        "my",
        "myself",
        "neither",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "ought",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "shall",
        "she",
        "should",
        "since",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "therefore",
        "these",
        "they",
        "this",
        "those",
        "though",
        "through",
        "thus",
        "to",
        "too",
        "under",
        "until",
        "up",
        "upon",
        "us",
        "very",
        "via",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "whether",
        "which",
        "while",
        "who",
        "whom",
        "whose",
        "why",
        "will",
        "with",
        "within",
        "without",
        "would",
        "yet",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "s",
        "t",
        "d",
        "ll",
        "m",
        "re",
        "ve",
    ]
)

_WORD = re.compile(r"\w+")
_STEMMER: Any = Stemmer.Stemmer("english")


_STEMS: dict[str, str] = {}
_MAX_STEMS = 1 << 20  # the memo is dropped and restarted past this many distinct words


def stem(word: str) -> str:
    """The Snowball English stem of an already lower-cased ``word`` (memoised)."""
    s = _STEMS.get(word)
    if s is None:
        if len(_STEMS) >= _MAX_STEMS:
            _STEMS.clear()
        s = _STEMS[word] = str(_STEMMER.stemWord(word))
    return s


def words(text: str) -> list[str]:
    """Lower-cased Unicode word runs of ``text``, stopwords kept, nothing stemmed."""
    return _WORD.findall(text.lower())


def tokenize(text: str) -> list[str]:
    """Lower-cased, stopword-free, stemmed tokens of ``text``, in order (duplicates kept)."""
    out: list[str] = []
    memo, stop = _STEMS, STOPWORDS
    for w in _WORD.findall(text.lower()):
        if w in stop:
            continue
        s = memo.get(w)
        out.append(s if s is not None else stem(w))
    return out
