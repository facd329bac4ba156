"""Sentence candidates in a ``transcript.md`` — verbatim slices, never rewritten text."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

_PREFIX = re.compile(r"^(?:\[[^\]\n]{1,20}\]\s*)?(?:[A-Z][\w.'’-]*(?: [A-Z][\w.'’-]*){0,3}: )?")
_BOUNDARY = re.compile(r"[.!?…]+[\"”’)\]]*(?=\s|$)")
_LAST_WORD = re.compile(r"([\w.]+)\.$")
_ABBREV = frozenset(
    [
        "dr",
        "mr",
        "mrs",
        "ms",
        "prof",
        "st",
        "jr",
        "sr",
        "vs",
        "etc",
        "e.g",
        "i.e",
        "no",
        "fig",
        "approx",
        "dept",
        "inc",
        "ltd",
        "co",
        "mt",
        "cf",
        "al",
    ]
)
_FILLER = re.compile(
    r"^(?:um+|uh+|so|yeah|okay|ok|well|right|like|and|but|oh|hmm|you know|i mean)\b[ ,]*",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Sentence:
    """A sentence as it stands in the transcript text."""

    text: str
    """The exact characters (a substring of one transcript line)."""
    line: int
    """1-based line number."""


def iter_sentences(transcript: str) -> Iterator[Sentence]:
    """Sentences of each line, after its ``[HH:MM:SS]`` and ``Speaker:`` prefix."""
    for n, line in enumerate(transcript.split("\n"), 1):
        body = line[_PREFIX.match(line).end() :]  # type: ignore[union-attr]
        if not body.strip() or body.lstrip().startswith("#"):
            continue
        for text in split_sentences(body):
            yield Sentence(text=text, line=n)


def split_sentences(body: str) -> list[str]:
    """Split one line into sentences at ``. ! ? …`` followed by space.

    A full stop after a known abbreviation (``Dr.``, ``e.g.``) or a single capital initial is
    not a boundary; decimals (``3.0``) never are, since a boundary needs following whitespace.
    """
    out: list[str] = []
    start = 0
    for m in _BOUNDARY.finditer(body):
        if m.group(0) == ".":
            word = _LAST_WORD.search(body, start, m.end())
            if word:
                token = word.group(1).lower()
                if token in _ABBREV or (len(token) == 1 and token.isalpha()):
                    continue
        piece = body[start : m.end()].strip()
        if piece:
            out.append(piece)
        start = m.end()
    tail = body[start:].strip()
    if tail:
        out.append(tail)
    return out


def is_claim_like(text: str, *, min_words: int, max_words: int) -> bool:
    """A declarative sentence of reasonable length that does not open with filler."""
    words = text.split()
    if not (min_words <= len(words) <= max_words):
        return False
    if text.endswith("?") or text[-1] not in '.!…"”’)':
        return False
    if _FILLER.match(text):
        return False
    return text[0].isupper() or text[0].isdigit()
