"""The ``transcript.md`` line grammar: its one definition.

The writers (:mod:`arkai.formats.render` for timed sources, the chat renderer in
:mod:`arkai.sources.chats.common`) and every reader (:mod:`arkai.core.document`, search chunks,
topics, context packs, the builtin provider, the site) use these patterns and functions, so
they agree on what a line means.

A line of ``transcript.md`` is one of:

- **timed**: ``[HH:MM:SS] text`` or ``[HH:MM:SS] Speaker: text`` — hours 1–3 digits and a
  fraction (``[00:01:02.500]``, ``,500``) are accepted when reading; the writer emits
  ``HH:MM:SS``;
- **chat header**: ``### <role>`` or ``### <role> · <when>`` (role: a letter, then letters,
  digits, ``_`` or ``-``), opening one message of an AI conversation;
- **heading**: ``#`` to ``######`` then a space (or nothing);
- **page marker**: ``[p. N]`` alone on a line, before each page of a PDF;
- anything else: text (list items, quotes, table rows, code keep their Markdown).

A **speaker label** (:func:`speaker_of`) is one to four words and ``": "`` — the first word
upper-case in any script (``Émile``, ``Zoë``, ``O'Brien``), later ones not lower-case but for
name particles — after a timestamp, or at the start of an untimed line. The source parsers use
the same rule to find speakers in SRT, VTT and text cues.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "CHAT_HEADER_RE",
    "CHAT_ROLES",
    "HEADING_RE",
    "LIST_MARKER_RE",
    "NAME_PARTICLES",
    "PAGE_MARKER",
    "PAGE_MARKER_BYTES_RE",
    "PAGE_MARKER_RE",
    "SPEAKER_RE",
    "STAMP",
    "TIMESTAMP_BYTES_RE",
    "TIMESTAMP_RE",
    "Line",
    "chat_header",
    "format_chat_header",
    "format_page",
    "format_page_marker",
    "format_timed",
    "format_timestamp",
    "is_chat_header",
    "parse_line",
    "speaker_of",
    "strip_prefix",
    "timestamp_seconds",
]

STAMP = r"\[(\d{1,3}):(\d{2}):(\d{2})(?:[.,]\d+)?\]"
"""A timestamp anywhere (groups: hours, minutes, seconds), as a pattern string."""
TIMESTAMP_RE = re.compile("^" + STAMP + r"[ \t]*")
"""A timed line's timestamp (groups: hours, minutes, seconds) and the blanks after it."""
TIMESTAMP_BYTES_RE = re.compile(STAMP.encode("ascii"))
"""The same over bytes (unanchored: use ``.match(data, pos)`` at a line start)."""
SPEAKER_RE = re.compile(r"^([^\W\d_][\w'’.-]*(?: [\w'’.-]+){0,3}):(?:\s+|$)")
"""A speaker label candidate (group 1: the name); :func:`speaker_of` applies the rest."""
#: Lower-case words allowed inside a name (``Ludwig van Beethoven``).
NAME_PARTICLES = frozenset(
    {"al", "bin", "da", "de", "del", "der", "di", "du", "la", "le", "van", "von"}
)
CHAT_HEADER_RE = re.compile(r"^###[ \t]+([A-Za-z][\w-]*)(?:[ \t]+·[ \t]*(.*?))?[ \t]*$")
"""A chat message header (groups: role, when)."""
HEADING_RE = re.compile(r"^#{1,6}(?:[ \t]+|$)")
#: Roles that make a bare ``### <role>`` line a chat header (one with a time always is).
CHAT_ROLES = frozenset(
    {"user", "assistant", "system", "tool", "model", "human", "ai", "bot", "developer"}
)
PAGE_MARKER = r"\[p\. (\d{1,6})\]"
"""A PDF page marker (group: the page number), as a pattern string."""
#: A PDF page marker line, ``[p. N]`` (written by the PDF source before each page's lines).
PAGE_MARKER_RE = re.compile("^" + PAGE_MARKER + "$")
#: The same over bytes, every marker line of a whole transcript (multi-line).
PAGE_MARKER_BYTES_RE = re.compile(("^" + PAGE_MARKER + "$").encode("ascii"), re.MULTILINE)
LIST_MARKER_RE = re.compile(r"^(?:[-*+]|\d{1,9}[.)])[ \t]+")


@dataclass(frozen=True, slots=True)
class Line:
    """One parsed line of ``transcript.md``."""

    kind: str
    """``timed`` | ``chat_header`` | ``heading`` | ``page`` | ``text`` | ``blank``."""
    text: str
    """The content: after the timestamp and speaker label, the header's marks, or the line."""
    seconds: int | None = None
    """A timed line's start, whole seconds."""
    speaker: str | None = None
    role: str | None = None
    """A chat header's role (``human``, ``assistant``, …)."""
    when: str | None = None
    """A chat header's time text, as written."""


def timestamp_seconds(hours: str, minutes: str, seconds: str) -> int:
    return int(hours) * 3600 + int(minutes) * 60 + int(seconds)


def speaker_of(text: str) -> tuple[str | None, str]:
    """``(speaker, rest)`` when ``text`` opens with a speaker label, else ``(None, text)``.

    A label is one to four words and a colon: the first word starts with an upper-case letter
    (any script), later words are not lower-case unless they are digits or name particles
    (``van``, ``de``…), and it does not end with ``.`` or ``-`` — so ``Émile:`` and ``Ana
    Ruiz:`` are speakers, ``So basically:`` and ``Note that:`` are not."""
    m = SPEAKER_RE.match(text)
    if m is None:
        return None, text
    label = m.group(1)
    first, *others = label.split(" ")
    if not first[0].isupper() or label.endswith((".", "-")):
        return None, text
    if not all(w[0].isdigit() or w in NAME_PARTICLES or not w.islower() for w in others):
        return None, text
    return label, text[m.end() :]


def parse_line(line: str) -> Line:
    """What ``line`` (without its newline) is, by the grammar above."""
    if not line.strip():
        return Line("blank", "")
    m = TIMESTAMP_RE.match(line)
    if m is not None:
        speaker, text = speaker_of(line[m.end() :])
        return Line("timed", text, timestamp_seconds(*m.groups()), speaker)
    h = chat_header(line)
    if h is not None:
        return Line("chat_header", "", role=h[0], when=h[1])
    if HEADING_RE.match(line):
        return Line("heading", HEADING_RE.sub("", line, count=1))
    if PAGE_MARKER_RE.match(line):
        return Line("page", "")
    speaker, text = speaker_of(line)
    return Line("text", text, speaker=speaker)


def chat_header(line: str) -> tuple[str, str | None] | None:
    """``(role, when)`` when ``line`` is a chat message header, else None: ``### <role> · <when>``,
    or a bare ``### <role>`` whose role is one of :data:`CHAT_ROLES` (so a Markdown ``###
    Results`` heading in a note is not taken for a message)."""
    m = CHAT_HEADER_RE.match(line)
    if m is None or not (m.group(2) or m.group(1).lower() in CHAT_ROLES):
        return None
    return m.group(1), m.group(2) or None


def is_chat_header(line: str) -> bool:
    return chat_header(line) is not None


def strip_prefix(line: str) -> str:
    """The line's words alone: no timestamp, speaker label, header or heading marks."""
    return parse_line(line).text


def format_timestamp(seconds: float) -> str:
    """``HH:MM:SS`` for ``seconds`` (floored; negative counts as zero)."""
    whole = max(0, int(seconds))
    return f"{whole // 3600:02d}:{whole // 60 % 60:02d}:{whole % 60:02d}"


def format_timed(seconds: float, speaker: str | None, text: str) -> str:
    """A timed line as the writer emits it."""
    label = f"{speaker}: " if speaker else ""
    return f"[{format_timestamp(seconds)}] {label}{text}"


def format_page_marker(page: int) -> str:
    """A PDF page marker line."""
    return f"[p. {page}]"


def format_page(page: int) -> str:
    """A page as citations show it: ``p. 4``."""
    return f"p. {page}"


def format_chat_header(role: str, when: str | None) -> str:
    """A chat message header as the writer emits it."""
    return f"### {role} · {when}" if when else f"### {role}"
