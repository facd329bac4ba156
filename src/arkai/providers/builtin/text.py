"""Shared text helpers of the builtin provider: lines, sentence units, cleaning, word lists.

Everything here works on character offsets into the transcript text, so a unit's quote is
always ``text[start:end]`` — a verbatim slice of one line's body, after its ``[HH:MM:SS]``
timestamp, ``Speaker:`` label and any Markdown list or quote marker. Headings (``#`` lines,
which include the ``### role · time`` headers of chat transcripts), fenced code and table rows
are never split into units.

Sentences come from punctuation. Text without it (YouTube auto-captions, youtube-transcript-api
JSON) is split into sentence-like *windows* of 8–25 words at natural break words (``and``,
``but``, ``so``, ``because``, ``which``, ``that`` …); a line of at most 30 words is one unit.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from arkai.core.grammar import PAGE_MARKER_RE, TIMESTAMP_RE, chat_header, speaker_of

# ---------------------------------------------------------------------------------------------
# Word lists


def wordset(words: str) -> frozenset[str]:
    return frozenset(words.split())


#: scikit-learn's English stop words (less a few content words such as "system"), plus
#: conversational filler and contractions.
STOPWORDS: frozenset[str] = wordset(
    """
    a about above across after afterwards again against all almost alone along already also
    although always am among amongst amoungst an and another any anyhow anyone anything
    anyway anywhere are around as at back be became because become becomes becoming been
    before beforehand behind being below beside besides between beyond both but by can
    cannot cant co could couldnt do done down due during each eg eight either eleven else
    elsewhere enough etc even ever every everyone everything everywhere except few fifteen
    fifty fill find first five for former formerly forty four from further get give go had
    has hasnt have he hence her here hereafter hereby herein hereupon hers herself him
    himself his how however hundred i ie if in inc indeed into is it its itself keep last
    latter latterly least less ltd made many may me meanwhile might mine more moreover most
    mostly much must my myself namely neither never nevertheless next nine no nobody none
    noone nor not nothing now nowhere of off often on once one only onto or other others
    otherwise our ours ourselves out over own per perhaps please put rather re same see seem
    seemed seeming seems several she should show since six sixty so some somehow someone
    something sometime sometimes somewhere still such take ten than that the their them
    themselves then thence there thereafter thereby therefore therein thereupon these they
    third this those though three through throughout thru thus to together too toward
    towards twelve twenty two un under until up upon us very via was we well were what
    whatever when whence whenever where whereafter whereas whereby wherein whereupon
    wherever whether which while whither who whoever whole whom whose why will with within
    without would yet you your yours yourself yourselves
    um umm uh uhh er erm hmm mm mhm ah oh okay ok alright yeah yep yes yup nope like just really
    actually basically literally kinda sorta gonna wanna gotta lot lots thing things stuff gotten
    got getting gets going goes went know knew knows think thought thinks mean means meant say
    says said saying want wants wanted let lets make makes making right sure maybe pretty little
    bit guess kind sort way ways yes hey hi hello thanks thank dont doesnt didnt isnt arent wasnt
    werent wont cant couldnt wouldnt shouldnt im ive id ill youre youve youd youll hes shes
    theyre theyve weve were thats theres heres whats whos lets aint
    i'm i've i'd i'll you're you've you'd you'll he's she's it's we're we've we'd we'll
    they're they've they'd they'll that's there's here's what's who's let's don't doesn't
    didn't isn't aren't wasn't weren't won't can't couldn't wouldn't shouldn't haven't hasn't
    hadn't ain't y'all gonna cuz cause
    """
)

#: Words that are filler when they open a unit or make up much of it.
FILLERS: frozenset[str] = wordset(
    "um umm uh uhh er erm hmm mm mhm ah oh yeah yep like kinda sorta basically literally"
)

#: Verbs, adjectives and vague nouns that never head a concept keyphrase on their own.
NOT_NOUNS: frozenset[str] = wordset(
    """
    able add added adding ago agree allow allowed already amazing anybody asked asking awesome
    bad bad basically began begin believe best better big came cause certain change changed
    check chose come comes coming cool couple day days different doing easy end ended example
    exactly feel feeling felt fine gave getting give given gives giving good great guy guys
    happen happened happens hard hear heard help helped helps high hold huge idea important
    interesting kept knowing large late later learned least leave left light long look looked
    looking looks lose lost love loved low mean meaning mind minute minutes moment month months
    new nice old open pick place point possible probably put quite ran read ready real reason
    remember run running saw second seconds seeing seen sense set small sort start started
    starting stay stop super talk talked talking tell telling thank thanks tried true try trying
    turn turned understand use used uses using week weeks went whole wonderful work worked
    works working wow write year years yesterday today tomorrow tonight morning evening night
    time times person people folks everybody somebody anybody someone question questions answer
    okay yeah totally definitely absolutely obviously certainly usually especially simply
    specifically eventually finally recently currently does did doing done part parts lot
    lots number numbers case cases side top bottom front name names call called calls live
    man need needs needed cuz gonna stuff dude
    """
)

#: Words before which an unpunctuated line may be cut into clauses, with a cut cost.
BREAK_WORDS: dict[str, float] = {
    "so": 0.0,
    "but": 0.0,
    "because": 0.0,
    "and": 0.2,
    "alright": 0.0,
    "okay": 0.2,
    "now": 0.3,
    "then": 0.3,
    "which": 0.4,
    "when": 0.5,
    "if": 0.5,
    "or": 0.6,
    "where": 0.6,
    "that": 0.8,
    "what": 0.8,
    "um": 0.1,
    "uh": 0.1,
    "well": 0.5,
    "yeah": 0.2,
    "although": 0.2,
    "though": 0.6,
    "while": 0.5,
    "since": 0.5,
    "until": 0.6,
    "let's": 0.4,
    "i": 1.0,
    "we": 1.0,
    "you": 1.2,
}

_NUMBER_WORDS = (
    r"percent|per cent|million|millions|billion|billions|thousand|thousands|hundred|hundreds|"
    r"dozen|twice|double|triple|half|quarter|one-third|two-thirds"
)
_MONTHS = r"january|february|march|april|may|june|july|august|september|october|november|december"
NUMERIC = re.compile(rf"\d|\b(?:{_NUMBER_WORDS})\b", re.IGNORECASE)
DATE = re.compile(rf"\b(?:1[5-9]\d\d|20\d\d|(?:{_MONTHS}))\b")

# ---------------------------------------------------------------------------------------------
# Lines

_MARKER = re.compile(r"^(?:(?:>\s*)+|(?:[-*+•]|\d{1,3}[.)])\s+)")
_NUMBERED = re.compile(r"^\d{1,3}[.)]\s")
_BULLET = re.compile(r"^[-*+•]\s")
_FENCE = re.compile(r"^\s*(?:```|~~~)")


@dataclass(frozen=True, slots=True)
class Line:
    """One line of the transcript and where its quotable body lies."""

    number: int
    """1-based line number."""
    start: int
    """Offset of the line's first character in the text."""
    body_start: int
    """Offset where quotable text begins (after timestamp, speaker, list marker)."""
    body_end: int
    """Offset after the last non-space character of the body."""
    kind: str
    """``text``, ``blank``, ``heading``, ``header`` (a chat transcript's ``### role · time``),
    ``code`` or ``table``."""
    role: str | None
    """Chat role from the last ``### role · time`` header (``None`` outside chats)."""
    marker: str | None
    """``numbered`` or ``bullet`` for Markdown list items."""
    speaker: str | None
    """The ``Speaker:`` label of a transcript line, when it has one."""
    timed: bool = False
    """Whether the line starts with a ``[HH:MM:SS]`` timestamp."""


def split_lines(text: str) -> list[Line]:
    """Every line of ``text`` with its body bounds and kind."""
    out: list[Line] = []
    pos = 0
    in_fence = False
    role: str | None = None
    for number, raw in enumerate(text.split("\n"), 1):
        start = pos
        pos += len(raw) + 1
        stripped = raw.strip()
        kind = "text"
        marker: str | None = None
        speaker: str | None = None
        body_start = body_end = start
        if _FENCE.match(raw):
            in_fence = not in_fence
            kind = "code"
        elif in_fence:
            kind = "code"
        elif not stripped:
            kind = "blank"
        elif stripped.startswith("#"):
            kind = "heading"
            header = chat_header(raw)
            if header is not None:
                kind = "header"
                role = header[0].lower()
        elif PAGE_MARKER_RE.match(stripped):
            kind = "heading"  # a PDF page marker: not quotable text
        elif stripped.startswith("|"):
            kind = "table"
        else:
            stamp = TIMESTAMP_RE.match(raw)
            speaker, rest = speaker_of(raw[stamp.end() :] if stamp else raw)
            skip = len(raw) - len(rest)
            lead = len(rest) - len(rest.lstrip())
            rest = rest[lead:]
            found = _MARKER.match(rest)
            if found:
                marker = "numbered" if _NUMBERED.match(rest) else None
                marker = marker or ("bullet" if _BULLET.match(rest) else None)
                lead += found.end()
            body_start = start + skip + lead
            body_end = start + len(raw.rstrip())
            if body_end <= body_start:
                kind = "blank"
                body_start = body_end = start
        timed = kind == "text" and raw.startswith("[") and body_start > start
        out.append(Line(number, start, body_start, body_end, kind, role, marker, speaker, timed))
    return out


# ---------------------------------------------------------------------------------------------
# Units: sentences and windows

_ABBREV = wordset(
    "dr mr mrs ms prof st jr sr vs etc e.g i.e no fig approx dept inc ltd co mt cf al ca"
)
_BOUNDARY = re.compile(r"[.!?…]+[\"”’)\]]*(?=\s|$)|(?<=[a-z]{2})[.!?](?=[A-Z][a-z'’ ])")
_LAST_WORD = re.compile(r"([\w.]+)[.!?…]+[\"”’)\]]*$")
_WORD = re.compile(r"\S+")
_TERMINATOR = re.compile(r"[.!?…]")


@dataclass(frozen=True, slots=True)
class Unit:
    """A sentence (or sentence-like window) exactly as it stands in the text."""

    text: str
    """``transcript[start:end]``: one line's substring, never its prefix."""
    start: int
    end: int
    line: int
    """1-based line number."""
    index: int
    """Position among the document's units (0-based)."""
    kind: str
    """``sentence`` (punctuated), ``line`` (a short unpunctuated line) or ``window``."""
    role: str | None = None
    """Chat role of the message the unit is in."""
    timed: bool = False
    """Whether its line has a ``[HH:MM:SS]`` timestamp (a caption line)."""
    marker: str | None = None
    """``numbered`` / ``bullet`` when its line is a Markdown list item."""
    edge: bool = False
    """A window at the start or end of its caption line (likely cut mid-sentence)."""

    @cached_property
    def words(self) -> list[str]:
        return self.text.split()


def _sentence_spans(body: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each sentence of one line body (relative offsets, stripped)."""
    spans: list[tuple[int, int]] = []
    start = 0
    for m in _BOUNDARY.finditer(body):
        mark = m.group(0)
        if mark.startswith("."):
            word = _LAST_WORD.search(body, start, m.end())
            if word:
                token = word.group(1).lower().rstrip(".")
                parts = token.split(".")
                if token in _ABBREV or all(len(p) == 1 and p.isalpha() for p in parts):
                    continue
        follow = body[m.end() : m.end() + 3].lstrip()[:1]
        if follow.islower():
            continue
        spans.append((start, m.end()))
        start = m.end()
    spans.append((start, len(body)))
    out: list[tuple[int, int]] = []
    for s, e in spans:
        piece = body[s:e]
        lead = len(piece) - len(piece.lstrip())
        trail = len(piece) - len(piece.rstrip())
        if e - trail > s + lead:
            out.append((s + lead, e - trail))
    return out


def word_offsets(body: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each whitespace-separated word of ``body``."""
    return [(m.start(), m.end()) for m in _WORD.finditer(body)]


def _window_spans(
    body: str, *, short_line: int = 30, bonus: Sequence[float] | None = None
) -> list[tuple[int, int]]:
    """Clause windows of an unpunctuated body: the whole body when it has at most
    ``short_line`` words, else cuts before break words into pieces of 8–25 words (dynamic
    programming over cut costs, preferring ~16 words). ``bonus`` (one value per word of
    :func:`word_offsets`) is taken off the cost of cutting before that word: a hook for
    another boundary signal (``bench/segmentation.py`` measures spaCy's ``senter`` with it)."""
    words = word_offsets(body)
    n = len(words)
    if n == 0:
        return []
    if n <= short_line:
        return [(words[0][0], words[-1][1])]
    lower = [body[s:e].lower().strip(",.;:") for s, e in words]
    cut_cost = [
        BREAK_WORDS.get(w, 2.5)
        + (1.0 if k and lower[k - 1] in DANGLING else 0.0)
        - (bonus[k] if bonus is not None else 0.0)
        for k, w in enumerate(lower)
    ]
    inf = float("inf")
    best = [inf] * (n + 1)
    back = [0] * (n + 1)
    best[0] = 0.0
    for j in range(1, n + 1):
        for length in range(1, min(25, j) + 1):
            i = j - length
            if best[i] == inf:
                continue
            if length >= 8:
                seg = abs(length - 16) * 0.08
            elif i == 0 or j == n:
                seg = 1.5 + (8 - length) * 0.3  # a stub at a line edge
            else:
                continue
            cost = best[i] + seg + (cut_cost[j] if j < n else 0.0)
            if cost < best[j]:
                best[j] = cost
                back[j] = i
    cuts: list[tuple[int, int]] = []
    j = n
    while j > 0:
        i = back[j]
        cuts.append((i, j))
        j = i
    cuts.reverse()
    return [(words[i][0], words[j - 1][1]) for i, j in cuts]


_EDGE_WORDS = wordset("so and but or alright okay ok yeah um uh like then oh well now just")
#: Words a complete sentence does not end with ("... a paying gig for.").
DANGLING = wordset(
    "a an the my your our their his her its and or but because which whose if than um uh very "
    "gonna wanna i'm we're they're you're there's what's i we they he she for of with from by "
    "to at"
)
_TRAILING_JUNK = (
    _EDGE_WORDS
    | DANGLING
    | wordset(
        "that which who this these those is are was were be been in on into about really just"
    )
)
_LEADING_JUNK = _EDGE_WORDS | wordset("of to for with at in on by from than as is are was were")


def _trim_edges(body: str, a: int, b: int) -> tuple[int, int]:
    """``a..b`` without leading or trailing filler/conjunction words (unpunctuated units)."""
    words = [(m.start(), m.end()) for m in _WORD.finditer(body, a, b)]
    i, j = 0, len(words)
    while i < j and body[words[i][0] : words[i][1]].lower().strip(",.") in _LEADING_JUNK:
        i += 1
    while j > i and body[words[j - 1][0] : words[j - 1][1]].lower().strip(",.") in _TRAILING_JUNK:
        j -= 1
    if j - i < 3:
        return a, b
    return words[i][0], words[j - 1][1]


def build_units(text: str, lines: list[Line] | None = None) -> list[Unit]:
    """Sentence units of ``text``; caption-style text gets windows (see the module doc).

    The text is caption-style when it has fewer than one sentence end per 60 words; then any
    sentence longer than 30 words is cut into windows.
    """
    lines = split_lines(text) if lines is None else lines
    bodies = [(ln, text[ln.body_start : ln.body_end]) for ln in lines if ln.kind == "text"]
    total_words = sum(len(b.split()) for _, b in bodies)
    terminators = sum(len(_TERMINATOR.findall(b)) for _, b in bodies)
    captions = total_words >= 60 and terminators * 60 < total_words
    units: list[Unit] = []
    for ln, body in bodies:
        for s, e in _sentence_spans(body):
            piece = body[s:e]
            if captions and len(piece.split()) > 30:
                spans = [(s + a, s + b) for a, b in _window_spans(piece)]
                kind = "window"
            else:
                spans = [(s, e)]
                kind = "sentence" if _TERMINATOR.search(piece[-3:]) else "line"
            for n, (a, b) in enumerate(spans):
                # A window at either end of a caption line starts or ends where the captioner
                # cut the line, not where the speaker paused.
                edge = kind == "window" and (n == 0 or n == len(spans) - 1)
                if kind != "sentence":
                    a, b = _trim_edges(body, a, b)
                    if b <= a:
                        continue
                start = ln.body_start + a
                end = ln.body_start + b
                unit = Unit(
                    text[start:end],
                    start,
                    end,
                    ln.number,
                    len(units),
                    kind,
                    ln.role,
                    ln.timed,
                    ln.marker,
                    edge,
                )
                units.append(unit)
    return units


# ---------------------------------------------------------------------------------------------
# Cleaning and classification

_OPENER = re.compile(
    r"^(?:(?:so|and|but|um+|uh+|er|erm|hmm+|oh|okay|ok|alright|yeah|anyway|also|plus)\b[,.…]*\s+"
    r"|(?:well|now|like|yes|no|right|you know|i mean|basically|actually|then|see)\s*,\s*)+",
    re.IGNORECASE,
)
_TRAILER = re.compile(
    r"(?:[\s,]+(?:so|and|but|um+|uh+|like|alright|okay|yeah|right|you know|i mean|or))+$",
    re.IGNORECASE,
)
HESITATION = re.compile(r"^(?:um+|uh+|er|erm|hmm+|you know|i mean|like)\b", re.IGNORECASE)
_SOCIAL_START = re.compile(
    r"^(?:hi|hello|hey|yo|welcome|good (?:morning|afternoon|evening|night)|thanks|thank you|"
    r"bye|goodbye|see you|see ya|take care|cheers|congrat\w*|nice to (?:meet|see|have)|"
    r"pleasure|have a (?:good|great|nice)|sorry|excuse me|oh my)\b",
    re.IGNORECASE,
)
_SOCIAL_ANY = re.compile(
    r"\b(?:thanks?(?: you)?(?: so much| very much| again)? for (?:having|listening|watching|"
    r"joining|coming|being|tuning)|welcome (?:back )?to (?:the |this |our |another )?|"
    r"subscribe|see you (?:next|soon|later|all|in)|that's (?:all|it) for (?:today|now|this)|"
    r"signing off|until next time|catch you (?:later|next)|(?:like|want|wanna) to thank|"
    r"(?:edited|produced|hosted) (?:and \w+ )?by|hit us up|(?:e-?mail|follow|contact) us|"
    r"find us (?:on|at)|reach out to us|rate and review|leave (?:us )?a review|"
    r"find out more about|show notes|sign up for (?:our|the) newsletter)|"
    r"\bthank(?:s| you)\b[\s\w,]{0,12}[.!]*$",
    re.IGNORECASE,
)
_EMPHASIS = re.compile(r"\*\*|__")
_TOKEN = re.compile(r"[a-z0-9]+(?:['’][a-z]+)?")


def clean_claim(quote: str) -> str:
    """``quote`` lightly cleaned for reading: leading "So," / "And" / "But" / "Um," … and
    Markdown emphasis removed, trailing filler dropped, first letter upper-cased."""
    text = _EMPHASIS.sub("", quote).strip()
    trimmed = _OPENER.sub("", text)
    if len(trimmed.split()) >= 3:
        text = trimmed
    trimmed = _TRAILER.sub("", text)
    if len(trimmed.split()) >= 3:
        text = trimmed
    text = text.strip(" ,;:-–—")
    if text and text[0].islower() and not (len(text) > 1 and text[1].isupper()):
        text = text[0].upper() + text[1:]
    return text or quote


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens (letters, digits, inner apostrophes)."""
    return _TOKEN.findall(text.lower().replace("’", "'"))


def stem(word: str) -> str:
    """A very light stem: plural ``s`` removed (``bees`` → ``bee``, not ``class``)."""
    if len(word) > 4 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def content_words(text: str) -> list[str]:
    """Stemmed tokens of ``text`` that are not stop words or filler."""
    return [stem(t) for t in tokens(text) if t not in STOPWORDS and len(t) > 1]


def topic_words(text: str) -> list[str]:
    """:func:`content_words` less generic verbs, adjectives and nouns ("talk", "people",
    "great"): the words that say what a sentence is about."""
    return [
        stem(t) for t in tokens(text) if t not in STOPWORDS and t not in NOT_NOUNS and len(t) > 1
    ]


def density(text: str) -> float:
    """Share of a unit's tokens that are :func:`topic_words`."""
    toks = tokens(text)
    return len(topic_words(text)) / len(toks) if toks else 0.0


def is_question(text: str) -> bool:
    return text.rstrip('"”’)] ').endswith("?")


def is_social(cleaned: str) -> bool:
    """Greetings, thanks, welcomes and sign-offs."""
    return bool(_SOCIAL_START.match(cleaned) or _SOCIAL_ANY.search(cleaned))


_CUT_OFF = re.compile(r"\b\w+-(?=\s|$)")
_ANNOTATION = re.compile(
    r"\[(?:laughs?|chuckles?|laughter|inaudible|crosstalk|music|applause)\]", re.IGNORECASE
)
_REPEAT = re.compile(r"\b(\w+)\W{1,3}\1\b", re.IGNORECASE)


def disfluency(text: str) -> float:
    """Share of filler words, ``you know`` / ``I mean``, ``cuz`` and stutters ("I, I")."""
    toks = tokens(text)
    if not toks:
        return 1.0
    count = sum(1 for t in toks if t in FILLERS or t == "cuz")
    low = text.lower()
    count += low.count("you know") + low.count("i mean") + len(_REPEAT.findall(text))
    count += low.count("..") + low.count("…") + low.count("--") + len(_CUT_OFF.findall(text))
    count += 2 * len(_ANNOTATION.findall(text))
    return count / len(toks)


def ends_dangling(text: str) -> bool:
    """Whether ``text`` ends with a word no complete sentence ends with ("... a gig for.")."""
    last = text.rstrip(' .!?…"”’)]').rsplit(None, 1)[-1:]
    return bool(last) and last[0].lower().strip(",;:") in DANGLING


_STRONG_DANGLING = wordset(
    "a an the my your our their his her its and or but because which whose than of for with from by"
)


def ends_strongly_dangling(text: str) -> bool:
    """Whether ``text`` ends with an article, possessive, conjunction or preposition that
    cannot end a sentence, so the next unit continues it."""
    last = text.rstrip(' .!?…"”’)]').rsplit(None, 1)[-1:]
    return bool(last) and last[0].lower().strip(",;:") in _STRONG_DANGLING


_QUESTION_START = re.compile(
    r"^(?:how|what|why|where|when|who|which|should|do|does|did|is|are|can|could|would|will|"
    r"have|has)"
    r" (?:do|does|did|is|are|was|were|can|could|would|should|will|you|we|they|i|it|he|she)\b",
    re.IGNORECASE,
)


_ASKING = re.compile(
    r"\b(?:can|could|would|will|do|did) you (?:talk|tell|share|explain|describe|walk|say|give|"
    r"think|remember|recommend)\b",
    re.IGNORECASE,
)


def looks_like_question(text: str) -> bool:
    """An unpunctuated question ("should they get a piece of equity", "can you tell us …")."""
    return bool(_QUESTION_START.match(text) or _ASKING.search(text))


def has_number(text: str) -> bool:
    return bool(NUMERIC.search(text))


_CAPITAL = re.compile(r"(?<=[\s(\"“])[A-Z][a-zA-Z]+")
#: Capitalised words that are not names (sentence openers, pronouns, fillers).
NOT_NAMES = wordset(
    "I I'm I've I'd I'll OK Okay Yeah So And But The A An It This That We You He She They "
    "My Our Your Oh Um Uh Well Now Then If When What Why How Who"
)


def has_name_hint(text: str) -> bool:
    """Whether a capitalised word other than the first looks like a proper name."""
    return any(m.group(0) not in NOT_NAMES for m in _CAPITAL.finditer(text))


def word_count(text: str) -> int:
    return len(text.split())


def positive_int(value: object) -> int | None:
    """``value`` as a positive integer (an ``int`` or a string of digits), else ``None``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value > 0 else None
    if isinstance(value, str) and value.strip().isdigit():
        number = int(value.strip())
        return number if number > 0 else None
    return None
