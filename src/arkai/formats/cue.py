"""The parsed form of a source (cues) and the text clean-up every parser shares."""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from arkai.errors import SourceFormatError

#: Source formats that :func:`arkai.formats.parse_source` understands.
FORMATS = ("vtt", "srt", "ytjson", "txt", "md")


@dataclass(frozen=True, slots=True)
class Cue:
    """One piece of text, with the moment it is spoken when the source is timed."""

    start: float | None
    """Seconds from the start of the media (``>= 0``), or ``None`` for untimed text."""
    text: str
    """One line of text: never empty, no newlines, whitespace collapsed to single spaces, NFC."""
    speaker: str | None = None
    """The speaker where the source labels this cue (``<v Name>``, ``Name: ...``), else None."""


@dataclass(frozen=True, slots=True)
class ParsedSource:
    """A source file reduced to cues, ready for :func:`arkai.formats.render_transcript`."""

    format: str
    """One of :data:`FORMATS`."""
    cues: tuple[Cue, ...]
    """Cues in spoken order; for timed sources ``start`` never decreases."""
    timed: bool
    """True when every cue has a ``start``; False when none has."""
    title: str | None
    """A title found in the source itself (a Markdown file's first ``# heading``), else ``None``."""


_CONTROL_RE = re.compile(r"[\x00-\x08\x0e-\x1f\x7f\u200b\ufeff]")


def fix_surrogates(text: str) -> str:
    """Replace lone surrogates (legal in JSON, not encodable as UTF-8) with U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return text


def fix_surrogates_in(value: Any) -> Any:
    """Parsed JSON made writable: :func:`fix_surrogates` on every string and key, and NaN or an
    infinity (which a JSON file cannot hold) as null."""
    if isinstance(value, str):
        return fix_surrogates(value)
    if isinstance(value, list):
        return [fix_surrogates_in(v) for v in value]
    if isinstance(value, dict):
        return {fix_surrogates(str(k)): fix_surrogates_in(v) for k, v in value.items()}
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def clean_text(text: str) -> str:
    """NFC, control and zero-width characters dropped, lone surrogates replaced, whitespace
    collapsed, ends stripped."""
    text = _CONTROL_RE.sub("", fix_surrogates(text))
    if not text.isascii():
        text = unicodedata.normalize("NFC", text)
    return " ".join(text.split())


# A speaker label opening a caption line: a capitalised name of up to four words ("Dan",
# "Dan Ott", "Speaker 2", "Neil deGrasse Tyson", "Ana de la Cruz") and a colon. Lower-case
# words other than name particles keep "So here's the thing: ..." out.
# [H]H:MM:SS[.mmm] or MM:SS.mmm (VTT may leave out the hours, but then not the fraction).
_CLOCK_RE = re.compile(
    r"^(?:(\d+):(\d{2}):(\d{2})(?:[.,](\d{1,3}))?|(\d{1,2}):(\d{2})[.,](\d{1,3}))$"
)


def parse_clock(value: str) -> float | None:
    """``[H]H:MM:SS.mmm`` or ``MM:SS.mmm`` (``,`` for ``.`` too) in seconds; None if malformed."""
    m = _CLOCK_RE.match(value)
    if m is None:
        return None
    hours, minutes, seconds, frac, short_minutes, short_seconds, short_frac = m.groups()
    if hours is None:
        hours, minutes, seconds, frac = "0", short_minutes, short_seconds, short_frac
    if int(seconds) >= 60 or int(minutes) >= 60:
        return None
    total = int(hours) * 3600 + int(minutes) * 60 + int(seconds)
    if frac:
        total += int(frac) / 10 ** len(frac)
    return float(total)


def shorten(line: str, limit: int = 60) -> str:
    """``line`` cut to ``limit`` characters for an error message."""
    line = line.strip()
    return line if len(line) <= limit else line[: limit - 4] + " ..."


_TIMING_RE = re.compile(r"^\s*(\S+?)\s*-->\s*(\S+)(?:\s.*)?$")


def parse_timing(name: str, number: int, line: str, what: str) -> float:
    """Start time of a ``start --> end [settings]`` line; ``what`` names it in the error."""
    m = _TIMING_RE.match(line)
    start = end = None
    if m is not None:
        start, end = parse_clock(m.group(1)), parse_clock(m.group(2))
    if start is None or end is None:
        raise SourceFormatError(f"{name}: line {number}: bad {what} timing {shorten(line)!r}")
    return start
