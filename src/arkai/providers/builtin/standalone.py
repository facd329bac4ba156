"""A claim's text as a statement that stands on its own (the quote itself is never changed).

Starting from :func:`.text.clean_claim` (leading "So," / "Um," and trailing filler gone):

- fillers inside the sentence ("uh", "um", "you know", "I mean") and stutters ("I, I",
  "the the") are dropped;
- a leading pronoun is replaced by the referent the previous sentence (same line or the line
  before) opens with, and only then, so nothing is guessed:

  - "He" / "She" by a person's name ("Nick is a senior engineer." → "He's a fan of React."
    becomes "Nick is a fan of React.");
  - "It" / "This" by a singular thing: a noun phrase with a determiner ("The cache is
    …" → "It stores …" becomes "The cache stores …"), a name that is no person's (a known
    product or organisation, or a shape like ``ASP.NET``, ``Python 3``), or what "there was
    something called X" introduces;
  - "They" / "These" / "Those" by a plural noun phrase ("The weights are …", "Neurons in the
    first layer hold …");

  "He" / "She" may also reach one sentence further back when the nearest names no one;
  a contraction is spelt out with it ("It's" → "The cache is", "He's been" → "Nick has
  been", "They're" → "The weights are");
- a first-person statement of a labelled speaker is attributed: "I've been coding for 18
  years." becomes "Nick Taylor says: I've been coding for 18 years." (also "We …", "Our …").
  Without a speaker label it is left in the first person (the talk's speaker) — never
  rewritten as a general fact.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from arkai.providers.builtin.names import known_type, not_a_person
from arkai.providers.builtin.text import NOT_NAMES

_INNER_FILLER = re.compile(r"(?:,\s*|\s+)(?:uh+|um+|erm|you know|i mean)(?=[\s,.!?;:]|$),?", re.I)
_STUTTER = re.compile(r"\b(i|the|a|an|to|and|it|it's|we|you|is|was|in|of|that's|i'm)(?:,?\s+\1\b)+",
                      re.I)  # fmt: skip
_SINGULAR_VERB = (
    r"is|was|has|works|worked|runs|ran|leads|led|uses|used|does|did|stores|keeps|makes|made|"
    r"takes|took|gives|gave|returns|holds|means|lives|started|founded|built|wrote|joined|became|"
    r"says|said|thinks|believes|came|comes|lets|allows|needs|tends|depends|requires|contains|"
    r"looks|sits|goes|went|had"
)
_PLURAL_VERB = r"are|were|have|do|hold|take|make|give|return|keep|need|store|work|run|use|come"
_MODAL = r"can|could|will|would|should|must|might|may|cannot|can't|won't"
_VERB = rf"(?:{_SINGULAR_VERB}|{_PLURAL_VERB}|{_MODAL})"
_PRONOUNS = r"(?:i|you|we|they|he|she|it|me|us|them)"
_DET = r"(?:The|This|That|These|Those|Our|Their|Its|Your|His|Her|My|Each|Every|A|An)"
#: A name: capitalised words (or ones with a name's shape: ``ASP.NET``, ``Python 3``, ``C++``).
_NAME = r"(?:[A-Z][\w.+#'-]*|\.[A-Za-z]+)(?: (?:[A-Z0-9][\w.+#-]*|of|de|van|von))*"
_PROPER = re.compile(rf"^({_NAME})(?:'s)? ({_VERB})\b")
_PHRASE = re.compile(rf"^({_DET} [\w-]+(?: (?!{_PRONOUNS}\b)[\w-]+){{0,4}}?) ({_VERB})\b")
_BARE_PLURAL = re.compile(
    rf"^([A-Z][a-z]+s)((?: (?:in|of|on|at|for|from) [\w-]+(?: [\w-]+){{0,2}})?)"
    rf" ({_PLURAL_VERB}|{_MODAL})\b"
)
_CALLED = re.compile(
    rf"^(?:\S+\s+){{0,4}}?there(?:'s| is| was)(?: also| even)? (?:something|a \w+|an \w+)"
    rf" called ({_NAME}|[\w.+#-]+)",
    re.IGNORECASE,
)
#: Discourse adverbs before a sentence's subject ("Really the entire network is …").
_LEAD_ADVERB = re.compile(
    r"^(?:(?:really|basically|actually|essentially|so|and|but|now|well|also|of course|in fact|"
    r"in short|in general|remember)\b,?\s+)+",
    re.IGNORECASE,
)
_PERSON_PRONOUN = re.compile(r"^(He|She)(?:('s|'d|'ll)\b)?(?=\s)")
_THING_PRONOUN = re.compile(r"^(It|This)(?:('s|'ll|'d)\b)?(?=\s)")
_PLURAL_PRONOUN = re.compile(r"^(They|These|Those)(?:('re|'ve|'ll|'d)\b)?(?=\s)")
#: What follows a pronoun that stands for no noun: "This, …", "That and …", "It's how …",
#: and the "it" of "it's hard to …", "it turns out that …".
_NO_REFERENT = re.compile(
    r"^(?:,|and\b|or\b|of\b)"
    r"|^(?:'s|\s+is|\s+was)\s+(?:how|why|what|where|when|because|just|all|it|true|right|okay|"
    r"fine|the\s+(?:reason|way|point|thing|idea|case|problem|question))\b"
    r"|^(?:'s|'ll\s+be|'d\s+be|\s+is|\s+was|\s+will\s+be|\s+would\s+be|\s+can\s+be)\s+"
    r"(?:\S+\s+){0,3}?(?:to|that)\b"
    r"|^\s+(?:takes|took|seems|seemed|turns\s+out|turned\s+out|looks\s+like|happens|happened|"
    r"depends)\b",
    re.IGNORECASE,
)
_FIRST_PERSON = re.compile(r"^(?:I|I'm|I've|I'd|I'll|My|Me|We|We're|We've|We'd|We'll|Our)\b")
_HAS_AFTER = re.compile(r"^\s+(?:been|got|gotten|had|done|made|seen|given|taken|become)\b")
_EXPANSIONS = {"'re": "are", "'ve": "have", "'ll": "will", "'d": "would"}
_DEMONSTRATIVE_NOUN = re.compile(r"^(?:This|That|These|Those) [a-z]")


@dataclass(frozen=True, slots=True)
class Referent:
    """What a leading pronoun of the next sentence may stand for."""

    kind: str
    """``person`` or ``thing``."""
    phrase: str
    plural: bool = False
    collective: bool = False
    """An organisation: "it" and "they" both stand for it."""


def tidy(text: str) -> str:
    """``text`` without inner fillers and stutters."""
    out = _INNER_FILLER.sub(_drop_filler, text)
    out = _STUTTER.sub(r"\1", out)
    out = re.sub(r"\s+([,.!?;:])", r"\1", re.sub(r"\s{2,}", " ", out)).strip(" ,")
    if out and out[0].islower():
        out = out[0].upper() + out[1:]
    return out if len(out.split()) >= 3 else text


def _drop_filler(m: re.Match[str]) -> str:
    """ ", uh, React" keeps its comma before a name (a list goes on); ", you know, about" not."""
    found = m.group(0)
    follow = m.string[m.end() : m.end() + 2].strip()[:1]
    return ", " if found.startswith(",") and found.endswith(",") and follow.isupper() else " "


def _plural_verb(verb: str) -> bool | None:
    if re.fullmatch(_PLURAL_VERB, verb):
        return True
    if re.fullmatch(_SINGULAR_VERB, verb):
        return False
    return None  # a modal: number from the noun


def _is_person_name(name: str) -> bool:
    words = name.split()
    if words[0] in NOT_NAMES or known_type(name) or not_a_person(name) or len(words) > 3:
        return False
    return all(w[:1].isupper() and w.replace("'", "").isalpha() for w in words)


def referent_of(previous: str) -> Referent | None:
    """The referent ``previous`` opens with (see the module doc), or ``None``."""
    previous = tidy(previous)
    lead = _LEAD_ADVERB.match(previous)
    if lead and len(previous) > lead.end():
        previous = previous[lead.end()].upper() + previous[lead.end() + 1 :]
    called = _CALLED.match(previous)
    if called:
        return Referent("thing", called.group(1).rstrip(".,;:"))
    phrase = _PHRASE.match(previous)
    if phrase:
        words = phrase.group(1).split()
        det = words[0]
        head = words[-1].lower()
        plural = _plural_verb(phrase.group(2))
        if plural is None:
            plural = det in ("These", "Those") or (head.endswith("s") and not head.endswith("ss"))
        if det in ("A", "An", "Each", "Every"):
            return None  # "a cache" is not yet the one the next sentence means
        if det in ("This", "That", "These", "Those"):
            words[0] = "The"
        return Referent("thing", " ".join(words), plural)
    proper = _PROPER.match(previous)
    if proper:
        name = proper.group(1)
        if name.split()[0] in NOT_NAMES or len(name) < 2:
            return None
        if _is_person_name(name):
            return Referent("person", name)
        plural = _plural_verb(proper.group(2)) is True
        return Referent("thing", name, plural, known_type(name) == "org")
    bare = _BARE_PLURAL.match(previous)
    if bare and bare.group(1) not in NOT_NAMES:
        return Referent("thing", bare.group(1) + bare.group(2), True)
    return None


def _spell_out(contraction: str | None, rest: str, plural: bool) -> str:
    if not contraction:
        return ""
    if contraction == "'s":
        return " has" if _HAS_AFTER.match(rest) else " is"
    if contraction == "'re":
        return " are" if plural else " is"
    return " " + _EXPANSIONS[contraction]


def resolve_pronoun(text: str, ref: Referent | None) -> str:
    """``text`` with its leading pronoun replaced by ``ref`` where they agree."""
    if ref is None:
        return text
    if ref.kind == "person":
        m = _PERSON_PRONOUN.match(text)
    elif ref.plural:
        m = _PLURAL_PRONOUN.match(text)
    else:
        m = _THING_PRONOUN.match(text) or (_PLURAL_PRONOUN.match(text) if ref.collective else None)
    if m is None or _DEMONSTRATIVE_NOUN.match(text):
        return text  # "This layer …" names its own noun
    rest = text[m.end() :]
    if _NO_REFERENT.match(text[m.end(1) :]):
        return text
    return ref.phrase + _spell_out(m.group(2), rest, ref.plural) + rest


def _names_someone(sentence: str) -> bool:
    """Whether ``sentence`` names a person after its first word (a competing referent)."""
    words = re.findall(r"(?<=\s)[A-Z][a-z]+(?: [A-Z][a-z]+)?", sentence)
    return any(_is_person_name(w) for w in words if w.split()[0] not in NOT_NAMES)


def referent_before(text: str, previous: Sequence[str]) -> Referent | None:
    """The referent of ``text``'s leading pronoun among ``previous`` (the cleaned sentences
    before it, nearest first): the nearest one's opening referent, or, for "He" / "She", the
    person the sentence before that opens with when the nearest names no one ("Nick is a
    senior engineer at Forem." → "The company behind DEV." → "He's a fan of React.")."""
    if not previous:
        return None
    nearest = referent_of(previous[0])
    if nearest is not None or not _PERSON_PRONOUN.match(text) or len(previous) < 2:
        return nearest
    if _names_someone(previous[0]):
        return None
    before = referent_of(previous[1])
    return before if before is not None and before.kind == "person" else None


def standalone(cleaned: str, previous: str | Sequence[str] | None, speaker: str | None) -> str:
    """The claim text for a unit whose cleaned text is ``cleaned`` (see the module doc);
    ``previous`` is the cleaned unit before it, or those before it nearest first (same line
    or the line before), ``speaker`` the unit's ``Speaker:`` label."""
    text = tidy(cleaned)
    before = [previous] if isinstance(previous, str) else list(previous or ())
    text = resolve_pronoun(text, referent_before(text, before))
    if speaker and _FIRST_PERSON.match(text):
        text = f"{speaker} says: {text}"
    return text


__all__ = [
    "Referent",
    "referent_before",
    "referent_of",
    "resolve_pronoun",
    "standalone",
    "tidy",
]
