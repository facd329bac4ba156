"""A claim's text as a statement that stands on its own (the quote itself is never changed).

Starting from :func:`.text.clean_claim` (leading "So," / "Um," and trailing filler gone):

- fillers inside the sentence ("uh", "um", "you know", "I mean") and stutters ("I, I",
  "the the") are dropped;
- a leading "He" / "She" is replaced by the person the previous sentence starts with ("Nick is
  a senior engineer." → "He's a fan of React." becomes "Nick's a fan of React."), and a
  leading "It" / "This" by the thing it starts with ("The cache is …" → "It stores …" becomes
  "The cache stores …") — only when the previous sentence of the same line or the line before
  opens with such a subject, so nothing is guessed;
- a first-person statement of a labelled speaker is attributed: "I've been coding for 18
  years." becomes "Nick Taylor says: I've been coding for 18 years." Without a speaker label
  it is left in the first person (the talk's speaker) — never rewritten as a general fact.
"""

from __future__ import annotations

import re

from arkai.providers.builtin.text import NOT_NAMES

_INNER_FILLER = re.compile(r"(?:,\s*|\s+)(?:uh+|um+|erm|you know|i mean)(?=[\s,.!?;:]|$),?", re.I)
_STUTTER = re.compile(r"\b(i|the|a|an|to|and|it|it's|we|you|is|was|in|of|that's|i'm)(?:,?\s+\1\b)+",
                      re.I)  # fmt: skip
_VERB = (
    r"(?:is|was|are|were|has|had|have|works|worked|runs|ran|leads|led|uses|used|can|could|will|"
    r"would|does|did|stores|keeps|makes|made|takes|took|gives|gave|returns|holds|means|lives|"
    r"started|founded|built|wrote|joined|became|says|said|thinks|believes)"
)
_PERSON = re.compile(rf"^((?:[A-Z][a-z]+)(?: [A-Z][a-z]+){{0,2}})(?:'s)? {_VERB}\b")
_THING = re.compile(rf"^((?:The|This|That|Our|Their|Its|Your) [\w-]+(?: [\w-]+){{0,2}}) {_VERB}\b")
_LEAD_PERSON = re.compile(r"^(He|She)(?=\b(?:'s|'d|'ll)?\s)")
_LEAD_THING = re.compile(rf"^(It|This)(?= {_VERB}\b|'s\s)")
_FIRST_PERSON = re.compile(r"^(?:I|I'm|I've|I'd|I'll|My|Me)\b")


def _drop_filler(m: re.Match[str]) -> str:
    """ ", uh, React" keeps its comma before a name (a list goes on); ", you know, about" not."""
    found = m.group(0)
    follow = m.string[m.end() : m.end() + 2].strip()[:1]
    return ", " if found.startswith(",") and found.endswith(",") and follow.isupper() else " "


def tidy(text: str) -> str:
    """``text`` without inner fillers and stutters."""
    out = _INNER_FILLER.sub(_drop_filler, text)
    out = _STUTTER.sub(r"\1", out)
    out = re.sub(r"\s+([,.!?;:])", r"\1", re.sub(r"\s{2,}", " ", out)).strip(" ,")
    if out and out[0].islower():
        out = out[0].upper() + out[1:]
    return out if len(out.split()) >= 3 else text


def subject_of(previous: str) -> tuple[str, str] | None:
    """``("person", name)`` or ``("thing", noun phrase)`` that ``previous`` opens with."""
    person = _PERSON.match(previous)
    if person and person.group(1).split()[0] not in NOT_NAMES:
        return "person", person.group(1)
    thing = _THING.match(previous)
    if thing:
        phrase = thing.group(1)
        first, rest = phrase.split(" ", 1)
        if first in ("This", "That"):
            first = "The"
        return "thing", f"{first} {rest}"
    return None


def standalone(cleaned: str, previous: str | None, speaker: str | None) -> str:
    """The claim text for a unit whose cleaned text is ``cleaned`` (see the module doc);
    ``previous`` is the cleaned unit before it (same line or the line before), ``speaker`` the
    unit's ``Speaker:`` label."""
    text = tidy(cleaned)
    subject = subject_of(previous) if previous else None
    if subject is not None:
        kind, name = subject
        pattern = _LEAD_PERSON if kind == "person" else _LEAD_THING
        if pattern.match(text):
            text = pattern.sub(name, text, count=1)
    if speaker and _FIRST_PERSON.match(text):
        text = f"{speaker} says: {text}"
    return text


__all__ = ["standalone", "subject_of", "tidy"]
