"""The builtin contradiction check: does a new statement conflict with an old one?

Offline and deterministic, three documented rules, each needing the two statements to be about
the same thing first: the stemmed content words they share, over the shorter statement's (the
negation, antonym and number words left out), at least :data:`MIN_OVERLAP`:

1. **negation** — one statement is negated and the other is not (``not``, ``no``, ``never``,
   ``n't``, ``without``, …): an odd count of negation words standing within :data:`NEAR` words
   of a shared content word counts as negated;
2. **antonym** — one uses a word and the other its opposite from :data:`ANTONYMS`
   (``increase``/``decrease``, ``more``/``less``, ``safe``/``unsafe``, …), compared by stem;
3. **numbers** — both give a number for the same unit or counted noun (``1.5 degrees`` vs
   ``2.5 degrees``, ``30 %`` vs ``45 %``) and the values differ — only when both name the same
   years (or none), since "14 minutes in 2022" and "12 minutes now" can both be true; or both
   give a year for the same event and the years differ.

It says *conflict*, never *true*: the replay turns a conflict into "the newer statement replaces
the older belief" and keeps both in the history. Tuned only on SciFact's train claims
(bench/contradiction.py reports precision/recall there).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from arkai.search.text import stem

MIN_OVERLAP = 0.5
#: A negation word counts when a shared content word is at most this many words away.
NEAR = 3

NEGATIONS = frozenset(
    [
        "not",
        "no",
        "never",
        "none",
        "nothing",
        "nobody",
        "neither",
        "nor",
        "cannot",
        "without",
        "lack",
        "lacks",
        "lacking",
        "fails",
        "fail",
        "failed",
        "absent",
    ]
)
_NT = re.compile(r"n't\b|n’t\b")

_PAIRS = """
increase decrease; increases decreases; increased decreased; increasing decreasing;
increase reduce; increases reduces; increased reduced; raise lower; raises lowers;
higher lower; more less; more fewer; most least; greater smaller; larger smaller;
bigger smaller; better worse; best worst; faster slower; rise fall; rises falls; rose fell;
improve worsen; improves worsens; improved worsened; gain loss; up down; above below;
true false; always never; all none; safe unsafe; safe dangerous; effective ineffective;
positive negative; likely unlikely; possible impossible; allow forbid; allowed forbidden;
accept reject; accepted rejected; enable disable; enabled disabled; include exclude;
included excluded; before after; early late; earlier later; warm cold; warmer colder;
warmer cooler; hot cold; strong weak; stronger weaker; high low; long short; longer shorter;
success failure; succeed fail; succeeded failed; agree disagree; support oppose;
supports opposes; associated unassociated; protective harmful; beneficial harmful;
benefit harm; promote inhibit; promotes inhibits; activate inhibit; activates inhibits;
induces prevents; induce prevent; cause prevent; causes prevents; present absent;
sufficient insufficient; necessary unnecessary; significant insignificant; open closed;
inside outside; same different; similar different; first last; correct incorrect;
right wrong; stable unstable; reliable unreliable; legal illegal; rare common
"""
ANTONYMS: tuple[tuple[str, str], ...] = tuple(
    (a, b) for pair in _PAIRS.split(";") if pair.strip() for a, b in [pair.split()]
)

STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "to",
        "in",
        "on",
        "at",
        "for",
        "by",
        "with",
        "from",
        "as",
        "and",
        "or",
        "but",
        "if",
        "then",
        "than",
        "that",
        "this",
        "these",
        "those",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "it",
        "its",
        "it's",
        "they",
        "them",
        "their",
        "there",
        "here",
        "we",
        "our",
        "you",
        "your",
        "i",
        "me",
        "my",
        "he",
        "she",
        "his",
        "her",
        "which",
        "who",
        "whom",
        "what",
        "when",
        "where",
        "why",
        "how",
        "do",
        "does",
        "did",
        "done",
        "has",
        "have",
        "had",
        "can",
        "could",
        "may",
        "might",
        "must",
        "should",
        "would",
        "will",
        "shall",
        "so",
        "such",
        "very",
        "also",
        "just",
        "only",
        "about",
        "into",
        "over",
        "under",
        "again",
        "further",
        "once",
        "any",
        "each",
        "other",
        "some",
        "own",
    ]
)
_WORD = re.compile(r"[a-z][a-z'’-]*|\d+(?:[.,]\d+)?%?")
_NUMBER = re.compile(r"^\d+(?:[.,]\d+)?%?$")
YEAR = re.compile(r"^(1[89]\d\d|20\d\d)$")


@dataclass(frozen=True, slots=True)
class Conflict:
    """Why two statements conflict (``rule`` is negation | antonym | numbers)."""

    rule: str
    detail: str
    overlap: float


def tokens(text: str) -> list[str]:
    """Lower-cased words and numbers of ``text`` (``n't`` read as ``not``)."""
    return _WORD.findall(_NT.sub(" not", text.lower().replace("’", "'")))


def _stems(words: list[str]) -> list[str]:
    """The Snowball stems of ``words`` (the one stemmer: :func:`arkai.search.text.stem`)."""
    return [stem(w) for w in words]


@cache
def _antonym_stems() -> dict[str, frozenset[str]]:
    out: dict[str, set[str]] = {}
    for a, b in ANTONYMS:
        sa, sb = _stems([a, b])
        if sa != sb:
            out.setdefault(sa, set()).add(sb)
            out.setdefault(sb, set()).add(sa)
    return {k: frozenset(v) for k, v in out.items()}


def _negated(words: list[str], shared: set[str]) -> bool:
    """An odd count of negation words that stand within NEAR words of a shared content word
    (a "not" in an unrelated clause of a long sentence does not negate the shared topic)."""
    stems = _stems(words)
    near = 0
    for i, w in enumerate(words):
        if w in NEGATIONS and any(s in shared for s in stems[max(0, i - NEAR) : i + NEAR + 1]):
            near += 1
    return near % 2 == 1


def _numbers(words: list[str]) -> dict[str, set[str]]:
    """Numbers keyed by the stem of the word after them (their unit / counted noun), years by
    ``year``, percentages by ``%``."""
    out: dict[str, set[str]] = {}
    for i, w in enumerate(words):
        if not _NUMBER.match(w):
            continue
        value = w.replace(",", ".")
        if YEAR.match(w):
            out.setdefault("year", set()).add(value)
            continue
        if value.endswith("%"):
            out.setdefault("%", set()).add(value[:-1])
            continue
        unit = words[i + 1] if i + 1 < len(words) else ""
        if unit in ("percent", "per", "pct"):
            unit = "%"
        if unit and not _NUMBER.match(unit):
            key = unit if unit == "%" else _stems([unit])[0]
            out.setdefault(key, set()).add(value)
    return out


def content(words: list[str]) -> set[str]:
    antonyms = _antonym_stems()
    kept = [w for w in words if w not in STOP and w not in NEGATIONS and not _NUMBER.match(w)]
    return {s for s in _stems(kept) if s not in antonyms and len(s) > 1}


def overlap(a: set[str], b: set[str]) -> float:
    """Shared content words over the shorter statement's (a short claim inside a long
    sentence counts as on-topic)."""
    if not a or not b:
        return 0.0
    return len(a & b) / min(len(a), len(b))


def check(old: str, new: str, *, min_overlap: float = MIN_OVERLAP) -> Conflict | None:
    """The first rule by which ``new`` conflicts with ``old``, or None."""
    wo, wn = tokens(old), tokens(new)
    ov = overlap(content(wo), content(wn))
    if ov < min_overlap:
        return None
    shared = content(wo) & content(wn)
    if _negated(wo, shared) != _negated(wn, shared):
        which = "the newer" if _negated(wn, shared) else "the older"
        return Conflict("negation", f"{which} statement negates the other", round(ov, 3))
    antonyms = _antonym_stems()
    so, sn = set(_stems(wo)), set(_stems(wn))
    for s in sorted(so - sn):
        opposite = sorted((antonyms.get(s, frozenset()) & sn) - so)
        if opposite:
            return Conflict("antonym", f"{s!r} against {opposite[0]!r}", round(ov, 3))
    no, nn = _numbers(wo), _numbers(wn)
    years_o, years_n = no.pop("year", set()), nn.pop("year", set())
    if years_o != years_n:
        # Different (or unstated) years: other numbers may describe different times
        # ("took 14 minutes in 2022" vs "takes 12 minutes"); only the years themselves conflict.
        no, nn = {"year": years_o}, {"year": years_n}
    for unit in sorted(no.keys() & nn.keys()):
        if no[unit] and nn[unit] and no[unit].isdisjoint(nn[unit]):
            a, b = ",".join(sorted(no[unit])), ",".join(sorted(nn[unit]))
            label = "year" if unit == "year" else f"'{unit}…'"
            return Conflict("numbers", f"{label}: {a} against {b}", round(ov, 3))
    return None
