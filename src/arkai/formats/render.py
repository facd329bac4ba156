"""The canonical ``transcript.md`` text of a parsed source.

Timed sources become lines ``[HH:MM:SS] text`` or ``[HH:MM:SS] Speaker: text``. Cues are merged
into whole sentences, and sentences into lines. A line ends after a sentence once it holds
:data:`MIN_LINE_CHARS` characters, and before a speaker change or before a sentence that would
take it past :data:`MAX_LINE_CHARS` characters or that starts :data:`MAX_LINE_SECONDS` or more
after the line. Only a sentence longer than :data:`MAX_LINE_CHARS` is broken: between cues,
under the same two limits (between words when one cue alone is too long). So unpunctuated
auto-captions, one endless sentence, get lines of at most about 30 s, and a sentence that fits
on a line is never split, which keeps quotes within one line. A line's time is its first cue's
start, floored to the second. An unlabelled cue keeps the speaker last named before it.

Untimed sources give one cue per line with a blank line between (Markdown list items, table
rows and fenced code stay on adjacent lines). The text ends with exactly one newline.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from arkai.core.grammar import format_timed
from arkai.errors import SourceFormatError
from arkai.formats.cue import Cue, ParsedSource

MIN_LINE_CHARS = 60
MAX_LINE_CHARS = 300
MAX_LINE_SECONDS = 30.0

_SENTENCE_END_RE = re.compile(r"[.?!…][\"'”’)\]]*$")
# Words whose final "." does not end a sentence.
_ABBREVIATIONS = frozenset(
    {"mr.", "mrs.", "ms.", "dr.", "prof.", "sr.", "jr.", "st.", "vs.", "e.g.", "i.e.", "cf."}
)
_INITIAL_RE = re.compile(r"^(?:[A-Z]\.)+$")
_MD_LIST_RE = re.compile(r"^(?:[-*+] |\d{1,9}[.)] )")
_FENCE_RE = re.compile(r"^(?:```|~~~)")


@dataclass(slots=True)
class _Piece:
    """Consecutive words of one cue inside one sentence."""

    start: float
    speaker: str | None
    text: str


def render_transcript(parsed: ParsedSource) -> str:
    """The canonical transcript text of ``parsed`` (deterministic; see the module doc)."""
    if parsed.timed:
        lines = list(_timed_lines(parsed.cues))
        return "\n".join(lines) + "\n" if lines else ""
    return _untimed_text(parsed)


def transcript_bytes(parsed: ParsedSource, name: object) -> bytes:
    """:func:`render_transcript` as UTF-8; no text at all is a :class:`SourceFormatError` that
    names the source (``name``)."""
    data = render_transcript(parsed).encode("utf-8")
    if not data.strip():
        raise SourceFormatError(f"{name}: no text found")
    return data


def _timed_lines(cues: tuple[Cue, ...]) -> Iterator[str]:
    line: list[_Piece] = []
    length = 0
    for sentence in _sentences(cues):
        size = sum(len(p.text) for p in sentence) + len(sentence) - 1
        if line and not _fits(line[0], length, sentence[0].speaker, sentence[0].start, size):
            yield _format_line(line)
            line, length = [], 0
        if line or size <= MAX_LINE_CHARS:
            line.extend(sentence)
            length += size + (1 if length else 0)
        else:
            # Too long for any line: break it between cues, an overlong cue between words.
            for piece in _split_long(sentence):
                if line and not _fits(line[0], length, piece.speaker, piece.start, len(piece.text)):
                    yield _format_line(line)
                    line, length = [], 0
                line.append(piece)
                length += len(piece.text) + (1 if length else 0)
        if length >= MIN_LINE_CHARS:
            yield _format_line(line)
            line, length = [], 0
    if line:
        yield _format_line(line)


def _fits(first: _Piece, length: int, speaker: str | None, start: float, size: int) -> bool:
    """Whether ``size`` more characters of ``speaker``, starting at time ``start``, may join a
    line that opens with ``first`` and holds ``length`` characters.
    """
    return (
        speaker == first.speaker
        and length + 1 + size <= MAX_LINE_CHARS
        and start - first.start < MAX_LINE_SECONDS
    )


def _sentences(cues: tuple[Cue, ...]) -> Iterator[list[_Piece]]:
    """Sentences as pieces of cues; a speaker change always ends a sentence."""
    words: list[tuple[str, float, str | None]] = []
    speaker: str | None = None
    for cue in cues:
        speaker = cue.speaker or speaker
        start = cue.start or 0.0
        words.extend((word, start, speaker) for word in cue.text.split(" "))
    sentence: list[_Piece] = []
    for i, (word, start, who) in enumerate(words):
        last = sentence[-1] if sentence else None
        if last is not None and last.start == start and last.speaker == who:
            last.text += " " + word
        else:
            sentence.append(_Piece(start, who, word))
        following = words[i + 1] if i + 1 < len(words) else None
        if following is None or following[2] != who or _ends_sentence(word, following[0]):
            yield sentence
            sentence = []


def _ends_sentence(word: str, following: str) -> bool:
    if _SENTENCE_END_RE.search(word) is None:
        return False
    bare = word.rstrip("\"'”’)]")
    if bare.lower() in _ABBREVIATIONS or _INITIAL_RE.match(bare):
        return False
    # "... wait? no ..." runs on; a sentence ends before a capital, digit, quote or bracket.
    first = following.lstrip("\"'“‘([¿¡")[:1]
    return not first.islower()


def _split_long(sentence: list[_Piece]) -> Iterator[_Piece]:
    for piece in sentence:
        if len(piece.text) <= MAX_LINE_CHARS:
            yield piece
            continue
        chunk: list[str] = []
        size = 0
        for word in piece.text.split(" "):
            if chunk and size + 1 + len(word) > MAX_LINE_CHARS:
                yield _Piece(piece.start, piece.speaker, " ".join(chunk))
                chunk, size = [], 0
            chunk.append(word)
            size += len(word) + (1 if size else 0)
        yield _Piece(piece.start, piece.speaker, " ".join(chunk))


def _format_line(line: list[_Piece]) -> str:
    first = line[0]
    return format_timed(first.start, first.speaker, " ".join(piece.text for piece in line))


def _untimed_text(parsed: ParsedSource) -> str:
    out: list[str] = []
    in_fence = False
    previous: str | None = None
    for cue in parsed.cues:
        text = cue.text
        if parsed.format == "md" and previous is not None:
            kind = _md_kind(text)
            adjacent = in_fence or (kind is not None and kind == _md_kind(previous))
            out.append("\n" if adjacent else "\n\n")
        elif previous is not None:
            out.append("\n\n")
        if parsed.format == "md" and _FENCE_RE.match(text):
            in_fence = not in_fence
        out.append(text)
        previous = text
    return "".join(out) + "\n" if out else ""


def _md_kind(line: str) -> str | None:
    """ "list" or "table" for Markdown lines that must stay adjacent to their neighbours."""
    if _MD_LIST_RE.match(line):
        return "list"
    if line.startswith("|"):
        return "table"
    return None
